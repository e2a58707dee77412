// ONNX import through Debian's libonnx (1.12) and libprotobuf: protobuf parses the ModelProto,
// the tensors and wiring ONNX will read are checked (onnx_model.cpp), ONNX's shape inference
// (with data propagation) fills in the shapes and the values of integer shape arithmetic, and
// every node is costed through GraphBuilder (docs/estimate.md, "ONNX").
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/estimate/onnx.hpp"

#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <unordered_map>

#include "jouleprof/core/suggest.hpp"
#include "onnx_model.hpp"

namespace jouleprof::estimate {
namespace {

using TP = onnx::TensorProto;
using detail::check_tensors;
using detail::check_topology;
using detail::escape_controls;
using detail::guarded_schemas;
using detail::inline_value;
using detail::int_values;
using detail::kMaxElements;
using detail::kMaxFoldElements;
using detail::node_name;
using detail::one_line;
using detail::onnx_inferred;

// ---- import -------------------------------------------------------------------------------------

DType dtype_of(int onnx_type, DType float_as) {
  switch (onnx_type) {
    case TP::INT32: return DType::i32;
    case TP::INT64: return DType::i64;
    case TP::BOOL: return DType::boolean;
    case TP::UINT8: case TP::INT8: return DType::i8;
    default: return float_as;
  }
}

const std::set<std::string>& unary_ops() {
  static const std::set<std::string> s = {"Relu", "Clip", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Neg", "Abs",
                                          "Reciprocal", "HardSigmoid", "HardSwish", "Gelu", "LeakyRelu", "Floor",
                                          "Ceil", "Not", "Sin", "Cos", "Softplus", "Elu", "Selu", "Round", "Sign"};
  return s;
}
const std::set<std::string>& binary_ops() {
  static const std::set<std::string> s = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater",
                                          "Mod", "And", "Or", "LessOrEqual", "GreaterOrEqual", "PRelu"};
  return s;
}
const std::set<std::string>& transcendental_ops() {
  static const std::set<std::string> s = {"Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Gelu", "Sin", "Cos",
                                          "Softplus", "Elu", "Selu", "Pow", "HardSwish"};
  return s;
}

// A node with its attributes by name.
struct Node {
  const onnx::NodeProto& p;
  std::unordered_map<std::string, const onnx::AttributeProto*> attrs;
  explicit Node(const onnx::NodeProto& n) : p(n) {
    for (const auto& a : n.attribute()) attrs[a.name()] = &a;
  }
  const std::string& type() const { return p.op_type(); }
  std::size_t n_in() const { return static_cast<std::size_t>(p.input_size()); }
  const std::string& input(std::size_t i) const { return p.input(static_cast<int>(i)); }
  const onnx::AttributeProto* attr(const char* k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? nullptr : it->second;
  }
};

class Importer {
 public:
  Importer(onnx::ModelProto& m, const OnnxOptions& opt, const std::string& file, const std::string& name)
      : m_(m), g_(*m.mutable_graph()), opt_(opt), file_(file), b_(name, opt.dtype) {}

  Result<Graph> run() {
    if (auto r = check_opset(); !r) return r.error();
    if (auto r = substitute_dims(); !r) return r.error();
    // Initializers: weights (their values only matter for small integer tensors).
    std::set<std::string> init_names;
    for (const TP& t : g_.initializer()) {
      init_names.insert(t.name());
      if (auto v = int_values(t)) consts_[t.name()] = std::move(*v);
      if (std::any_of(t.dims().begin(), t.dims().end(), [](int64_t d) { return d <= 0; })) continue;  // empty/optional
      ids_[t.name()] = b_.weight(clean_label(t.name()), Shape(t.dims().begin(), t.dims().end()), dtype_of(t.data_type(), opt_.dtype));
    }
    const int n_inputs = g_.input_size();  // before infer() adds the value-less initializers
    for (int i = 0; i < n_inputs; ++i) {
      const onnx::ValueInfoProto& v = g_.input(i);
      if (init_names.count(v.name())) continue;
      auto s = resolve(v, true);
      if (!s) return s.error();
      ids_[v.name()] = b_.input(clean_label(v.name()), *s, dtype_of(v.type().tensor_type().elem_type(), opt_.dtype));
    }
    if (auto r = infer(); !r) return r.error();
    for (const auto& v : g_.value_info()) hints_[v.name()] = &v;
    for (const auto& v : g_.output()) hints_[v.name()] = &v;
    for (const auto& np : g_.node()) {
      const Node n(np);
      if (auto r = node(n); !r) return r.error();
      if (!b_.ok()) return *b_.error();
      if (auto r = agrees_with_onnx(n); !r) return r.error();
    }
    if (!unsupported_.empty()) {
      std::string list;
      for (const auto& [op, count] : unsupported_) list += (list.empty() ? "" : ", ") + op + " (" + std::to_string(count) + ")";
      return make_error(Errc::unsupported, b_.graph().name + ": unsupported ONNX ops: " + list +
                                               "; rerun with --onnx-unsupported elementwise to estimate them as pointwise "
                                               "ops on their first input");
    }
    for (const auto& v : g_.output()) {
      auto it = ids_.find(v.name());
      if (it != ids_.end()) b_.output(it->second);
    }
    return b_.finish();
  }

