#include "jouleprof/estimate/onnx.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace jouleprof::estimate {
namespace {

// ---- protobuf wire format -------------------------------------------------------------------

struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;       // wire 0, and fixed32/64 values
  std::string_view bytes;    // wire 2
};

class PbReader {
 public:
  explicit PbReader(std::string_view b) : p_(b.data()), end_(b.data() + b.size()) {}
  // Reads the next field; false at the end or on malformed input (error() tells).
  bool next(Field& f) {
    if (p_ == end_ || !err_.empty()) return false;
    uint64_t key = 0;
    if (!varint(key)) return false;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<uint32_t>(key & 7);
    if (f.number == 0) return fail("field number 0");
    switch (f.wire) {
      case 0:
        return varint(f.varint);
      case 1:
        if (end_ - p_ < 8) return fail("truncated fixed64");
        std::memcpy(&f.varint, p_, 8);
        p_ += 8;
        return true;
      case 5: {
        if (end_ - p_ < 4) return fail("truncated fixed32");
        uint32_t v = 0;
        std::memcpy(&v, p_, 4);
        f.varint = v;
        p_ += 4;
        return true;
      }
      case 2: {
        uint64_t n = 0;
        if (!varint(n)) return false;
        if (n > static_cast<uint64_t>(end_ - p_)) return fail("length-delimited field runs past the end");
        f.bytes = std::string_view(p_, static_cast<std::size_t>(n));
        p_ += n;
        return true;
      }
      default:
        return fail("unsupported wire type " + std::to_string(f.wire));
    }
  }
  const std::string& error() const { return err_; }

 private:
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return fail("truncated varint");
      const auto byte = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) return true;
    }
    return fail("varint longer than 10 bytes");
  }
  bool fail(const std::string& why) {
    if (err_.empty()) err_ = why;
    return false;
  }
  const char* p_;
  const char* end_;
  std::string err_;
};

// Repeated int64 fields come packed (wire 2) or one per field (wire 0).
bool read_ints(const Field& f, std::vector<int64_t>& out, std::string& err) {
  if (f.wire == 0) {
    out.push_back(static_cast<int64_t>(f.varint));
    return true;
  }
  if (f.wire != 2) {
    err = "repeated integer with wire type " + std::to_string(f.wire);
    return false;
  }
  const char* p = f.bytes.data();
  const char* end = p + f.bytes.size();
  while (p < end) {
    uint64_t v = 0;
    int shift = 0;
    for (;;) {
      if (p == end || shift >= 64) {
        err = "truncated packed varint";
        return false;
      }
      const auto byte = static_cast<uint8_t>(*p++);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if (byte < 0x80) break;
    }
    out.push_back(static_cast<int64_t>(v));
  }
  return true;
}

// ---- ONNX messages (only the fields the importer needs) ---------------------------------------

struct OTensor {
  std::string name;
  std::vector<int64_t> dims;
  int data_type = 0;
  std::vector<int64_t> ints;  // int32/int64 values when present
  bool has_ints = false;
};

struct OAttr {
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  OTensor t;
  bool has_t = false, has_i = false;
};

struct ONode {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;
  std::unordered_map<std::string, OAttr> attrs;
};

struct ODim {
  int64_t value = -1;
  std::string param;
};

struct OValueInfo {
  std::string name;
  int elem_type = 0;
  bool has_shape = false;
  std::vector<ODim> dims;
};

struct OGraph {
  std::string name;
  std::vector<ONode> nodes;
  std::vector<OTensor> initializers;
  std::vector<OValueInfo> inputs, outputs, value_info;
};

using Err = std::string;

bool parse_tensor(std::string_view b, OTensor& t, Err& err) {
  PbReader r(b);
  Field f;
  std::string_view raw;
  while (r.next(f)) {
    switch (f.number) {
      case 1:
        if (!read_ints(f, t.dims, err)) return false;
        break;
      case 2: t.data_type = static_cast<int>(f.varint); break;
      case 5: case 7:
        if (!read_ints(f, t.ints, err)) return false;
        t.has_ints = true;
        break;
      case 8: t.name = std::string(f.bytes); break;
      case 9: raw = f.bytes; break;
      default: break;
    }
  }
  if (!r.error().empty()) {
    err = "TensorProto: " + r.error();
    return false;
  }
  if (!raw.empty() && (t.data_type == 7 || t.data_type == 6)) {
    const std::size_t w = t.data_type == 7 ? 8 : 4;
    if (raw.size() % w != 0 || raw.size() / w > 4096) return true;  // only small shape tensors are decoded
    for (std::size_t i = 0; i < raw.size(); i += w) {
      if (w == 8) {
        int64_t v = 0;
        std::memcpy(&v, raw.data() + i, 8);
        t.ints.push_back(v);
      } else {
        int32_t v = 0;
        std::memcpy(&v, raw.data() + i, 4);
        t.ints.push_back(v);
      }
    }
    t.has_ints = true;
  }
  return true;
}

