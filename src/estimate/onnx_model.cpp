// Loading ONNX models for the importer (onnx.cpp): protobuf parsing with its logging captured,
// the checks that make a model safe for ONNX 1.12's shape inference, and the guarded schema
// registry that inference runs against.
#include "onnx_model.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/defs/tensor_proto_util.h>

#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <set>

#include "jouleprof/core/text.hpp"
#include "jouleprof/estimate/onnx.hpp"

namespace jouleprof::estimate::detail {
namespace {

using TP = onnx::TensorProto;

std::mutex& pb_mutex() {
  static std::mutex m;
  return m;
}
std::string& pb_last_log() {
  static std::string s;
  return s;
}
void pb_capture(google::protobuf::LogLevel, const char*, int, const std::string& msg) { pb_last_log() = msg; }

// ---- tensor checks (internal) ---------------------------------------------------------------------

// Bytes per element in raw_data; 0 for types without a fixed size (STRING, UNDEFINED).
int64_t elem_size(int t) {
  switch (t) {
    case TP::UINT8: case TP::INT8: case TP::BOOL: return 1;
    case TP::UINT16: case TP::INT16: case TP::FLOAT16: case TP::BFLOAT16: return 2;
    case TP::FLOAT: case TP::INT32: case TP::UINT32: return 4;
    case TP::INT64: case TP::DOUBLE: case TP::UINT64: case TP::COMPLEX64: return 8;
    case TP::COMPLEX128: return 16;
    default: return 0;
  }
}

// Values in the typed field that holds this data type (complex: two per element).
int64_t typed_count(const TP& t) {
  switch (t.data_type()) {
    case TP::FLOAT: return t.float_data_size();
    case TP::COMPLEX64: return t.float_data_size() / 2;
    case TP::INT32: case TP::INT16: case TP::INT8: case TP::UINT16: case TP::UINT8: case TP::BOOL:
    case TP::FLOAT16: case TP::BFLOAT16: return t.int32_data_size();
    case TP::INT64: return t.int64_data_size();
    case TP::STRING: return t.string_data_size();
    case TP::DOUBLE: return t.double_data_size();
    case TP::COMPLEX128: return t.double_data_size() / 2;
    case TP::UINT32: case TP::UINT64: return t.uint64_data_size();
    default: return 0;
  }
}

std::string dims_text(const TP& t) {
  std::string r = "[";
  for (int i = 0; i < t.dims_size(); ++i) r += (i ? "," : "") + std::to_string(t.dims(i));
  return r + "]";
}

// Element count of a tensor, or an error for negative or implausible dimensions.
Result<int64_t> tensor_numel(const TP& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > kMaxElements / d)) {
      return make_error(Errc::parse, "tensor '" + t.name() + "' has an invalid shape " + dims_text(t));
    }
    n *= d;
  }
  return n;
}

// ---- ONNX's operator schemas, guarded (internal) -----------------------------------------------
// ONNX 1.12's inference functions trust their node (fuzzing found: Shape's data propagator
// dereferences a missing input type, which a custom op followed by Shape gives; Conv/Pool divide
// by a zero stride; Scan walks malformed subgraphs). Shape inference therefore runs against
// this registry: ONNX's schemas for the op types the importer costs, each inference function
// behind checks of its node first, data propagation only when every input has a type. Other op
// types (control flow included) get no schema, as custom ops do: their shapes must be declared
// in the file.

// Sizes ONNX divides by (Conv/Pool output sizes) must be positive.
bool positive_sizes(const onnx::InferenceContext& ctx) {
  for (const char* k : {"strides", "dilations", "kernel_shape", "group"}) {
    const auto* a = ctx.getAttribute(k);
    if (!a) continue;
    if (a->has_i() && a->i() <= 0) return false;
    if (std::any_of(a->ints().begin(), a->ints().end(), [](int64_t v) { return v <= 0; })) return false;
  }
  return true;
}