 private:
  // ---- model-level steps ----

  // ONNX's schemas resolve an op at the newest version <= the model's opset; for an opset newer
  // than this ONNX knows, they would be silently older ones, so its inference is not run and only
  // shapes declared in the file (and our own fallbacks) are used.
  Result<void> check_opset() {
    const auto& range = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN);
    int64_t version = -1;
    for (const auto& o : m_.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") version = o.version();
    }
    const bool default_domain_nodes = std::any_of(g_.node().begin(), g_.node().end(), [](const onnx::NodeProto& n) {
      return n.domain().empty() || n.domain() == "ai.onnx";
    });
    if (version < 0 && default_domain_nodes) {
      return make_error(Errc::parse, file_ + ": not a valid ONNX model: it imports no ai.onnx opset (opset_import)");
    }
    if (version >= 0 && version < range.first) {
      return make_error(Errc::parse, file_ + ": not a valid ONNX model: ai.onnx opset " + std::to_string(version));
    }
    if (version > range.second) {
      infer_ = false;
      no_inference_ = "the model imports ai.onnx opset " + std::to_string(version) + ", newer than ONNX " +
                      onnx::LAST_RELEASE_VERSION + " infers (opset <= " + std::to_string(range.second) +
                      "); re-export with opset_version=" + std::to_string(range.second) +
                      " or store inferred shapes in the file";
    }
    return {};
  }

