// Internals of the ONNX importer (onnx.cpp): parsing a ModelProto with protobuf, the checks that
// make a model safe to hand to ONNX 1.12's shape inference, and the guarded schema registry that
// inference runs against (docs/estimate.md, "ONNX").
#pragma once

#include <google/protobuf/stubs/logging.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "jouleprof/core/error.hpp"

namespace jouleprof::estimate::detail {

/// Tensors larger than this (elements) are implausible; keeps every size product inside int64.
inline constexpr int64_t kMaxElements = int64_t{1} << 48;
/// Integer tensors up to this many elements are read as values (shape arithmetic).
inline constexpr int64_t kMaxFoldElements = 4096;

/// ONNX's messages span lines ("==> Context: ..."): joined with "; ", cut at `max`.
std::string one_line(const std::string& s, std::size_t max = 400);
/// Names in a malformed file may hold any byte: control characters become \xNN.
std::string escape_controls(const std::string& s);

/// While alive, protobuf's log messages (stderr by default, process-wide) are captured instead
/// of printed, and other imports wait (the handler swap is not thread-safe in protobuf).
class QuietProtobuf {
 public:
  QuietProtobuf();
  ~QuietProtobuf();
  QuietProtobuf(const QuietProtobuf&) = delete;
  QuietProtobuf& operator=(const QuietProtobuf&) = delete;
  /// The last message protobuf logged while this object was alive ("" if none).
  static const std::string& last_message();

 private:
  std::lock_guard<std::mutex> lock_;
  google::protobuf::LogHandler* previous_;
};

/// Parses a serialized ModelProto (up to protobuf's 2 GiB message limit). A QuietProtobuf must
/// be alive. Errors are Errc::parse, prefixed with `name`.
Result<void> parse_model(std::string_view bytes, const std::string& name, onnx::ModelProto& model);

/// Whether a tensor carries its value inline, consistent with its shape: false for stripped
/// weights and external data (valid: only their shapes are used); an error for negative or
/// implausible dimensions, and for raw_data whose length does not match the shape.
Result<bool> inline_value(const onnx::TensorProto& t);
/// The values of a small int32/int64 tensor carried inline (through ONNX's ParseData).
std::optional<std::vector<int64_t>> int_values(const onnx::TensorProto& t);
/// inline_value() of every tensor in the graph and its subgraphs: what ONNX's inference may read.
Result<void> check_tensors(const onnx::GraphProto& g);
/// Every node input is defined before it is read (subgraphs also see the enclosing `scope`).
Result<void> check_topology(const onnx::GraphProto& g, std::unordered_set<std::string> scope = {});
/// A node's name, else its first output, else its op type.
std::string node_name(const onnx::NodeProto& n);

/// The op types ONNX's shape inference runs for: the importer's supported ops.
bool onnx_inferred(const std::string& op_type);
/// ONNX's schemas for onnx_inferred() op types, each behind checks (see onnx_model.cpp).
const onnx::ISchemaRegistry& guarded_schemas();

}  // namespace jouleprof::estimate::detail
