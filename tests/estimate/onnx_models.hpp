// Hand-made ONNX models built with ONNX's generated protobuf classes, shared by the ONNX import
// tests (tests/estimate/test_onnx.cpp) and the ONNX fuzz properties (tests/fuzz).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "jouleprof/estimate/onnx.hpp"

namespace jp_onnx_test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --- hand-made models, through ONNX's generated classes ---
inline onnx::ValueInfoProto value_info(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<std::string>& params = {}) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->add_dim();
    if (i < params.size() && !params[i].empty()) d->set_dim_param(params[i]);
    else d->set_dim_value(dims[i]);
  }
  return vi;
}
// A float weight without data (stripped, like the fixtures).
inline onnx::TensorProto initializer(const std::string& name, const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}
// A 1-D int64 tensor with its values (shape arithmetic).
inline onnx::TensorProto int_tensor(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}
inline onnx::NodeProto node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
  onnx::NodeProto n;
  for (const auto& i : in) n.add_input(i);
  for (const auto& o : out) n.add_output(o);
  n.set_name(op + "_" + out[0]);
  n.set_op_type(op);
  return n;
}
inline std::string model(const onnx::GraphProto& graph, int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  *m.mutable_graph() = graph;
  return m.SerializeAsString();
}
// x[B,K0] -> MatMul W0[K0,K1] -> Relu -> MatMul W1[K1,K2] ...
inline std::string mlp(const std::vector<int64_t>& widths, int64_t batch, const std::string& batch_param = "") {
  onnx::GraphProto g;
  g.set_name("mlp");
  *g.add_input() = value_info("x", {batch, widths[0]}, {batch_param});
  std::string cur = "x";
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    const std::string w = "w" + std::to_string(i), y = "y" + std::to_string(i), r = "r" + std::to_string(i);
    *g.add_initializer() = initializer(w, {widths[i], widths[i + 1]});
    *g.add_node() = node("MatMul", {cur, w}, {y});
    *g.add_node() = node("Relu", {y}, {r});
    cur = r;
  }
  *g.add_output() = value_info(cur, {batch, widths.back()}, {batch_param});
  return model(g);
}
// x[1,2,4,4] -> Pad(1 on each side) -> y: no shape declared for y unless `declare`.
inline std::string padded(int64_t opset, bool declare) {
  onnx::GraphProto g;
  *g.add_input() = value_info("x", {1, 2, 4, 4});
  *g.add_initializer() = int_tensor("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  *g.add_node() = node("Pad", {"x", "pads"}, {"y"});
  *g.add_node() = node("Relu", {"y"}, {"z"});
  onnx::ValueInfoProto out = declare ? value_info("z", {1, 2, 6, 6}) : value_info("z", {});
  if (!declare) out.mutable_type()->mutable_tensor_type()->clear_shape();
  *g.add_output() = out;
  if (declare) *g.add_value_info() = value_info("y", {1, 2, 6, 6});
  return model(g, opset);
}
inline std::string without_value_info(const std::string& bytes) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) return {};
  m.mutable_graph()->clear_value_info();
  for (auto& o : *m.mutable_graph()->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  return m.SerializeAsString();
}
/// The loader's contract on any input: a graph, or a one-line error.
inline bool error_or_graph(const jouleprof::Result<jouleprof::estimate::Graph>& r) {
  return r.ok() || (!r.error().message.empty() && r.error().message.find('\n') == std::string::npos);
}

}  // namespace jp_onnx_test