  // --dim NAME=VALUE: dynamic dimensions get their values before ONNX's inference runs, so
  // every shape it infers is static.
  // A --dim naming no dynamic dimension of the model is refused (a typo would silently
  // leave the default in place).
  Result<void> substitute_dims() {
    std::set<std::string> seen;
    auto fix = [&](onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
        if (!d.has_dim_param()) continue;
        seen.insert(d.dim_param());
        auto it = opt_.dims.find(d.dim_param());
        if (it != opt_.dims.end() && it->second > 0) d.set_dim_value(it->second);
      }
    };
    for (auto& v : *g_.mutable_input()) fix(v);
    for (auto& v : *g_.mutable_output()) fix(v);
    for (auto& v : *g_.mutable_value_info()) fix(v);
    for (const auto& [name, value] : opt_.dims) {
      if (seen.count(name) != 0) continue;
      std::string have;
      for (const auto& n : seen) have += (have.empty() ? "" : ", ") + n;
      return make_error(Errc::invalid_argument,
                        "--dim " + name + ": " + file_ + " has no dynamic dimension named '" + name + "'" +
                            did_you_mean(name, std::vector<std::string>(seen.begin(), seen.end())) +
                            (have.empty() ? " (it has none)" : " (it has: " + have + ")"));
    }
    return {};
  }

  // ONNX shape inference, non-strict (ops without a schema, or whose inference fails, just get
  // no shape), with data propagation (values through the opset 13-15 Shape/Size/Gather/Concat/
  // Slice/Squeeze/Unsqueeze/Cast/Add/Sub/Mul). Initializers without an inline value (stripped
  // weights, external data) are given to it as typed inputs: it needs their shapes, and must
  // not try to read their data. Before IR version 4 initializers were also graph inputs, and
  // ONNX only looks for them there.
  Result<void> infer() {
    if (!infer_) return {};
    std::set<std::string> input_names;
    for (const auto& v : g_.input()) input_names.insert(v.name());
    auto add_input = [&](const TP& t) {
      onnx::ValueInfoProto* v = g_.add_input();
      v->set_name(t.name());
      auto* tt = v->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(t.data_type());
      auto* shape = tt->mutable_shape();
      for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
    };
    google::protobuf::RepeatedPtrField<TP> keep;
    for (TP& t : *g_.mutable_initializer()) {
      const auto has_value = inline_value(t);  // checked by check_tensors: no error here
      if (has_value && *has_value) {
        if (m_.ir_version() < 4 && !input_names.count(t.name())) add_input(t);
        keep.Add(std::move(t));
      } else if (!input_names.count(t.name())) {
        add_input(t);
      }
    }
    g_.mutable_initializer()->Swap(&keep);
    try {
      const onnx::ShapeInferenceOptions o(/*check_type=*/false, /*strict_mode=*/0, /*data_prop=*/true);
      onnx::shape_inference::InferShapes(m_, &guarded_schemas(), o, &propagated_);
    } catch (const std::exception& e) {
      return make_error(Errc::parse, file_ + ": ONNX shape inference failed: " + one_line(e.what()));
    }
    return {};
  }

  // ---- shapes ----

  // A declared shape; for graph inputs an unresolved dim is an error, for hints it just makes
  // the hint unusable.
  Result<Shape> resolve(const onnx::ValueInfoProto& v, bool required) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) {
      return make_error(Errc::invalid_argument, "input '" + v.name() + "' has no shape; export the model with input shapes");
    }
    Shape s;
    int64_t n = 1;
    const auto& dims = v.type().tensor_type().shape().dim();
    for (int i = 0; i < dims.size(); ++i) {
      const auto& d = dims[i];
      if (d.has_dim_value() && d.dim_value() > 0) {
        if (n > kMaxElements / d.dim_value()) {
          return make_error(Errc::parse, "'" + v.name() + "' has an implausible shape (over 2^48 elements)");
        }
        n *= d.dim_value();
        s.push_back(d.dim_value());
        continue;
      }
      if (required && d.has_dim_param() && !d.dim_param().empty()) {
        return make_error(Errc::invalid_argument, "input '" + v.name() + "' dimension " + std::to_string(i) +
                                                      " is dynamic ('" + d.dim_param() + "'); give --dim " + d.dim_param() +
                                                      "=VALUE");
      }
      if (required) {
        return make_error(Errc::invalid_argument, "input '" + v.name() + "' dimension " + std::to_string(i) +
                                                      " is dynamic and unnamed; export the model with static shapes");
      }
      return make_error(Errc::invalid_argument, "unresolved");
    }
    return s;
  }

  // The shape ONNX inferred (or the file declared) for a tensor, when fully static.
  std::optional<Shape> hint(const std::string& name) {
    auto it = hints_.find(name);
    if (it == hints_.end()) return std::nullopt;
    auto s = resolve(*it->second, false);
    if (!s) return std::nullopt;
    return *s;
  }

  // The value ONNX's data propagation computed for an integer tensor, when fully static.
  std::optional<std::vector<int64_t>> propagated(const std::string& name) const {
    auto it = propagated_.find(name);
    if (it == propagated_.end() || it->second.dim_size() > kMaxFoldElements) return std::nullopt;
    std::vector<int64_t> v;
    for (const auto& d : it->second.dim()) {
      if (!d.has_dim_value()) return std::nullopt;
      v.push_back(d.dim_value());
    }
    return v;
  }

  // GraphBuilder derives the shapes of the ops it costs from their inputs; where ONNX inferred
  // one too, they must agree (the costs would be wrong otherwise).
  Result<void> agrees_with_onnx(const Node& n) {
    if (n.p.output_size() == 0 || consts_.count(n.p.output(0))) return {};
    auto it = ids_.find(n.p.output(0));
    if (it == ids_.end()) return {};
    const auto h = hint(n.p.output(0));
    const Shape& ours = b_.tensor(it->second).shape;
    if (!h || numel(*h) == numel(ours)) return {};
    return make_error(Errc::parse, "node '" + nm(n) + "' (" + n.type() + "): its output shape " + to_string(ours) +
                                       " disagrees with the shape " + to_string(*h) +
                                       " that the file declares or ONNX shape inference gives");
  }

  // ---- helpers ----

  int in(const Node& n, std::size_t i) {
    if (i >= n.n_in() || n.input(i).empty()) return -1;
    auto it = ids_.find(n.input(i));
    return it == ids_.end() ? -1 : it->second;
  }
  const std::vector<int64_t>* cin(const Node& n, std::size_t i) {
    if (i >= n.n_in()) return nullptr;
    auto it = consts_.find(n.input(i));
    return it == consts_.end() ? nullptr : &it->second;
  }
  int64_t attr_i(const Node& n, const char* k, int64_t def) {
    const auto* a = n.attr(k);
    return a ? a->i() : def;
  }
  std::vector<int64_t> attr_ints(const Node& n, const char* k) {
    const auto* a = n.attr(k);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }
  std::string nm(const Node& n) { return node_name(n.p); }
  void set_out(const Node& n, int t) {
    if (n.p.output_size() > 0 && t >= 0) ids_[n.p.output(0)] = t;
  }

  // An op we only know the output shape of (from ONNX's inference, or `known` from our own
  // fallback): cost as pointwise over the output.
  Result<void> by_hint(const Node& n, OpClass cls, double flops_per_elem, std::optional<Shape> known = std::nullopt) {
    auto s = known ? known : hint(n.p.output_size() == 0 ? "" : n.p.output(0));
    if (!s) {
      const std::string why =
          !infer_ ? no_inference_
          : !onnx_inferred(n.type())
              ? "jouleprof runs ONNX's shape inference only for the op types it supports; store inferred shapes in "
                "the file (onnx.shape_inference.infer_shapes)"
              : "ONNX's shape inference gives none (an input shape is unknown, or its inference failed)";
      return make_error(Errc::invalid_argument,
                        "node '" + nm(n) + "' (" + n.type() + "): the file declares no output shape, and " + why);
    }
    Op op;
    op.name = nm(n);
    op.type = n.type();
    op.cls = cls;
    for (std::size_t i = 0; i < n.n_in(); ++i) {
      const int t = in(n, i);
      if (t >= 0) op.inputs.push_back(t);
    }
    const DType dt = op.inputs.empty() ? opt_.dtype : b_.tensor(op.inputs[0]).dtype;
    const int o = b_.new_tensor(op.name + ".out", *s, dt);
    if (o < 0) return *b_.error();
    op.outputs = {o};
    op.vector_flops = flops_per_elem * static_cast<double>(numel(*s));
    if (cls == OpClass::view && !op.inputs.empty()) b_.graph().tensors[static_cast<std::size_t>(o)].alias_of = op.inputs[0];
    b_.add_op(std::move(op));
    set_out(n, o);
    return {};
  }

  // Integer shape arithmetic: a node whose value is known costs nothing (it runs on the host or
  // is folded by the exporter) and becomes a small constant.
  bool fold(const Node& n) {
    if (n.p.output_size() != 1) return false;
    std::vector<int64_t> out;
    if (auto v = propagated(n.p.output(0))) {
      out = std::move(*v);  // ONNX's data propagation
    } else if (!fold_fallback(n, out)) {
      return false;
    }
    const std::string& name = n.p.output(0);
    const int w = b_.weight(name, Shape{std::max<int64_t>(1, static_cast<int64_t>(out.size()))}, DType::i64);
    consts_[name] = std::move(out);
    ids_[name] = w;
    return true;
  }

  // Our own folding, only where ONNX's data propagation gives no value: ops it does not
  // propagate (Constant value_ints/value_int, ConstantOfShape, Where, Equal, Div, Mod,
  // Identity, Reshape/Flatten of a shape vector, and every op below opset 13), and inputs whose
  // shapes it could not infer (downstream of ops without a schema, or when its inference does
  // not run).
  bool fold_fallback(const Node& n, std::vector<int64_t>& out) {
    const std::string& t = n.type();
    if (t == "Shape") {
      const int x = in(n, 0);
      if (x < 0) return false;
      out = b_.tensor(x).shape;
      const auto r = static_cast<int64_t>(out.size());
      int64_t s = attr_i(n, "start", 0), e = attr_i(n, "end", r);
      s = std::clamp(s < 0 ? s + r : s, int64_t{0}, r);
      e = std::clamp(e < 0 ? e + r : e, int64_t{0}, r);
      out = std::vector<int64_t>(out.begin() + s, out.begin() + std::max(s, e));
      return true;
    }
    if (t == "Size") {
      const int x = in(n, 0);
      if (x < 0) return false;
      out = {numel(b_.tensor(x).shape)};
      return true;
    }
    if (t == "Constant") {
      if (const auto* a = n.attr("value"); a && a->has_t()) {
        auto v = int_values(a->t());
        if (!v) return false;
        out = std::move(*v);
      } else if ((a = n.attr("value_ints"))) {
        out.assign(a->ints().begin(), a->ints().end());
      } else if ((a = n.attr("value_int"))) {
        out = {a->i()};
      } else {
        return false;
      }
      return true;
    }
    for (std::size_t i = 0; i < n.n_in(); ++i) {
      if (!n.input(i).empty() && !cin(n, i)) return false;
    }
    if (n.n_in() == 0 || !cin(n, 0)) return false;
    const auto& a = *cin(n, 0);
    if (t == "Identity" || t == "Cast" || t == "Unsqueeze" || t == "Squeeze" || t == "Reshape" || t == "Flatten") {
      out = a;
    } else if (t == "Concat") {
      for (std::size_t i = 0; i < n.n_in(); ++i) {
        if (const auto* c = cin(n, i)) out.insert(out.end(), c->begin(), c->end());
      }
    } else if (t == "Gather") {
      const auto* idx = cin(n, 1);
      if (!idx) return false;
      for (int64_t k : *idx) {
        const int64_t j = k < 0 ? k + static_cast<int64_t>(a.size()) : k;
        if (j < 0 || j >= static_cast<int64_t>(a.size())) return false;
        out.push_back(a[static_cast<std::size_t>(j)]);
      }
    } else if (t == "ConstantOfShape") {
      int64_t count = 1;
      for (int64_t d : a) {
        if (d < 0 || d > kMaxFoldElements) return false;
        count *= d;
        if (count > kMaxFoldElements) return false;
      }
      int64_t v = 0;
      if (const auto* val = n.attr("value"); val && val->has_t()) {
        auto iv = int_values(val->t());
        if (!iv || iv->empty()) return false;  // a float fill: not shape arithmetic
        v = (*iv)[0];
      }
      out.assign(static_cast<std::size_t>(count), v);
    } else if (t == "Where") {
      const auto *p1 = cin(n, 1), *p2 = cin(n, 2);
      if (!p1 || !p2 || a.empty() || p1->empty() || p2->empty()) return false;
      const std::size_t len = std::max({a.size(), p1->size(), p2->size()});
      for (std::size_t i = 0; i < len; ++i) {
        out.push_back(a[i % a.size()] ? (*p1)[i % p1->size()] : (*p2)[i % p2->size()]);
      }
    } else if (t == "Add" || t == "Sub" || t == "Mul" || t == "Div" || t == "Mod" || t == "Equal") {
      const auto* bb = cin(n, 1);
      if (!bb || bb->empty() || a.empty()) return false;
      const std::size_t len = std::max(a.size(), bb->size());
      for (std::size_t i = 0; i < len; ++i) {
        const int64_t x = a[a.size() == 1 ? 0 : i % a.size()], y = (*bb)[bb->size() == 1 ? 0 : i % bb->size()];
        if ((t == "Div" || t == "Mod") && (y == 0 || (x == INT64_MIN && y == -1))) return false;
        int64_t r = 0;
        if (t == "Add" ? __builtin_add_overflow(x, y, &r)
            : t == "Sub" ? __builtin_sub_overflow(x, y, &r)
            : t == "Mul" ? __builtin_mul_overflow(x, y, &r)
                         : false) {
          return false;
        }
        out.push_back(t == "Div"   ? x / y
                      : t == "Mod" ? x % y
                      : t == "Equal" ? static_cast<int64_t>(x == y)
                                     : r);
      }
    } else if (t == "Slice") {
      const auto *st = cin(n, 1), *en = cin(n, 2);
      if (!st || !en || st->empty() || en->empty()) return false;
      const auto len = static_cast<int64_t>(a.size());
      int64_t s = (*st)[0], e = (*en)[0];
      s = std::clamp(s < 0 ? s + len : s, int64_t{0}, len);
      e = std::clamp(e < 0 ? e + len : e, int64_t{0}, len);
      out = std::vector<int64_t>(a.begin() + s, a.begin() + std::max(s, e));
    } else {
      return false;
    }
    return true;
  }

  // A view whose output shape comes from ONNX's inference where it has one; our own rule
  // (`fallback`) only where it has none.
  Result<void> view(const Node& n, const std::string& name, int x, const std::optional<Shape>& fallback) {
    if (auto h = hint(n.p.output(0))) {
      set_out(n, b_.reshape(name, x, *h));
      return {};
    }
    if (fallback) {
      set_out(n, b_.reshape(name, x, *fallback));
      return {};
    }
    return by_hint(n, OpClass::view, 0);
  }

  // Squeeze/Unsqueeze by their axes (attribute before opset 13, constant input since): the
  // fallback for when ONNX has no output shape.
  Result<std::optional<Shape>> squeeze_shape(const Node& n, const std::string& name, int x) {
    auto axes = attr_ints(n, "axes");
    if (axes.empty() && cin(n, 1)) axes = *cin(n, 1);
    Shape s = b_.tensor(x).shape;
    if (n.type() == "Squeeze") {
      Shape o;
      for (std::size_t i = 0; i < s.size(); ++i) {
        const bool drop = axes.empty() ? s[i] == 1 : std::any_of(axes.begin(), axes.end(), [&](int64_t a) {
          return (a < 0 ? a + static_cast<int64_t>(s.size()) : a) == static_cast<int64_t>(i);
        });
        if (!drop) o.push_back(s[i]);
      }
      return std::optional<Shape>(o);
    }
    const auto r = static_cast<int64_t>(s.size() + axes.size());
    std::vector<int64_t> norm;
    for (int64_t a : axes) norm.push_back(a < 0 ? a + r : a);
    std::sort(norm.begin(), norm.end());
    for (int64_t a : norm) {
      if (a < 0 || a > static_cast<int64_t>(s.size())) {
        return make_error(Errc::invalid_argument, "node '" + name + "': Unsqueeze axis out of range");
      }
      s.insert(s.begin() + a, 1);
    }
    return std::optional<Shape>(s);
  }

  Result<void> node(const Node& n) {
    if (auto r = check_inputs(n); !r) return r;
    if (n.p.output_size() == 0) return {};
    if (fold(n)) return {};
    const std::string name = nm(n);
    const int x = in(n, 0);
    if (auto r = compute_op(n, name, x)) return *r;
    if (auto r = shape_op(n, name, x)) return *r;
    return unsupported(n, x);
  }

  // Every input comes from an earlier node or an initializer.
  Result<void> check_inputs(const Node& n) {
    const std::string& t = n.type();
    for (std::size_t i = 0; i < n.n_in(); ++i) {
      if (!n.input(i).empty() && !ids_.count(n.input(i)) && !consts_.count(n.input(i))) {
        return make_error(Errc::invalid_argument, "node '" + nm(n) + "' (" + t + ") reads '" + n.input(i) +
                                                      "', which no earlier node or initializer defines");
      }
    }
    return {};
  }

  // Nodes that compute: a graph op of their own (nullopt: not one of them).
  std::optional<Result<void>> compute_op(const Node& n, const std::string& name, int x) {
    const std::string& t = n.type();
    if (t == "Constant") {  // a float constant: a weight of the declared shape
      Shape s{1};
      if (const auto* a = n.attr("value"); a && a->has_t() && a->t().dims_size() > 0) {
        s.assign(a->t().dims().begin(), a->t().dims().end());
      }
      set_out(n, b_.weight(n.p.output(0), s));
      return Result<void>{};
    }
    if (t == "Conv") return conv(n, name, x);
    if (t == "MatMul") {
      set_out(n, b_.matmul(name, x, in(n, 1)));
      return Result<void>{};
    }
    if (t == "Gemm") return gemm(n, name, x);
    if (unary_ops().count(t)) {
      const bool tr = transcendental_ops().count(t) > 0;
      set_out(n, b_.unary(name, t, x, tr ? 4 : 1, tr ? 1 : 0));
      return Result<void>{};
    }
    if (binary_ops().count(t)) {
      set_out(n, b_.binary(name, t, x, in(n, 1)));
      return Result<void>{};
    }
    if (t == "Cast") {
      set_out(n, b_.cast(name, x, dtype_of(static_cast<int>(attr_i(n, "to", TP::FLOAT)), opt_.dtype)));
      return Result<void>{};
    }
    if (t == "Identity" || t == "Dropout") {
      set_out(n, x);
      return Result<void>{};
    }
    if (t == "BatchNormalization") {
      set_out(n, b_.batchnorm(name, x));
      return Result<void>{};
    }
    if (t == "LayerNormalization") {
      set_out(n, b_.layernorm(name, x, in(n, 2) >= 0));
      return Result<void>{};
    }
    if (t == "Softmax" || t == "LogSoftmax") {
      set_out(n, b_.softmax(name, x));
      return Result<void>{};
    }
    if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
      set_out(n, b_.global_avg_pool(name, x));
      return Result<void>{};
    }
    if (t == "MaxPool" || t == "AveragePool") {
      auto k = attr_ints(n, "kernel_shape");
      auto s = attr_ints(n, "strides");
      auto p = attr_ints(n, "pads");
      if (s.empty()) s = {1, 1};
      if (p.empty()) p = {0, 0, 0, 0};
      set_out(n, b_.pool2d_ex(name, t, x, k, s, p, attr_i(n, "ceil_mode", 0) != 0));
      return Result<void>{};
    }
    if (t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax" || t == "ReduceMin") {
      auto axes = attr_ints(n, "axes");
      if (axes.empty() && cin(n, 1)) axes = *cin(n, 1);
      set_out(n, b_.reduce(name, t, x, axes, attr_i(n, "keepdims", 1) != 0));
      return Result<void>{};
    }
    return std::nullopt;
  }

  Result<void> conv(const Node& n, const std::string& name, int x) {
    const int w = in(n, 1);
    if (w < 0) return make_error(Errc::invalid_argument, "node '" + name + "': Conv weight missing");
    auto pads = attr_ints(n, "pads");
    if (pads.empty()) pads = {0, 0, 0, 0};
    auto strides = attr_ints(n, "strides");
    if (strides.empty()) strides = {1, 1};
    auto dil = attr_ints(n, "dilations");
    if (dil.empty()) dil = {1, 1};
    const auto* ap = n.attr("auto_pad");
    const std::string autopad = ap ? ap->s() : "";
    if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {  // pads from ONNX's output shape
      const auto h = hint(n.p.output(0));
      if (h && x >= 0 && h->size() == 4 && b_.tensor(x).shape.size() == 4 && b_.tensor(w).shape.size() == 4 &&
          strides.size() >= 2 && dil.size() >= 2 && pads.size() >= 4) {
        for (std::size_t d = 0; d < 2; ++d) {
          const int64_t ins = b_.tensor(x).shape[2 + d], k = b_.tensor(w).shape[2 + d];
          const int64_t total = std::max<int64_t>(0, ((*h)[2 + d] - 1) * strides[d] + (k - 1) * dil[d] + 1 - ins);
          pads[d] = total / 2;
          pads[d + 2] = total - total / 2;
        }
      }
    }
    set_out(n, b_.conv2d_w(name, x, w, in(n, 2), strides, pads, dil, attr_i(n, "group", 1)));
    return {};
  }

  Result<void> gemm(const Node& n, const std::string& name, int x) {
    int a = x, bm = in(n, 1);
    if (attr_i(n, "transA", 0)) a = b_.transpose(name + ".transA", a, {}, true);
    if (attr_i(n, "transB", 0)) bm = b_.transpose(name + ".transB", bm, {}, true);
    int y = b_.matmul(name, a, bm, "Gemm");
    if (in(n, 2) >= 0) {
      y = b_.binary(name + ".bias", "Add", y, in(n, 2));
      b_.mark_epilogue(y);  // one ONNX Gemm: the bias is the GEMM's epilogue
    }
    set_out(n, y);
    return {};
  }

  // Nodes that move or view data: costed over their output shape (nullopt: not one of them).
  std::optional<Result<void>> shape_op(const Node& n, const std::string& name, int x) {
    const std::string& t = n.type();
    if (t == "Flatten") {
      if (x < 0) return by_hint(n, OpClass::view, 0);
      const Shape& s = b_.tensor(x).shape;
      int64_t axis = attr_i(n, "axis", 1);
      if (axis < 0) axis += static_cast<int64_t>(s.size());
      int64_t outer = 1;
      for (int64_t i = 0; i < axis && i < static_cast<int64_t>(s.size()); ++i) outer *= s[static_cast<std::size_t>(i)];
      return view(n, name, x, Shape{outer, -1});
    }
    if (t == "Reshape" || t == "Squeeze" || t == "Unsqueeze") {
      if (x < 0) return by_hint(n, OpClass::view, 0);
      std::optional<Shape> own;
      if (t == "Reshape" && cin(n, 1)) {
        own = Shape(*cin(n, 1));  // a shape from our own folding
      } else if (t != "Reshape" && !hint(n.p.output(0))) {
        auto s = squeeze_shape(n, name, x);
        if (!s) return s.error();
        own = *s;
      }
      return view(n, name, x, own);
    }
    if (t == "Transpose") {
      set_out(n, b_.transpose(name, x, attr_ints(n, "perm")));
      return Result<void>{};
    }
    if (t == "Concat") {
      std::vector<int> xs;
      for (std::size_t i = 0; i < n.n_in(); ++i) {
        if (in(n, i) >= 0) xs.push_back(in(n, i));
      }
      set_out(n, b_.concat(name, xs, attr_i(n, "axis", 0)));
      return Result<void>{};
    }
    if (t == "Gather") {
      set_out(n, b_.gather(name, x, in(n, 1), attr_i(n, "axis", 0)));
      return Result<void>{};
    }
    if (t == "Slice") {
      const auto *st = cin(n, 1), *en = cin(n, 2), *ax = cin(n, 3), *sp = cin(n, 4);
      if (st && en && st->size() == 1 && en->size() == 1 && (!ax || ax->size() == 1) && (!sp || sp->size() == 1)) {
        set_out(n, b_.slice(name, x, ax ? (*ax)[0] : 0, (*st)[0], (*en)[0], sp ? (*sp)[0] : 1));
        return Result<void>{};
      }
      return by_hint(n, OpClass::data_movement, 0);
    }
    // Ops costed over their output shape: ONNX's, else our own broadcasting of known inputs.
    if (t == "Expand" || t == "Tile" || t == "Pad" || t == "Resize" || t == "Upsample" || t == "Split" ||
        t == "ConstantOfShape" || t == "Range" || t == "Shape" || t == "Size" || t == "Where") {
      const OpClass cls = t == "Where" ? OpClass::elementwise : OpClass::data_movement;
      const double flops = t == "Where" ? 1 : 0;
      std::optional<Shape> own;
      if (!hint(n.p.output(0))) {
        if (t == "Expand" && x >= 0 && cin(n, 1)) own = broadcast_shapes(b_.tensor(x).shape, *cin(n, 1));
        if (t == "ConstantOfShape" && cin(n, 0)) own = Shape(*cin(n, 0));
        if (t == "Where" && x >= 0 && in(n, 1) >= 0 && in(n, 2) >= 0) {
          own = broadcast_shapes(b_.tensor(x).shape, b_.tensor(in(n, 1)).shape);
          if (own) own = broadcast_shapes(*own, b_.tensor(in(n, 2)).shape);
        }
      }
      return by_hint(n, cls, flops, own);
    }
    return std::nullopt;
  }

  // Unsupported: refuse (collected, reported together) or a stated fallback.
  Result<void> unsupported(const Node& n, int x) {
    const std::string& t = n.type();
    if (opt_.fallback) return by_hint(n, OpClass::elementwise, 1);
    ++unsupported_[t];
    if (auto h = hint(n.p.output(0))) {  // keep going to list every unsupported op
      ids_[n.p.output(0)] = b_.new_tensor(n.p.output(0), *h, opt_.dtype);
    } else if (x >= 0) {
      ids_[n.p.output(0)] = x;
    }
    return {};
  }

  onnx::ModelProto& m_;
  onnx::GraphProto& g_;
  const OnnxOptions& opt_;
  std::string file_;
  GraphBuilder b_;
  bool infer_ = true;
  std::string no_inference_;  // why ONNX's inference did not run
  std::unordered_map<std::string, onnx::TensorShapeProto> propagated_;  // ONNX's data propagation
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::string, std::vector<int64_t>> consts_;
  std::unordered_map<std::string, const onnx::ValueInfoProto*> hints_;
  std::map<std::string, int> unsupported_;
};

