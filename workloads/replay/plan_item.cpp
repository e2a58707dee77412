// One item of a replay plan read into the engine's Item (plan_item.hpp).
#include "plan_item.hpp"

namespace jouleprof::replay {

Item item_of(const nlohmann::json& j) {
  Item it;
  it.tier = j.value("tier", "");
  it.m = j.value("m", int64_t{0});
  it.n = j.value("n", int64_t{0});
  it.k = j.value("k", int64_t{0});
  it.batch = j.value("batch", int64_t{1});
  it.lda = j.value("lda", int64_t{0});
  it.ldb = j.value("ldb", int64_t{0});
  it.ldc = j.value("ldc", int64_t{0});
  it.stride_a = j.value("stride_a", int64_t{0});
  it.stride_b = j.value("stride_b", int64_t{0});
  it.stride_c = j.value("stride_c", int64_t{0});
  it.trans_a = j.value("trans_a", false);
  it.trans_b = j.value("trans_b", false);
  it.accumulate = j.value("accumulate", false);
  it.weight_b = j.value("weight_b", false);
  it.dtype = j.value("dtype", "bf16");
  it.heads_q = j.value("heads_q", int64_t{0});
  it.heads_kv = j.value("heads_kv", int64_t{0});
  it.seq_q = j.value("seq_q", int64_t{0});
  it.seq_kv = j.value("seq_kv", int64_t{0});
  it.head_dim = j.value("head_dim", int64_t{0});
  it.causal = j.value("causal", false);
  it.scale = j.value("scale", 0.0);
  auto ints = [&](const char* k) { return j.contains(k) && j[k].is_array() ? j[k].get<std::vector<int64_t>>() : std::vector<int64_t>{}; };
  it.conv_input = ints("input");
  it.conv_weight = ints("weight");
  it.conv_output = ints("output");
  it.conv_stride = ints("stride");
  it.conv_padding = ints("padding");
  it.conv_dilation = ints("dilation");
  if (it.tier == "batchnorm") it.bn_input = ints("input");
  it.groups = j.value("groups", int64_t{1});
  it.channels_last = j.value("channels_last", false);
  it.allow_tf32 = j.value("allow_tf32", true);
  it.copy_kind = j.value("copy_kind", "");
  it.bytes = j.value("bytes", uint64_t{0});
  it.bytes_read = j.value("bytes_read", uint64_t{0});
  it.bytes_written = j.value("bytes_written", uint64_t{0});
  it.target_ns = j.value("target_ns", 0.0);
  if (j.contains("grid")) {
    for (int d = 0; d < 3; ++d) it.grid[d] = j["grid"][static_cast<std::size_t>(d)].get<int>();
  }
  if (j.contains("block")) {
    for (int d = 0; d < 3; ++d) it.block[d] = j["block"][static_cast<std::size_t>(d)].get<int>();
  }
  return it;
}

}  // namespace jouleprof::replay