bool parse_attr(std::string_view b, std::string& name, OAttr& a, Err& err) {
  PbReader r(b);
  Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: name = std::string(f.bytes); break;
      case 2: {
        const auto u = static_cast<uint32_t>(f.varint);
        std::memcpy(&a.f, &u, 4);
        break;
      }
      case 3: a.i = static_cast<int64_t>(f.varint); a.has_i = true; break;
      case 4: a.s = std::string(f.bytes); break;
      case 5:
        if (!parse_tensor(f.bytes, a.t, err)) return false;
        a.has_t = true;
        break;
      case 8:
        if (!read_ints(f, a.ints, err)) return false;
        break;
      default: break;
    }
  }
  if (!r.error().empty()) {
    err = "AttributeProto: " + r.error();
    return false;
  }
  return true;
}

bool parse_node(std::string_view b, ONode& n, Err& err) {
  PbReader r(b);
  Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1: n.inputs.emplace_back(f.bytes); break;
      case 2: n.outputs.emplace_back(f.bytes); break;
      case 3: n.name = std::string(f.bytes); break;
      case 4: n.op_type = std::string(f.bytes); break;
      case 7: n.domain = std::string(f.bytes); break;
      case 5: {
        std::string an;
        OAttr a;
        if (!parse_attr(f.bytes, an, a, err)) return false;
        n.attrs[an] = std::move(a);
        break;
      }
      default: break;
    }
  }
  if (!r.error().empty()) {
    err = "NodeProto: " + r.error();
    return false;
  }
  return true;
}

bool parse_value_info(std::string_view b, OValueInfo& v, Err& err) {
  PbReader r(b);
  Field f;
  while (r.next(f)) {
    if (f.number == 1) v.name = std::string(f.bytes);
    if (f.number != 2 || f.wire != 2) continue;
    PbReader tr(f.bytes);  // TypeProto
    Field tf;
    while (tr.next(tf)) {
      if (tf.number != 1 || tf.wire != 2) continue;  // tensor_type
      PbReader tt(tf.bytes);
      Field x;
      while (tt.next(x)) {
        if (x.number == 1) v.elem_type = static_cast<int>(x.varint);
        if (x.number == 2 && x.wire == 2) {  // TensorShapeProto
          v.has_shape = true;
          PbReader sr(x.bytes);
          Field d;
          while (sr.next(d)) {
            if (d.number != 1 || d.wire != 2) continue;
            ODim dim;
            PbReader dr(d.bytes);
            Field dv;
            while (dr.next(dv)) {
              if (dv.number == 1) dim.value = static_cast<int64_t>(dv.varint);
              if (dv.number == 2) dim.param = std::string(dv.bytes);
            }
            if (!dr.error().empty()) err = dr.error();
            v.dims.push_back(dim);
          }
          if (!sr.error().empty()) err = sr.error();
        }
      }
      if (!tt.error().empty()) err = tt.error();
    }
    if (!tr.error().empty()) err = tr.error();
  }
  if (!r.error().empty()) err = r.error();
  if (!err.empty()) {
    err = "ValueInfoProto: " + err;
    return false;
  }
  return true;
}

bool parse_graph(std::string_view b, OGraph& g, Err& err) {
  PbReader r(b);
  Field f;
  while (r.next(f)) {
    if (f.wire != 2) continue;
    switch (f.number) {
      case 1: {
        ONode n;
        if (!parse_node(f.bytes, n, err)) return false;
        g.nodes.push_back(std::move(n));
        break;
      }
      case 2: g.name = std::string(f.bytes); break;
      case 5: {
        OTensor t;
        if (!parse_tensor(f.bytes, t, err)) return false;
        g.initializers.push_back(std::move(t));
        break;
      }
      case 11: case 12: case 13: {
        OValueInfo v;
        if (!parse_value_info(f.bytes, v, err)) return false;
        (f.number == 11 ? g.inputs : f.number == 12 ? g.outputs : g.value_info).push_back(std::move(v));
        break;
      }
      default: break;
    }
  }
  if (!r.error().empty()) {
    err = "GraphProto: " + r.error();
    return false;
  }
  return true;
}

