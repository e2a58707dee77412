// ONNX import: a self-contained protobuf wire-format reader (no libprotobuf/libonnx needed)
// for ModelProto -> GraphProto -> nodes, initializers and value_info, then shape inference and
// costing through GraphBuilder. Shapes declared in value_info (e.g. from onnx.shape_inference)
// are used where our own inference needs values it cannot see.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "jouleprof/estimate/graph.hpp"

namespace jouleprof::estimate {

struct OnnxOptions {
  DType dtype = DType::bf16;            ///< precision the float tensors are costed at
  int64_t batch = 1;                    ///< unused unless a dim is named in dims
  std::map<std::string, int64_t> dims;  ///< values of dynamic dimensions (dim_param names)
  bool fallback = false;  ///< unsupported ops: estimate as pointwise (true) or refuse (false)
};

/// The op types the importer understands.
const std::vector<std::string>& onnx_supported_ops();

Result<Graph> import_onnx(std::string_view bytes, const std::string& name, const OnnxOptions& opt);
Result<Graph> import_onnx_file(const std::string& path, const OnnxOptions& opt);

namespace detail {
/// Minimal protobuf writer used by the tests (and fuzzers) to build ONNX models.
class PbWriter {
 public:
  void varint(uint32_t field, uint64_t v);
  void bytes(uint32_t field, std::string_view s);
  void fixed32(uint32_t field, uint32_t v);
  void message(uint32_t field, const PbWriter& m) { bytes(field, m.data()); }
  void packed_varints(uint32_t field, const std::vector<int64_t>& v);
  const std::string& data() const { return buf_; }

 private:
  void raw_varint(uint64_t v);
  std::string buf_;
};
}  // namespace detail

}  // namespace jouleprof::estimate