Result<Graph> import_model(onnx::ModelProto& model, const std::string& name, const OnnxOptions& opt) {
  if (!model.has_graph()) return make_error(Errc::parse, name + ": not an ONNX model (no graph)");
  if (model.graph().node_size() == 0) return make_error(Errc::parse, name + ": the ONNX graph has no nodes");
  if (auto r = check_tensors(model.graph()); !r) return make_error(Errc::parse, name + ": malformed ONNX: " + r.error().message);
  if (auto r = check_topology(model.graph()); !r) return r.error();
  std::string gname = name;
  if (const auto slash = gname.find_last_of('/'); slash != std::string::npos) gname = gname.substr(slash + 1);
  Importer imp(model, opt, name, gname);
  return imp.run();
}

Result<Graph> parse_and_import(std::string_view bytes, const std::string& name, const OnnxOptions& opt) {
  const detail::QuietProtobuf quiet;  // held through shape inference too
  onnx::ModelProto model;
  if (auto r = detail::parse_model(bytes, name, model); !r) return r.error();
  try {
    return import_model(model, name, opt);
  } catch (const std::exception& e) {  // ONNX throws on inconsistencies it finds outside InferShapes
    return make_error(Errc::parse, name + ": malformed ONNX: " + one_line(e.what()));
  }
}

}  // namespace