// ---- import ------------------------------------------------------------------------------------

DType dtype_of(int onnx_type, DType float_as) {
  switch (onnx_type) {
    case 6: return DType::i32;
    case 7: return DType::i64;
    case 9: return DType::boolean;
    case 2: case 3: return DType::i8;
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

class Importer {
 public:
  Importer(const OGraph& og, const OnnxOptions& opt, const std::string& name) : og_(og), opt_(opt), b_(name, opt.dtype) {}

  Result<Graph> run() {
    for (const auto& v : og_.value_info) hints_[v.name] = &v;
    for (const auto& v : og_.outputs) hints_[v.name] = &v;
    std::set<std::string> init_names;
    for (const OTensor& t : og_.initializers) {
      init_names.insert(t.name);
      if (t.has_ints) consts_[t.name] = t.ints;
      if (std::any_of(t.dims.begin(), t.dims.end(), [](int64_t d) { return d <= 0; })) continue;  // empty/optional
      ids_[t.name] = b_.weight(t.name, t.dims, dtype_of(t.data_type, opt_.dtype));
    }
    for (const OValueInfo& v : og_.inputs) {
      if (init_names.count(v.name)) continue;
      auto s = resolve(v, true);
      if (!s) return s.error();
      ids_[v.name] = b_.input(v.name, *s, dtype_of(v.elem_type, opt_.dtype));
    }
    for (const ONode& n : og_.nodes) {
      if (auto r = node(n); !r) return r.error();
      if (!b_.ok()) return *b_.error();
    }
    if (!unsupported_.empty()) {
      std::string list;
      for (const auto& [op, count] : unsupported_) list += (list.empty() ? "" : ", ") + op + " (" + std::to_string(count) + ")";
      return make_error(Errc::unsupported, b_.graph().name + ": unsupported ONNX ops: " + list +
                                               "; rerun with --onnx-unsupported elementwise to estimate them as pointwise "
                                               "ops on their first input");
    }
    for (const auto& v : og_.outputs) {
      auto it = ids_.find(v.name);
      if (it != ids_.end()) b_.output(it->second);
    }
    return b_.finish();
  }

 private:
  // A declared shape with dynamic dims resolved from opt.dims; for graph inputs an unresolved
  // dim is an error, for hints it just makes the hint unusable.
  Result<Shape> resolve(const OValueInfo& v, bool required) {
    if (!v.has_shape) {
      return make_error(Errc::invalid_argument, "input '" + v.name + "' has no shape (run onnx.shape_inference or give static shapes)");
    }
    Shape s;
    for (std::size_t i = 0; i < v.dims.size(); ++i) {
      const ODim& d = v.dims[i];
      if (d.value > 0) {
        s.push_back(d.value);
        continue;
      }
      if (!d.param.empty()) {
        auto it = opt_.dims.find(d.param);
        if (it != opt_.dims.end() && it->second > 0) {
          s.push_back(it->second);
          continue;
        }
        if (required) {
          return make_error(Errc::invalid_argument, "input '" + v.name + "' dimension " + std::to_string(i) +
                                                        " is dynamic ('" + d.param + "'); give --dim " + d.param + "=VALUE");
        }
      } else if (required) {
        return make_error(Errc::invalid_argument, "input '" + v.name + "' dimension " + std::to_string(i) +
                                                      " is dynamic and unnamed; export the model with static shapes");
      }
      return make_error(Errc::invalid_argument, "unresolved");
    }
    return s;
  }

  std::optional<Shape> hint(const std::string& name) {
    auto it = hints_.find(name);
    if (it == hints_.end()) return std::nullopt;
    auto s = resolve(*it->second, false);
    if (!s) return std::nullopt;
    return *s;
  }

  int in(const ONode& n, std::size_t i) {
    if (i >= n.inputs.size() || n.inputs[i].empty()) return -1;
    auto it = ids_.find(n.inputs[i]);
    return it == ids_.end() ? -1 : it->second;
  }
  const std::vector<int64_t>* cin(const ONode& n, std::size_t i) {
    if (i >= n.inputs.size()) return nullptr;
    auto it = consts_.find(n.inputs[i]);
    return it == consts_.end() ? nullptr : &it->second;
  }
  int64_t attr_i(const ONode& n, const char* k, int64_t def) {
    auto it = n.attrs.find(k);
    return it == n.attrs.end() ? def : it->second.i;
  }
  std::vector<int64_t> attr_ints(const ONode& n, const char* k) {
    auto it = n.attrs.find(k);
    return it == n.attrs.end() ? std::vector<int64_t>{} : it->second.ints;
  }
  std::string nm(const ONode& n) { return n.name.empty() ? (n.outputs.empty() ? n.op_type : n.outputs[0]) : n.name; }
  void set_out(const ONode& n, int t) {
    if (!n.outputs.empty() && t >= 0) ids_[n.outputs[0]] = t;
  }
  // An op we only know the output shape of (from value_info): cost as pointwise over the output.
  Result<void> by_hint(const ONode& n, OpClass cls, double flops_per_elem, bool count_unsupported,
                       std::optional<Shape> known = std::nullopt) {
    auto s = known ? known : hint(n.outputs.empty() ? "" : n.outputs[0]);
    if (!s) {
      if (count_unsupported) {
        ++unsupported_[n.op_type];
        return {};
      }
      return make_error(Errc::invalid_argument, "node '" + nm(n) + "' (" + n.op_type +
                                                    "): cannot infer its output shape and the file declares none; "
                                                    "run onnx.shape_inference.infer_shapes on the model");
    }
    Op op;
    op.name = nm(n);
    op.type = n.op_type;
    op.cls = cls;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
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

  // Folds integer shape arithmetic when every input is a known constant.
  bool fold(const ONode& n) {
    const std::string& t = n.op_type;
    if (n.outputs.size() != 1) return false;
    std::vector<int64_t> out;
    if (t == "Shape") {
      const int x = in(n, 0);
      if (x < 0) return false;
      out = b_.tensor(x).shape;
      const auto r = static_cast<int64_t>(out.size());
      int64_t s = attr_i(n, "start", 0), e = attr_i(n, "end", r);
      s = std::clamp(s < 0 ? s + r : s, int64_t{0}, r);
      e = std::clamp(e < 0 ? e + r : e, int64_t{0}, r);
      out = std::vector<int64_t>(out.begin() + s, out.begin() + std::max(s, e));
    } else if (t == "Constant") {
      auto it = n.attrs.find("value");
      if (it != n.attrs.end() && it->second.has_t && it->second.t.has_ints) out = it->second.t.ints;
      else if ((it = n.attrs.find("value_ints")) != n.attrs.end()) out = it->second.ints;
      else if ((it = n.attrs.find("value_int")) != n.attrs.end()) out = {it->second.i};
      else return false;
    } else {
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        if (!n.inputs[i].empty() && !cin(n, i)) return false;
      }
      if (n.inputs.empty() || !cin(n, 0)) return false;
      const auto& a = *cin(n, 0);
      if (t == "Identity" || t == "Cast" || t == "Unsqueeze" || t == "Squeeze" || t == "Reshape" || t == "Flatten") {
        out = a;
      } else if (t == "Concat") {
        for (std::size_t i = 0; i < n.inputs.size(); ++i) {
          if (auto* c = cin(n, i)) out.insert(out.end(), c->begin(), c->end());
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
        for (int64_t d : a) count *= d;
        if (count < 0 || count > 4096) return false;
        int64_t v = 0;
        auto it = n.attrs.find("value");
        if (it != n.attrs.end() && it->second.has_t) {
          if (!it->second.t.has_ints || it->second.t.ints.empty()) return false;  // a float fill: not shape arithmetic
          v = it->second.t.ints[0];
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
          if ((t == "Div" || t == "Mod") && y == 0) return false;
          out.push_back(t == "Add"   ? x + y
                        : t == "Sub" ? x - y
                        : t == "Mul" ? x * y
                        : t == "Div" ? x / y
                        : t == "Mod" ? x % y
                                     : static_cast<int64_t>(x == y));
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
    }
    consts_[n.outputs[0]] = out;
    // A small constant tensor (shape arithmetic runs on the host / is folded): no cost.
    const int w = b_.weight(n.outputs[0], Shape{std::max<int64_t>(1, static_cast<int64_t>(out.size()))}, DType::i64);
    ids_[n.outputs[0]] = w;
    return true;
  }

  Result<void> node(const ONode& n) {
    const std::string& t = n.op_type;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.inputs[i].empty() && !ids_.count(n.inputs[i]) && !consts_.count(n.inputs[i])) {
        return make_error(Errc::invalid_argument, "node '" + nm(n) + "' (" + t + ") reads '" + n.inputs[i] +
                                                      "', which no earlier node or initializer defines");
      }
    }
    if (n.outputs.empty()) return {};
    if (fold(n)) return {};
    const std::string name = nm(n);
    const int x = in(n, 0);
    if (t == "Constant") {  // a float constant: a weight of the declared shape
      auto it = n.attrs.find("value");
      Shape s{1};
      if (it != n.attrs.end() && it->second.has_t && !it->second.t.dims.empty()) s = it->second.t.dims;
      set_out(n, b_.weight(n.outputs[0], s));
      return {};
    }
    if (t == "Conv") {
      const int w = in(n, 1);
      if (w < 0) return make_error(Errc::invalid_argument, "node '" + name + "': Conv weight missing");
      auto pads = attr_ints(n, "pads");
      if (pads.empty()) pads = {0, 0, 0, 0};
      auto strides = attr_ints(n, "strides");
      if (strides.empty()) strides = {1, 1};
      auto dil = attr_ints(n, "dilations");
      if (dil.empty()) dil = {1, 1};
      const std::string autopad = n.attrs.count("auto_pad") ? n.attrs.at("auto_pad").s : "";
      if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
        if (auto h = hint(n.outputs[0]); h && h->size() == 4 && b_.tensor(x).shape.size() == 4 && b_.tensor(w).shape.size() == 4) {
          for (int d = 0; d < 2; ++d) {
            const int64_t ins = b_.tensor(x).shape[static_cast<std::size_t>(2 + d)], k = b_.tensor(w).shape[static_cast<std::size_t>(2 + d)];
            const int64_t total = std::max<int64_t>(0, ((*h)[static_cast<std::size_t>(2 + d)] - 1) * strides[static_cast<std::size_t>(d)] + (k - 1) * dil[static_cast<std::size_t>(d)] + 1 - ins);
            pads[static_cast<std::size_t>(d)] = total / 2;
            pads[static_cast<std::size_t>(d + 2)] = total - total / 2;
          }
        }
      }
      set_out(n, b_.conv2d_w(name, x, w, in(n, 2), strides, pads, dil, attr_i(n, "group", 1)));
      return {};
    }
    if (t == "MatMul") {
      set_out(n, b_.matmul(name, x, in(n, 1)));
      return {};
    }
    if (t == "Gemm") {
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
    if (unary_ops().count(t)) {
      const bool tr = transcendental_ops().count(t) > 0;
      set_out(n, b_.unary(name, t, x, tr ? 4 : 1, tr ? 1 : 0));
      return {};
    }
    if (binary_ops().count(t)) {
      set_out(n, b_.binary(name, t, x, in(n, 1)));
      return {};
    }
    if (t == "Cast") {
      auto it = n.attrs.find("to");
      set_out(n, b_.cast(name, x, dtype_of(it == n.attrs.end() ? 1 : static_cast<int>(it->second.i), opt_.dtype)));
      return {};
    }
    if (t == "Identity" || t == "Dropout") {
      set_out(n, x);
      return {};
    }
    if (t == "BatchNormalization") {
      set_out(n, b_.batchnorm(name, x));
      return {};
    }
    if (t == "LayerNormalization") {
      set_out(n, b_.layernorm(name, x, in(n, 2) >= 0));
      return {};
    }
    if (t == "Softmax" || t == "LogSoftmax") {
      set_out(n, b_.softmax(name, x));
      return {};
    }
    if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
      set_out(n, b_.global_avg_pool(name, x));
      return {};
    }
    if (t == "MaxPool" || t == "AveragePool") {
      auto k = attr_ints(n, "kernel_shape");
      auto s = attr_ints(n, "strides");
      auto p = attr_ints(n, "pads");
      if (s.empty()) s = {1, 1};
      if (p.empty()) p = {0, 0, 0, 0};
      set_out(n, b_.pool2d_ex(name, t, x, k, s, p, attr_i(n, "ceil_mode", 0) != 0));
      return {};
    }
    if (t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax" || t == "ReduceMin") {
      auto axes = attr_ints(n, "axes");
      if (axes.empty() && cin(n, 1)) axes = *cin(n, 1);
      set_out(n, b_.reduce(name, t, x, axes, attr_i(n, "keepdims", 1) != 0));
      return {};
    }
    if (t == "Flatten") {
      const Shape& s = b_.tensor(x).shape;
      int64_t axis = attr_i(n, "axis", 1);
      if (axis < 0) axis += static_cast<int64_t>(s.size());
      int64_t outer = 1;
      for (int64_t i = 0; i < axis && i < static_cast<int64_t>(s.size()); ++i) outer *= s[static_cast<std::size_t>(i)];
      set_out(n, b_.reshape(name, x, {outer, -1}));
      return {};
    }
    if (t == "Reshape" || t == "Squeeze" || t == "Unsqueeze") {
      if (t == "Reshape" && cin(n, 1)) {
        set_out(n, b_.reshape(name, x, *cin(n, 1)));
        return {};
      }
      if (auto h = hint(n.outputs[0])) {
        set_out(n, b_.reshape(name, x, *h));
        return {};
      }
      if (t != "Reshape") {  // axes from the attribute (opset < 13) or a constant input
        auto axes = attr_ints(n, "axes");
        if (axes.empty() && cin(n, 1)) axes = *cin(n, 1);
        Shape s = b_.tensor(x).shape;
        if (t == "Squeeze") {
          Shape o;
          for (std::size_t i = 0; i < s.size(); ++i) {
            const bool drop = axes.empty() ? s[i] == 1
                                           : std::any_of(axes.begin(), axes.end(), [&](int64_t a) {
                                               return (a < 0 ? a + static_cast<int64_t>(s.size()) : a) == static_cast<int64_t>(i);
                                             });
            if (!drop) o.push_back(s[i]);
          }
          set_out(n, b_.reshape(name, x, o));
          return {};
        }
        const auto r = static_cast<int64_t>(s.size() + axes.size());
        std::vector<int64_t> norm;
        for (int64_t a : axes) norm.push_back(a < 0 ? a + r : a);
        std::sort(norm.begin(), norm.end());
        for (int64_t a : norm) {
          if (a < 0 || a > static_cast<int64_t>(s.size())) return make_error(Errc::invalid_argument, "node '" + name + "': Unsqueeze axis out of range");
          s.insert(s.begin() + a, 1);
        }
        set_out(n, b_.reshape(name, x, s));
        return {};
      }
      return by_hint(n, OpClass::view, 0, false);
    }
    if (t == "Transpose") {
      set_out(n, b_.transpose(name, x, attr_ints(n, "perm")));
      return {};
    }
    if (t == "Concat") {
      std::vector<int> xs;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        if (in(n, i) >= 0) xs.push_back(in(n, i));
      }
      set_out(n, b_.concat(name, xs, attr_i(n, "axis", 0)));
      return {};
    }
    if (t == "Gather") {
      set_out(n, b_.gather(name, x, in(n, 1), attr_i(n, "axis", 0)));
      return {};
    }
    if (t == "Slice") {
      const auto *st = cin(n, 1), *en = cin(n, 2), *ax = cin(n, 3), *sp = cin(n, 4);
      if (st && en && st->size() == 1 && en->size() == 1 && (!ax || ax->size() == 1) && (!sp || sp->size() == 1)) {
        set_out(n, b_.slice(name, x, ax ? (*ax)[0] : 0, (*st)[0], (*en)[0], sp ? (*sp)[0] : 1));
        return {};
      }
      return by_hint(n, OpClass::data_movement, 0, false);
    }
    if (t == "Expand" && x >= 0 && cin(n, 1)) {
      auto s = broadcast_shapes(b_.tensor(x).shape, *cin(n, 1));
      if (s) return by_hint(n, OpClass::data_movement, 0, false, *s);
    }
    if (t == "ConstantOfShape" && cin(n, 0)) return by_hint(n, OpClass::data_movement, 0, false, Shape(*cin(n, 0)));
    if (t == "Where" && in(n, 1) >= 0 && in(n, 2) >= 0 && x >= 0) {
      auto s = broadcast_shapes(b_.tensor(x).shape, b_.tensor(in(n, 1)).shape);
      if (s) s = broadcast_shapes(*s, b_.tensor(in(n, 2)).shape);
      if (s) return by_hint(n, OpClass::elementwise, 1, false, *s);
    }
    if (t == "Expand" || t == "Tile" || t == "Pad" || t == "Resize" || t == "Upsample" || t == "Split" ||
        t == "ConstantOfShape" || t == "Range" || t == "Shape") {
      return by_hint(n, OpClass::data_movement, 0, false);
    }
    if (t == "Where") {
      return by_hint(n, OpClass::elementwise, 1, false);
    }
    // Unsupported: refuse (collected, reported together) or a stated fallback.
    if (opt_.fallback) return by_hint(n, OpClass::elementwise, 1, false);
    ++unsupported_[t];
    if (auto h = hint(n.outputs[0])) {  // keep going to list every unsupported op
      const int o = b_.new_tensor(n.outputs[0], *h, opt_.dtype);
      ids_[n.outputs[0]] = o;
    } else if (x >= 0) {
      ids_[n.outputs[0]] = x;
    }
    return {};
  }

  const OGraph& og_;
  const OnnxOptions& opt_;
  GraphBuilder b_;
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::string, std::vector<int64_t>> consts_;
  std::unordered_map<std::string, const OValueInfo*> hints_;
  std::map<std::string, int> unsupported_;
};

}  // namespace

