#include "jouleprof/estimate/partition.hpp"

#include <algorithm>
#include <unordered_set>

namespace jouleprof::estimate {
namespace {

bool fusible_consumer(OpClass c) {
  return c == OpClass::elementwise || c == OpClass::normalization || c == OpClass::softmax ||
         c == OpClass::reduction;
}

}  // namespace

Result<void> check_topological(const Graph& g) {
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    for (int t : g.ops[i].inputs) {
      const int p = g.tensors[static_cast<std::size_t>(t)].producer;
      if (p >= static_cast<int>(i)) {
        return make_error(Errc::invalid_argument, "op '" + g.ops[i].name + "' reads '" +
                                                      g.tensors[static_cast<std::size_t>(t)].name +
                                                      "' before it is produced (graph not topologically sorted)");
      }
    }
  }
  return {};
}

std::vector<Subgraph> partition(const Graph& g, const PartitionOptions& opt) {
  const std::size_t nops = g.ops.size();
  std::vector<int> sg_of(nops, -1);
  std::vector<std::vector<int>> members;
  std::vector<bool> has_softmax;  // attention pattern: matmul -> ... -> softmax, then the PV matmul joins
  std::vector<bool> has_gemm;     // row reductions/normalizations do not fuse into GEMM epilogues

  // The subgraph that produced tensor t (following views), -1 for inputs and weights.
  auto producer_sg = [&](int t) {
    const int p = g.tensors[static_cast<std::size_t>(t)].producer;
    return p >= 0 ? sg_of[static_cast<std::size_t>(p)] : -1;
  };

  for (std::size_t i = 0; i < nops; ++i) {
    const Op& op = g.ops[i];
    int target = -1;
    if (op.cls == OpClass::view) {
      // Views cost nothing and belong with whatever produced their input.
      target = op.inputs.empty() ? -1 : producer_sg(op.inputs[0]);
    } else if (!opt.fuse && op.eager_epilogue && !op.inputs.empty()) {
      // Eager: the bias add runs in its GEMM's epilogue (one addmm kernel).
      const int s = producer_sg(op.inputs[0]);
      if (s >= 0 && has_gemm[static_cast<std::size_t>(s)]) target = s;
    } else if (opt.fuse && !op.inputs.empty()) {
      int first = -1, latest = -1;
      bool any = false;
      for (int t : op.inputs) {
        if (g.tensors[static_cast<std::size_t>(t)].is_weight) continue;
        const int s = producer_sg(t);
        if (!any) first = s;
        any = true;
        latest = std::max(latest, s);
      }
      // Inference batch norm is a per-channel affine map: a GEMM/conv epilogue. Row reductions
      // (layer/RMS norm, reduce ops) are not.
      const bool reduces = (op.cls == OpClass::reduction || op.cls == OpClass::normalization) &&
                           op.type != "BatchNormalization";
      if (fusible_consumer(op.cls) && latest >= 0 && !(reduces && has_gemm[static_cast<std::size_t>(latest)])) {
        // Epilogue fusion into the latest producer: inputs from earlier subgraphs are ready by then.
        target = latest;
      } else if (op.cls == OpClass::matmul && first >= 0 && has_softmax[static_cast<std::size_t>(first)] &&
                 latest == first) {
        target = first;  // softmax(QK^T) V: attention block
      }
    }
    if (target < 0) {
      target = static_cast<int>(members.size());
      members.emplace_back();
      has_softmax.push_back(false);
      has_gemm.push_back(false);
    }
    if (op.matrix_flops > 0) has_gemm[static_cast<std::size_t>(target)] = true;
    sg_of[i] = target;
    members[static_cast<std::size_t>(target)].push_back(static_cast<int>(i));
    if (op.cls == OpClass::softmax) has_softmax[static_cast<std::size_t>(target)] = true;
  }

  std::vector<Subgraph> out;
  out.reserve(members.size());
  for (std::size_t s = 0; s < members.size(); ++s) {
    Subgraph sg;
    sg.ops = members[s];
    std::unordered_set<int> read, written;
    double best = -1;
    int anchor = sg.ops.front();
    for (int oi : sg.ops) {
      const Op& op = g.ops[static_cast<std::size_t>(oi)];
      if (op.cls == OpClass::view) continue;
      const bool epilogue = !opt.fuse && op.eager_epilogue && oi != sg.ops.front();
      if (!epilogue && op.kernels > 0) sg.dispatched.push_back(oi);
      sg.kernels += (opt.fuse || epilogue) ? 0 : op.kernels;
      sg.matrix_flops += op.matrix_flops;
      sg.vector_flops += op.vector_flops;
      sg.transcendentals += op.transcendentals;
      const double weight = op.matrix_flops * 4 + op.vector_flops +
                            (op.cls == OpClass::data_movement ? 1.0 : 0.0);
      if (weight > best) {
        best = weight;
        anchor = oi;
      }
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        const int st = g.storage(op.inputs[k]);
        const Tensor& t = g.tensors[static_cast<std::size_t>(st)];
        if (t.producer >= 0 && sg_of[static_cast<std::size_t>(t.producer)] == static_cast<int>(s)) continue;
        if (!read.insert(st).second) continue;
        const double b = t.bytes() * op.input_fraction(k);
        (t.is_weight ? sg.weight_bytes : sg.input_bytes) += b;
        sg.reads.emplace_back(st, b);
      }
      if (op.row_passes > 1 && !op.inputs.empty()) {
        sg.resweep_bytes += (op.row_passes - 1) * g.tensors[static_cast<std::size_t>(op.inputs[0])].bytes();
      }
    }
    // Outputs: written when used outside this subgraph or a graph output.
    std::unordered_set<int> outs(g.outputs.begin(), g.outputs.end());
    for (int oi : sg.ops) {
      const Op& op = g.ops[static_cast<std::size_t>(oi)];
      if (op.cls == OpClass::view) continue;
      for (int t : op.outputs) {
        bool escapes = outs.count(t) > 0;
        // a view of t used elsewhere also makes t escape
        std::vector<int> stack{t};
        while (!stack.empty() && !escapes) {
          const int u = stack.back();
          stack.pop_back();
          if (outs.count(u)) escapes = true;
          for (int c : g.tensors[static_cast<std::size_t>(u)].consumers) {
            const Op& cop = g.ops[static_cast<std::size_t>(c)];
            if (sg_of[static_cast<std::size_t>(c)] != static_cast<int>(s)) escapes = true;
            else if (cop.cls == OpClass::view) stack.insert(stack.end(), cop.outputs.begin(), cop.outputs.end());
          }
        }
        if (g.tensors[static_cast<std::size_t>(t)].consumers.empty() && !outs.count(t)) escapes = true;  // dangling: still written
        if (escapes && written.insert(t).second) {
          sg.output_bytes += g.tensors[static_cast<std::size_t>(t)].bytes();
          sg.writes.emplace_back(t, g.tensors[static_cast<std::size_t>(t)].bytes());
        }
      }
    }
    const Op& a = g.ops[static_cast<std::size_t>(anchor)];
    sg.name = a.name;
    sg.anchor = a.cls;
    if (opt.fuse && a.cls != OpClass::view) sg.kernels = 1;
    if (sg.anchor == OpClass::matmul && has_softmax[s]) sg.anchor = OpClass::attention;
    for (int oi : sg.ops) {
      const Op& op = g.ops[static_cast<std::size_t>(oi)];
      if (op.matrix_flops > 0 && op.gemm_m > 0 &&
          (sg.gemm_m == 0 || op.matrix_flops > 2.0 * static_cast<double>(sg.gemm_batch * sg.gemm_m) *
                                                   static_cast<double>(sg.gemm_n * sg.gemm_k))) {
        sg.gemm_batch = op.gemm_batch;
        sg.gemm_m = op.gemm_m;
        sg.gemm_n = op.gemm_n;
        sg.gemm_k = op.gemm_k;
      }
    }
    out.push_back(std::move(sg));
  }
  // Subgraphs made only of views (e.g. a reshape of a graph input) do nothing: drop them.
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const Subgraph& s) {
                             return std::all_of(s.ops.begin(), s.ops.end(), [&](int oi) {
                               return g.ops[static_cast<std::size_t>(oi)].cls == OpClass::view;
                             });
                           }),
            out.end());
  return out;
}

}  // namespace jouleprof::estimate