const std::vector<std::string>& onnx_supported_ops() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> s = {"Conv", "MatMul", "Gemm", "Cast", "Identity", "Dropout", "BatchNormalization",
                                  "LayerNormalization", "Softmax", "LogSoftmax", "GlobalAveragePool", "GlobalMaxPool",
                                  "MaxPool", "AveragePool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                  "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Gather", "Slice",
                                  "Expand", "Tile", "Pad", "Resize", "Upsample", "Split", "ConstantOfShape", "Range",
                                  "Shape", "Size", "Constant", "Where"};
    s.insert(s.end(), unary_ops().begin(), unary_ops().end());
    s.insert(s.end(), binary_ops().begin(), binary_ops().end());
    std::sort(s.begin(), s.end());
    return s;
  }();
  return v;
}

Result<Graph> import_onnx(std::string_view bytes, const std::string& name, const OnnxOptions& opt) {
  auto r = parse_and_import(bytes, name, opt);
  if (!r) return make_error(r.error().code, escape_controls(r.error().message));
  return r;
}

Result<Graph> import_onnx_file(const std::string& path, const OnnxOptions& opt) {
  // One bounded read (core/files): a folder, /dev/zero or a socket is refused in one line, and
  // nothing past protobuf's 2 GiB message limit is read.
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > static_cast<std::uintmax_t>(INT_MAX)) {
    return make_error(Errc::parse, path + ": " + std::to_string(size) +
                                       " bytes, over protobuf's 2 GiB message limit; save the weights as external "
                                       "data (only their shapes are read)");
  }
  auto bytes = read_text_file(path, static_cast<std::size_t>(INT_MAX));
  if (!bytes) return make_error(bytes.error().code, "cannot read ONNX file " + path + ": " + bytes.error().message);
  return import_onnx(*bytes, path, opt);
}

}  // namespace jouleprof::estimate