const std::vector<std::string>& onnx_supported_ops() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> s = {"Conv", "MatMul", "Gemm", "Cast", "Identity", "Dropout", "BatchNormalization",
                                  "LayerNormalization", "Softmax", "LogSoftmax", "GlobalAveragePool", "GlobalMaxPool",
                                  "MaxPool", "AveragePool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                  "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Gather", "Slice",
                                  "Expand", "Tile", "Pad", "Resize", "Upsample", "Split", "ConstantOfShape", "Range",
                                  "Shape", "Constant", "Where"};
    s.insert(s.end(), unary_ops().begin(), unary_ops().end());
    s.insert(s.end(), binary_ops().begin(), binary_ops().end());
    std::sort(s.begin(), s.end());
    return s;
  }();
  return v;
}

Result<Graph> import_onnx(std::string_view bytes, const std::string& name, const OnnxOptions& opt) {
  PbReader r(bytes);
  Field f;
  OGraph g;
  bool have_graph = false;
  Err err;
  while (r.next(f)) {
    if (f.number == 7 && f.wire == 2) {
      if (!parse_graph(f.bytes, g, err)) return make_error(Errc::parse, name + ": malformed ONNX: " + err);
      have_graph = true;
    }
  }
  if (!r.error().empty()) return make_error(Errc::parse, name + ": malformed ONNX (ModelProto): " + r.error());
  if (!have_graph) return make_error(Errc::parse, name + ": not an ONNX model (no graph)");
  if (g.nodes.empty()) return make_error(Errc::parse, name + ": the ONNX graph has no nodes");
  std::string gname = name;
  if (const auto slash = gname.find_last_of('/'); slash != std::string::npos) gname = gname.substr(slash + 1);
  Importer imp(g, opt, gname);
  return imp.run();
}

Result<Graph> import_onnx_file(const std::string& path, const OnnxOptions& opt) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::not_found, "cannot read ONNX file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  return import_onnx(bytes, path, opt);
}

namespace detail {
void PbWriter::raw_varint(uint64_t v) {
  while (v >= 0x80) {
    buf_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  buf_.push_back(static_cast<char>(v));
}
void PbWriter::varint(uint32_t field, uint64_t v) {
  raw_varint(static_cast<uint64_t>(field) << 3);
  raw_varint(v);
}
void PbWriter::bytes(uint32_t field, std::string_view s) {
  raw_varint((static_cast<uint64_t>(field) << 3) | 2);
  raw_varint(s.size());
  buf_.append(s.data(), s.size());
}
void PbWriter::fixed32(uint32_t field, uint32_t v) {
  raw_varint((static_cast<uint64_t>(field) << 3) | 5);
  char b[4];
  std::memcpy(b, &v, 4);
  buf_.append(b, 4);
}
void PbWriter::packed_varints(uint32_t field, const std::vector<int64_t>& v) {
  PbWriter inner;
  for (int64_t x : v) inner.raw_varint(static_cast<uint64_t>(x));
  bytes(field, inner.data());
}
}  // namespace detail

}  // namespace jouleprof::estimate