class GuardedSchemas final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_version, const std::string& domain) const override {
    if (!(domain.empty() || domain == "ai.onnx") || !onnx_inferred(key)) return nullptr;
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Instance()->GetSchema(key, max_version, domain);
    if (!s) return nullptr;
    const std::lock_guard<std::mutex> lock(mutex_);
    auto& guarded = guarded_[s];
    if (!guarded) guarded = guard(*s);
    return guarded.get();
  }

 private:
  static std::unique_ptr<onnx::OpSchema> guard(const onnx::OpSchema& s) {
    auto g = std::make_unique<onnx::OpSchema>(s);
    const int min_in = s.min_input(), max_in = s.max_input(), min_out = s.min_output(), max_out = s.max_output();
    if (s.has_type_and_shape_inference_function()) {
      g->TypeAndShapeInferenceFunction([f = s.GetTypeAndShapeInferenceFunction(), min_in, max_in, min_out,
                                        max_out](onnx::InferenceContext& ctx) {
        const auto ins = static_cast<int>(ctx.getNumInputs()), outs = static_cast<int>(ctx.getNumOutputs());
        if (ins < min_in || ins > max_in || outs < min_out || outs > max_out || !positive_sizes(ctx)) {
          return;  // no inference: the outputs get no shape
        }
        f(ctx);
      });
    }
    if (s.has_data_propagation_function()) {
      g->PartialDataPropagationFunction([f = s.GetDataPropagationFunction()](onnx::DataPropagationContext& ctx) {
        for (std::size_t i = 0; i < ctx.getNumInputs(); ++i) {
          if (ctx.getInputType(i) == nullptr) return;
        }
        f(ctx);
      });
    }
    return g;
  }
  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

}  // namespace

std::string one_line(const std::string& s, std::size_t max) {
  std::string r;
  for (char c : s) {
    if (c == '\n' || c == '\r') {
      if (!r.empty() && r.back() != ' ') r += "; ";
    } else {
      r += c;
    }
  }
  while (!r.empty() && (r.back() == ' ' || r.back() == ';')) r.pop_back();
  if (r.size() > max) r = r.substr(0, max) + "...";
  return r;
}

std::string escape_controls(const std::string& s) {
  std::string r;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static const char* hex = "0123456789abcdef";
      r += "\\x";
      r += hex[u >> 4];
      r += hex[u & 15];
    } else {
      r += c;
    }
  }
  return r;
}

// ---- protobuf -----------------------------------------------------------------------------------
// LOG(FATAL) in protobuf throws FatalException (after the handler); parse_model catches it.
QuietProtobuf::QuietProtobuf() : lock_(pb_mutex()), previous_(google::protobuf::SetLogHandler(&pb_capture)) {
  pb_last_log().clear();
}
QuietProtobuf::~QuietProtobuf() { google::protobuf::SetLogHandler(previous_); }
const std::string& QuietProtobuf::last_message() { return pb_last_log(); }

Result<void> parse_model(std::string_view bytes, const std::string& name, onnx::ModelProto& model) {
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    return make_error(Errc::parse, name + ": " + std::to_string(bytes.size()) +
                                       " bytes, over protobuf's 2 GiB message limit; save the weights as external "
                                       "data (only their shapes are read)");
  }
  bool parsed = false;
  try {
    google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
    google::protobuf::io::CodedInputStream in(&raw);
    in.SetTotalBytesLimit(INT_MAX);  // the default in protobuf >= 3.11; older ones stopped at 64 MB
    parsed = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  } catch (const std::exception& e) {  // protobuf's FatalException
    return make_error(Errc::parse, name + ": malformed ONNX: " + one_line(e.what()));
  }
  if (!parsed) {
    const std::string& log = QuietProtobuf::last_message();
    return make_error(Errc::parse, name + ": malformed ONNX: not a valid protobuf ModelProto (truncated or not an ONNX file)" +
                                       (log.empty() ? "" : " (" + one_line(log) + ")"));
  }
  return {};
}

// ---- tensor and graph checks --------------------------------------------------------------------

