// ONNX import: the model is parsed by protobuf into ONNX's own ModelProto (Debian's libonnx 1.12
// and libprotobuf), checked, and ONNX's shape inference (onnx::shape_inference::InferShapes,
// non-strict, with data propagation, for the supported op types) fills in the tensors' shapes;
// then each node is costed through GraphBuilder. Integer shape arithmetic (Shape -> Gather ->
// Concat -> Reshape ...) is folded from ONNX's propagated values; the importer's own folding and
// shape rules remain only where ONNX's inference gives nothing (ops it does not propagate values
// through, shapes downstream of ops without a schema, opsets newer than ONNX 1.12 infers).
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

/// Imports a serialized ModelProto. Malformed or inconsistent input gives an error (never a
/// crash, nothing printed): Errc::parse for a file that is not a valid ONNX model,
/// Errc::invalid_argument for missing shapes or dynamic dimensions without a value (the
/// message names the --dim to give), Errc::unsupported for op types outside
/// onnx_supported_ops() (all listed with counts) unless opt.fallback.
Result<Graph> import_onnx(std::string_view bytes, const std::string& name, const OnnxOptions& opt);
/// Reads and imports an .onnx file (up to protobuf's 2 GiB message limit; initializers in
/// external data files are fine: only their shapes are used).
Result<Graph> import_onnx_file(const std::string& path, const OnnxOptions& opt);

}  // namespace jouleprof::estimate