// Whether a tensor carries its value inline (raw_data or the typed field, consistent with its
// shape). Tensors without data (weights stripped, or in external data files) are valid: only
// their shapes are used. raw_data whose length does not match the shape is an error: ONNX's
// ParseData copies raw_data without checking its length against the element size.
Result<bool> inline_value(const TP& t) {
  auto n = tensor_numel(t);
  if (!n) return n.error();
  if (t.data_location() == TP::EXTERNAL) return false;
  if (!t.raw_data().empty()) {
    const int64_t es = elem_size(t.data_type());
    const auto bytes = static_cast<int64_t>(t.raw_data().size());
    if (es == 0 || bytes != *n * es) {
      return make_error(Errc::parse, "tensor '" + t.name() + "' has " + std::to_string(bytes) +
                                         " bytes of raw_data; its shape " + dims_text(t) + " of data type " +
                                         std::to_string(t.data_type()) + " needs " + std::to_string(*n * es));
    }
    return true;
  }
  return typed_count(t) == *n && *n > 0;
}

// Checks every tensor ONNX's inference may read, in the graph and in its subgraphs (protobuf's
// recursion limit of 100 bounds the nesting).
Result<void> check_tensors(const onnx::GraphProto& g) {
  for (const TP& t : g.initializer()) {
    if (auto r = inline_value(t); !r) return r.error();
  }
  for (const auto& s : g.sparse_initializer()) {
    if (auto r = inline_value(s.values()); !r) return r.error();
    if (auto r = inline_value(s.indices()); !r) return r.error();
  }
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_t()) {
        if (auto r = inline_value(a.t()); !r) return r.error();
      }
      for (const TP& t : a.tensors()) {
        if (auto r = inline_value(t); !r) return r.error();
      }
      if (a.has_sparse_tensor()) {
        if (auto r = inline_value(a.sparse_tensor().values()); !r) return r.error();
        if (auto r = inline_value(a.sparse_tensor().indices()); !r) return r.error();
      }
      if (a.has_g()) {
        if (auto r = check_tensors(a.g()); !r) return r;
      }
      for (const auto& sub : a.graphs()) {
        if (auto r = check_tensors(sub); !r) return r;
      }
    }
  }
  return {};
}

std::string node_name(const onnx::NodeProto& n) {
  return clean_label(!n.name().empty() ? n.name() : n.output_size() == 0 ? n.op_type() : n.output(0));
}

// Every node input is defined before it is read (graph inputs, initializers, earlier nodes'
// outputs; subgraphs also see the enclosing scope). ONNX's inference dereferences the types of
// undefined inputs, so this is checked before it runs.
Result<void> check_topology(const onnx::GraphProto& g, std::unordered_set<std::string> scope) {
  for (const auto& v : g.input()) scope.insert(v.name());
  for (const TP& t : g.initializer()) scope.insert(t.name());
  for (const auto& s : g.sparse_initializer()) scope.insert(s.values().name());
  for (const auto& n : g.node()) {
    for (const std::string& i : n.input()) {
      if (!i.empty() && !scope.count(i)) {
        return make_error(Errc::invalid_argument, "node '" + node_name(n) + "' (" + n.op_type() + ") reads '" + i +
                                                      "', which no earlier node or initializer defines");
      }
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) {
        if (auto r = check_topology(a.g(), scope); !r) return r;
      }
      for (const auto& sub : a.graphs()) {
        if (auto r = check_topology(sub, scope); !r) return r;
      }
    }
    for (const std::string& o : n.output()) scope.insert(o);
  }
  return {};
}

// The values of a small int32/int64 tensor carried inline (shape arithmetic), through ONNX's
// ParseData.
std::optional<std::vector<int64_t>> int_values(const TP& t) {
  if (t.data_type() != TP::INT64 && t.data_type() != TP::INT32) return std::nullopt;
  auto n = tensor_numel(t);
  auto has = inline_value(t);
  if (!n || !has || !*has || *n > kMaxFoldElements) return std::nullopt;
  try {
    if (t.data_type() == TP::INT64) return onnx::ParseData<int64_t>(&t);
    const auto v = onnx::ParseData<int32_t>(&t);
    return std::vector<int64_t>(v.begin(), v.end());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// ---- schemas ------------------------------------------------------------------------------------

bool onnx_inferred(const std::string& op) {
  static const std::set<std::string> ops(onnx_supported_ops().begin(), onnx_supported_ops().end());
  return ops.count(op) > 0;
}

const onnx::ISchemaRegistry& guarded_schemas() {
  static const GuardedSchemas r;
  return r;
}

}  // namespace jouleprof::estimate::detail
