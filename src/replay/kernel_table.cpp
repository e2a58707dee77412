#include "jouleprof/core/text.hpp"
#include "jouleprof/replay/kernel_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "jouleprof/trace/format.hpp"
#include "jouleprof/trace/trace.hpp"
#include "intervals.hpp"
#include "tier_shapes.hpp"

#ifndef JOULEPROF_SOURCE_DATA_DIR
#define JOULEPROF_SOURCE_DATA_DIR ""
#endif

namespace jouleprof {
namespace {

namespace fs = std::filesystem;
using namespace replay_detail;

// A row-major matrix operand's (transposed?, leading dimension) from its last two strides.
std::pair<bool, int64_t> layout(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  if (dims.size() < 2 || strides.size() != dims.size()) return {false, dims.empty() ? 0 : dims.back()};
  const std::size_t r = dims.size();
  if (strides[r - 1] == 1 && dims[r - 1] > 0) return {false, std::max(strides[r - 2], dims[r - 1])};
  if (strides[r - 2] == 1) return {true, std::max(strides[r - 1], dims[r - 2])};
  return {false, dims[r - 1]};  // neither dimension contiguous: cuBLAS would need a copy; keep the shape
}

std::optional<GemmShape> gemm_shape(const KernelRow& r, std::string& why) {
  const Dims d = parse_dims(r.input_dims);
  const Dims st = parse_dims(r.input_strides);
  const auto ty = parse_types(r.input_types);
  auto dim_ok = [&](std::size_t i, std::size_t rank) { return i < d.size() && d[i].size() == rank; };
  auto stride = [&](std::size_t i) { return i < st.size() ? st[i] : std::vector<int64_t>{}; };
  auto type = [&](std::size_t i) { return i < ty.size() ? dtype_of(ty[i]) : std::string(); };
  GemmShape g;
  std::size_t ia = 0, ib = 1;
  const std::string& op = r.op;
  if (op == "aten::mm" && dim_ok(0, 2) && dim_ok(1, 2)) {
  } else if ((op == "aten::addmm" || op == "aten::_addmm_activation") && dim_ok(1, 2) && dim_ok(2, 2)) {
    ia = 1, ib = 2;
    g.accumulate = true;
  } else if (op == "aten::bmm" && dim_ok(0, 3) && dim_ok(1, 3)) {
  } else if (op == "aten::baddbmm" && dim_ok(1, 3) && dim_ok(2, 3)) {
    ia = 1, ib = 2;
    g.accumulate = true;
  } else if ((op == "aten::linear" || op == "aten::matmul") && d.size() >= 2 && d[0].size() >= 2 && d[1].size() == 2) {
    // linear(x[..., K], W[N, K], bias?): y = x W^T.
    const auto& x = d[0];
    g.k = x.back();
    g.m = static_cast<int64_t>(numel(x) / static_cast<uint64_t>(std::max<int64_t>(g.k, 1)));
    if (op == "aten::linear") {
      g.n = d[1][0];
      g.trans_b = true;
      g.ldb = g.k;
    } else {
      g.n = d[1][1];
      g.ldb = g.n;
    }
    g.lda = g.k;
    g.ldc = g.n;
    g.accumulate = op == "aten::linear" && d.size() > 2 && !d[2].empty();
    g.dtype_a = type(0), g.dtype_b = type(1), g.dtype_c = type(0);
    if (g.dtype_a.empty()) g.dtype_a = g.dtype_b = g.dtype_c = "bf16";
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || std::any_of(x.begin(), x.end(), [](int64_t v) { return v < 0; })) {
      why = fmt::format("the op's shapes give a non-positive GEMM dimension ({}x{}x{})", g.m, g.n, g.k);
      return std::nullopt;
    }
    return g;
  } else {
    why = "the op's input shapes do not give a GEMM (" + (op.empty() ? std::string("no op") : op) + ")";
    return std::nullopt;
  }
  const auto& a = d[ia];
  const auto& b = d[ib];
  const bool batched = a.size() == 3;
  if (batched) {
    g.batch = a[0];
    if (b[0] != a[0]) {
      why = "batched GEMM with different batch sizes";
      return std::nullopt;
    }
  }
  const std::size_t o = batched ? 1 : 0;
  g.m = a[o];
  g.k = a[o + 1];
  g.n = b[o + 1];
  if (b[o] != g.k) {
    why = fmt::format("inner dimensions differ ({} vs {})", g.k, b[o]);
    return std::nullopt;
  }
  std::tie(g.trans_a, g.lda) = layout(a, stride(ia));
  std::tie(g.trans_b, g.ldb) = layout(b, stride(ib));
  g.ldc = g.n;
  if (batched) {
    const auto sa = stride(ia), sb = stride(ib);
    g.stride_a = sa.size() == 3 ? sa[0] : g.m * g.k;
    g.stride_b = sb.size() == 3 ? sb[0] : g.k * g.n;
    g.stride_c = g.m * g.n;
  }
  g.dtype_a = type(ia), g.dtype_b = type(ib), g.dtype_c = type(ia);
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) {
    why = fmt::format("the op's shapes give a non-positive GEMM dimension ({}x{}x{}, batch {})", g.m, g.n, g.k, g.batch);
    return std::nullopt;
  }
  if (g.dtype_a.empty() || g.dtype_b.empty()) {
    why = "the op's input types are missing";
    return std::nullopt;
  }
  return g;
}

// Bytes an elementwise/reduction/normalization kernel moves, from its op's tensors: every tensor
// input read once, the largest written once (reductions: the output is small, counted as 0).
void proxy_bytes(KernelRow& r) {
  const auto dims = nlohmann::json::parse(r.input_dims.empty() ? "[]" : r.input_dims, nullptr, false);
  const auto ty = parse_types(r.input_types);
  if (!dims.is_array()) return;
  uint64_t read = 0, largest = 0, elements = 0;
  int list_es = 0;  // element size assumed for tensor lists (cat): the op's first tensor type, else 2
  for (const auto& t : ty) {
    if (list_es == 0) list_es = elem_size(t);
  }
  if (list_es == 0) list_es = 2;
  auto add = [&](const nlohmann::json& d, int es) {
    std::vector<int64_t> v;
    for (const auto& x : d) {
      if (x.is_number_integer()) v.push_back(x.get<int64_t>());
    }
    if (v.empty()) return;  // scalars
    const uint64_t n = numel(v), b = n * static_cast<uint64_t>(es);
    read += b;
    largest = std::max(largest, b);
    elements = std::max(elements, n);
  };
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto& d = dims[i];
    if (!d.is_array() || d.empty()) continue;
    if (d[0].is_array()) {  // a tensor list: its tensors are read, their concatenation written
      uint64_t before = read;
      for (const auto& t : d) add(t, list_es);
      largest = std::max(largest, read - before);
      continue;
    }
    const int es = i < ty.size() ? elem_size(ty[i]) : 0;
    if (es > 0) add(d, es);
  }
  r.bytes_read = read;
  r.bytes_written = r.kclass == "reduction" ? 0 : largest;
  r.elements = elements;
  // Gathers read rows of their source, not all of it: index_select/embedding(src[R, ...], idx)
  // move idx.numel() rows; gather(src, dim, idx) moves idx.numel() elements.
  static const std::set<std::string> row_gathers = {"aten::index_select", "aten::embedding", "aten::index"};
  const bool gather = r.op == "aten::gather" || r.op == "aten::take";
  if ((row_gathers.count(r.op) != 0 || gather) && dims.size() >= 2 && !ty.empty() && dims[0].is_array() && !dims[0].empty() &&
      dims[0][0].is_number_integer()) {
    const auto& src = dims[0];
    uint64_t src_n = 1;
    for (const auto& x : src) src_n *= static_cast<uint64_t>(std::max<int64_t>(x.get<int64_t>(), 0));
    const uint64_t row = src.size() > 1 ? src_n / static_cast<uint64_t>(std::max<int64_t>(src[0].get<int64_t>(), 1)) : 1;
    uint64_t idx_n = 0;
    for (std::size_t i = 1; i < dims.size(); ++i) {
      if (dims[i].is_array() && !dims[i].empty() && dims[i][0].is_number_integer()) {
        idx_n = 1;
        for (const auto& x : dims[i]) idx_n *= static_cast<uint64_t>(std::max<int64_t>(x.get<int64_t>(), 0));
        break;
      }
    }
    const auto es = static_cast<uint64_t>(std::max(elem_size(ty[0]), 1));
    const uint64_t moved = (gather ? idx_n : idx_n * row) * es;
    r.bytes_read = moved + idx_n * 8;
    r.bytes_written = moved;
    r.elements = gather ? idx_n : idx_n * row;
  }
  // No kernel moves more than 8 TB/s (beyond any GPU's memory today): a shape-based estimate
  // above that for the traced time over-counts (broadcasts, views), so it is scaled down.
  const double cap = r.mean_ns() * 8e3;  // bytes
  const double total = static_cast<double>(r.bytes_read + r.bytes_written);
  if (r.count > 0 && total > cap && cap > 0) {
    const double f = cap / total;
    r.bytes_read = static_cast<uint64_t>(static_cast<double>(r.bytes_read) * f);
    r.bytes_written = static_cast<uint64_t>(static_cast<double>(r.bytes_written) * f);
    r.note = fmt::format("bytes from the op's shapes ({:.3g} MB) exceed 8 TB/s over the traced time: scaled to {:.3g} MB", total * 1e-6, cap * 1e-6);
  }
}

// A cuDNN tier's row whose shape cannot be read goes back to the `other` tier (a memory-bound
// kernel of its op's bytes); its note names the row and why.
void back_to_other(KernelRow& r, const std::string& why) {
  const std::string tier = r.tier;
  r.tier = "other";
  proxy_bytes(r);
  const std::string what = r.name.size() > 60 ? r.name.substr(0, 57) + "..." : r.name;
  r.note = fmt::format("{} {} ({}) not replayed through cuDNN: {}; {}", tier, what, r.op.empty() ? "no op" : r.op, why,
                       r.bytes_read > 0 ? "a memory-bound kernel moving the op's bytes stands in (tier other)"
                                        : "bytes unknown; time-matched memory proxy");
}

// A convolution: its cuDNN shape, and the bytes the engine moves if cuDNN cannot run it.
void conv_row(KernelRow& r) {
  std::string why;
  r.conv = conv_shape(r, why);
  if (!r.conv) return back_to_other(r, why);
  r.bytes_read = r.conv->bytes_read();
  r.bytes_written = r.conv->bytes_written();
  r.elements = numel(r.conv->output);
}

// An inference batch normalization: its cuDNN shape and bytes, as a convolution's. PyTorch's own
// BN kernels (native_batch_norm ..., a kernel name without "cudnn") are replayed through cuDNN's
// too: the note says so.
void batchnorm_row(KernelRow& r) {
  std::string why;
  r.batchnorm = batchnorm_shape(r, why);
  if (!r.batchnorm) return back_to_other(r, why);
  r.bytes_read = r.batchnorm->bytes_read();
  r.bytes_written = r.batchnorm->bytes_written();
  r.elements = numel(r.batchnorm->input);
  if (r.op != "aten::cudnn_batch_norm" && r.name.find("cudnn") == std::string::npos) r.note = "PyTorch's own batch-norm kernel (" + r.op + ") replayed as cuDNN's inference batch norm";
}

}  // namespace

std::string default_replay_tiers_path() {
  // Beside the kernel classes: the same search (JOULEPROF_DATA_DIR, beside the executable, source).
  const fs::path classes = default_kernel_classes_path();
  return (classes.parent_path() / "replay-tiers.tsv").string();
}

void derive_replay_parameters(KernelTable& t, const KernelTableOptions& o) {
  std::map<std::string, int> proxies;  // tier → rows that fall back to a proxy
  std::size_t done = 0;
  for (KernelRow& r : t.rows) {
    if (o.progress && ++done % 100000 == 0) o.progress(fmt::format("classes and tiers: {}/{} rows", done, t.rows.size()));
    r.kclass = o.classes->classify(r.kind == "kernel" ? r.name : r.kind == "memset" ? std::string("memset") : "memcpy " + r.copy_kind);
    r.tier = o.tiers->classify("kind:" + r.kind + " class:" + r.kclass + " op:" + r.op + " kernel:" + r.name);
    std::string why;
    if (r.tier == "gemm") {
      r.gemm = gemm_shape(r, why);
      if (!r.gemm) r.note = "gemm without shapes: " + why + "; replayed as a time-matched compute proxy";
    } else if (r.tier == "attention") {
      r.attention = attention_shape(r, why);
      if (!r.attention) r.note = "attention without shapes: " + why + "; replayed as a time-matched compute proxy";
      if (r.attention) r.note = attention_note(r);
    } else if (r.tier == "conv") {
      conv_row(r);
    } else if (r.tier == "batchnorm") {
      batchnorm_row(r);
    } else if (r.tier == "other") {
      proxy_bytes(r);
      if (r.bytes_read == 0) r.note = r.op.empty() ? "no launching op in the trace: bytes unknown; time-matched memory proxy"
                                                    : "the op has no tensor shapes: bytes unknown; time-matched memory proxy";
    }
    if (!r.note.empty() && r.note.find("proxy") != std::string::npos) ++proxies[r.tier];
  }
  for (const auto& [tier, n] : proxies) {
    t.warnings.push_back(fmt::format("{} {} row(s) fall back to time-matched proxies ({})", n, tier,
                                     t.shapes ? "their ops' shapes do not determine them" : "the trace has no input shapes: record with record_shapes=True"));
  }
  // Longest first; ties in a fixed order (parallel import collects rows in any order).
  auto key = [](const KernelRow& r) {
    return std::tie(r.name, r.kind, r.op, r.input_dims, r.input_types, r.input_strides, r.input_concrete, r.grid, r.block, r.bytes, r.rank,
                    r.device);
  };
  std::vector<uint32_t> order(t.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&](uint32_t ia, uint32_t ib) {
    const KernelRow& a = t.rows[ia];
    const KernelRow& b = t.rows[ib];
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return key(a) < key(b);
  });
  std::vector<KernelRow> sorted;
  sorted.reserve(t.rows.size());
  std::vector<uint32_t> new_index(t.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = static_cast<uint32_t>(i);
    sorted.push_back(std::move(t.rows[order[i]]));
  }
  t.rows = std::move(sorted);
  for (TraceActivity& a : t.activities) a.row = new_index[a.row];
  std::sort(t.activities.begin(), t.activities.end(), [](const TraceActivity& a, const TraceActivity& b) {
    return std::tie(a.device, a.start_ns, a.row) < std::tie(b.device, b.start_ns, b.row);
  });
  std::sort(t.annotations.begin(), t.annotations.end(), [](const TraceRange& a, const TraceRange& b) {
    return std::tie(a.start_ns, a.end_ns, a.name) < std::tie(b.start_ns, b.end_ns, b.name);
  });
}

namespace {

// jouleprof's own trace files: activities → rows (no ops: no shapes).
Result<void> import_jouleprof(const std::string& path, int rank, KernelTable& t) {
  std::error_code ec;
  Result<TraceData> data = fs::is_directory(path, ec) ? read_trace_dir(path) : [&]() -> Result<TraceData> {
    TraceData d;
    if (auto r = read_trace_file(path, d); !r) return r.error();
    return d;
  }();
  if (!data) return data.error();
  for (const ProcessTrace& p : data->processes) {
    if (!p.damage.empty()) t.warnings.push_back(p.file + ": " + p.damage + " (what precedes it is kept)");
    if (p.dropped > 0) t.warnings.push_back(fmt::format("{}: {} records dropped by CUPTI", p.file, p.dropped));
  }
  std::map<std::tuple<std::string, int, uint32_t, int, int, int, int, int, int, uint32_t, uint32_t, uint64_t>, std::size_t> index;
  std::map<std::pair<int, uint32_t>, std::vector<std::pair<int64_t, int64_t>>> intervals;
  uint64_t bad_launch = 0;
  for (const Activity& a : data->activities) {
    if (!a.on_gpu()) continue;
    const int64_t dur = a.end_ns - a.start_ns;
    // A negative launch dimension or duration is damage, not a kernel: kept out of the table and replay plans.
    if (dur < 0 || std::any_of(a.grid, a.grid + 3, [](int g) { return g < 0; }) || std::any_of(a.block, a.block + 3, [](int b) { return b < 0; })) {
      ++bad_launch;
      continue;
    }
    const uint32_t shared = a.static_shared_bytes + a.dynamic_shared_bytes;
    const uint64_t bytes = a.kind == Activity::Kind::kernel ? 0 : a.bytes;
    auto key = std::make_tuple(a.name, static_cast<int>(a.kind), a.device, a.grid[0], a.grid[1], a.grid[2], a.block[0], a.block[1],
                               a.block[2], a.registers, shared, bytes);
    auto [it, inserted] = index.emplace(key, t.rows.size());
    if (inserted) {
      KernelRow r;
      r.name = to_valid_utf8(a.name);  // JSON output needs valid UTF-8
      r.kind = activity_kind_name(a.kind);
      r.rank = rank + a.process;
      r.device = a.device;
      for (int d = 0; d < 3; ++d) {
        r.grid[d] = a.grid[d];
        r.block[d] = a.block[d];
      }
      r.registers = a.registers;
      r.shared_bytes = shared;
      r.bytes = bytes;
      if (a.kind == Activity::Kind::memset) r.copy_kind = "set";
      if (a.kind == Activity::Kind::memcpy) {
        const char* k = memcpy_kind_name(a.copy_kind);
        r.copy_kind = k != nullptr ? k : "unknown";
      }
      r.min_ns = r.max_ns = dur;
      t.rows.push_back(std::move(r));
    }
    KernelRow& r = t.rows[it->second];
    t.activities.push_back({static_cast<uint32_t>(it->second), (static_cast<uint32_t>(rank + a.process) << 8) | (a.device & 0xffu), a.start_ns, dur});
    ++r.count;
    r.total_ns += dur;
    r.min_ns = std::min(r.min_ns, dur);
    r.max_ns = std::max(r.max_ns, dur);
    if (a.kind == Activity::Kind::kernel) {
      ++t.kernels;
      t.kernel_ns += dur;
    } else if (a.kind == Activity::Kind::memcpy) {
      ++t.memcpys;
      t.memcpy_ns += dur;
    } else {
      ++t.memsets;
      t.memset_ns += dur;
    }
    intervals[{a.process, a.device}].emplace_back(a.start_ns, a.end_ns);
    ++t.events;
  }
  for (auto& [dev, iv] : intervals) {
    const replay_detail::BusySpan b = replay_detail::busy_and_span(iv);
    t.busy_ns += b.busy_ns;
    t.span_ns += b.span_ns;
    ++t.devices;
  }
  if (bad_launch > 0) {
    t.skipped_events += bad_launch;
    t.warnings.push_back(fmt::format("{}: skipped {} GPU activit{} with a negative grid, block or duration", path, bad_launch,
                                     bad_launch == 1 ? "y" : "ies"));
  }
  return {};
}

}  // namespace

Result<KernelTable> read_kernel_table(const std::vector<std::string>& paths, const KernelTableOptions& o) {
  KernelTable t;
  if (paths.empty()) return make_error(Errc::invalid_argument, "give a trace file");
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& p = paths[i];
    std::error_code ec;
    if (!fs::exists(p, ec)) return make_error(Errc::not_found, "no such trace: " + p);
#ifdef JOULEPROF_KINETO_NEEDS_AVX2
    if (!__builtin_cpu_supports("avx2")) {
      return make_error(Errc::unsupported, "reading Kineto traces needs a CPU with AVX2 (x86-64-v3)");
    }
#endif
    // The file is opened once: its first bytes tell a jouleprof trace from a Kineto one (a pipe
    // such as <(zcat t.json.gz) or /dev/stdin cannot be opened twice).
    bool own = fs::is_directory(p, ec);
    if (own) {
      bool any = false;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(trace_format::kFilePrefix, 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == trace_format::kFileSuffix) any = true;
      }
      if (!any) return make_error(Errc::invalid_argument, p + " is a directory with no jouleprof trace files (" + std::string(trace_format::kFilePrefix) + "*" + trace_format::kFileSuffix + ") in it");
    }
    Result<void> r = own ? Result<void>{} : import_trace_file(p, static_cast<int>(i), t, o, own);
    if (!r) return r.error();
    const std::string format = own ? "jouleprof" : "kineto";
    if (!t.format.empty() && t.format != format) return make_error(Errc::invalid_argument, "mixed trace formats: " + paths[0] + " and " + p);
    t.format = format;
    if (own) {
      if (auto j = import_jouleprof(p, static_cast<int>(i), t); !j) return j.error();
    }
    t.files.push_back(p);
  }
  if (t.format == "kineto" && !t.shapes) {
    t.warnings.push_back("the trace has no input shapes (PyTorch profiler record_shapes=False): GEMM and attention rows are replayed as time-matched proxies");
  }
  if (t.devices > 1) t.warnings.push_back(fmt::format("GPU activity on {} devices/ranks: counts and times are summed over them", t.devices));
  std::vector<std::string> names = t.gpus;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.size() > 1) t.warnings.push_back("the traces come from different GPU models: " + fmt::format("{}", fmt::join(names, ", ")));
  t.gpus = names;
  derive_replay_parameters(t, o);
  return t;
}

namespace {

nlohmann::json row_json(const KernelRow& r) {
  nlohmann::json j = {{"name", r.name},
                      {"kind", r.kind},
                      {"class", r.kclass},
                      {"tier", r.tier},
                      {"rank", r.rank},
                      {"device", r.device},
                      {"count", r.count},
                      {"total_duration_s", static_cast<double>(r.total_ns) * 1e-9},
                      {"total_duration_ns", r.total_ns},
                      {"mean_duration_s", r.mean_ns() * 1e-9},
                      {"min_duration_s", static_cast<double>(r.min_ns) * 1e-9},
                      {"max_duration_s", static_cast<double>(r.max_ns) * 1e-9}};
  if (r.kind == "kernel") {
    j["grid"] = {r.grid[0], r.grid[1], r.grid[2]};
    j["block"] = {r.block[0], r.block[1], r.block[2]};
    j["registers_per_thread"] = r.registers;
    j["shared_memory_bytes"] = r.shared_bytes;
    if (r.graph >= 0) j["graph_id"] = r.graph;
  } else {
    j["bytes"] = r.bytes;
    j["copy_kind"] = r.copy_kind;
  }
  j["op"] = r.op;
  if (!r.input_dims.empty()) {
    j["input_dims"] = nlohmann::json::parse(r.input_dims, nullptr, false);
    // A field the trace lacks (older profilers: no strides) is left out, never a discarded value.
    if (!r.input_types.empty()) j["input_types"] = nlohmann::json::parse(r.input_types, nullptr, false);
    if (!r.input_strides.empty()) j["input_strides"] = nlohmann::json::parse(r.input_strides, nullptr, false);
    if (!r.input_concrete.empty()) j["concrete_inputs"] = nlohmann::json::parse(r.input_concrete, nullptr, false);
  }
  if (r.gemm) {
    const GemmShape& g = *r.gemm;
    j["gemm"] = {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"batch", g.batch}, {"trans_a", g.trans_a}, {"trans_b", g.trans_b},
                 {"lda", g.lda}, {"ldb", g.ldb}, {"ldc", g.ldc}, {"stride_a", g.stride_a}, {"stride_b", g.stride_b},
                 {"stride_c", g.stride_c}, {"dtype_a", g.dtype_a}, {"dtype_b", g.dtype_b}, {"dtype_c", g.dtype_c},
                 {"accumulate", g.accumulate}, {"flops", g.flops()}};
  }
  if (r.attention) {
    const AttentionShape& a = *r.attention;
    j["attention"] = {{"batch", a.batch}, {"heads_q", a.heads_q}, {"heads_kv", a.heads_kv}, {"seq_q", a.seq_q},
                      {"seq_kv", a.seq_kv}, {"head_dim", a.head_dim}, {"dtype", a.dtype}, {"causal", a.causal},
                      {"causal_from", a.causal_from}, {"masked", a.masked}};
    if (a.scale) j["attention"]["scale"] = *a.scale;
  }
  if (r.conv) {
    const ConvShape& c = *r.conv;
    j["conv"] = {{"input", c.input}, {"weight", c.weight}, {"output", c.output}, {"stride", c.stride}, {"padding", c.padding},
                 {"dilation", c.dilation}, {"groups", c.groups}, {"channels_last", c.channels_last}, {"allow_tf32", c.allow_tf32},
                 {"dtype", c.dtype}, {"flops", c.flops()}};
  }
  if (r.batchnorm) {
    const BatchNormShape& b = *r.batchnorm;
    j["batchnorm"] = {{"input", b.input}, {"channels_last", b.channels_last}, {"dtype", b.dtype}};
  }
  if (r.tier == "other" || r.tier == "conv" || r.tier == "batchnorm") {
    j["bytes_read"] = r.bytes_read;
    j["bytes_written"] = r.bytes_written;
    j["elements"] = r.elements;
  }
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

struct TierSum {
  uint64_t rows = 0, count = 0;
  int64_t ns = 0;
};

std::map<std::string, TierSum> tier_sums(const KernelTable& t) {
  std::map<std::string, TierSum> s;
  for (const KernelRow& r : t.rows) {
    TierSum& x = s[r.tier];
    ++x.rows;
    x.count += r.count;
    x.ns += r.total_ns;
  }
  return s;
}

}  // namespace

std::string kernel_table_json(const KernelTable& t) {
  nlohmann::json j;
  j["schema"] = "jouleprof.kernels";
  j["schema_version"] = 1;
  j["format"] = t.format;
  j["files"] = t.files;
  j["gpus"] = t.gpus;
  j["shapes"] = t.shapes;
  j["totals"] = {{"kernels", t.kernels},
                 {"memcpys", t.memcpys},
                 {"memsets", t.memsets},
                 {"unique_rows", t.rows.size()},
                 {"kernel_duration_s", static_cast<double>(t.kernel_ns) * 1e-9},
                 {"kernel_duration_ns", t.kernel_ns},
                 {"memcpy_duration_ns", t.memcpy_ns},
                 {"memset_duration_ns", t.memset_ns},
                 {"gpu_span_s", static_cast<double>(t.span_ns) * 1e-9},
                 {"gpu_busy_s", static_cast<double>(t.busy_ns) * 1e-9},
                 {"gpu_idle_s", static_cast<double>(t.idle_ns()) * 1e-9},
                 {"devices", t.devices},
                 {"events", t.events},
                 {"skipped_events", t.skipped_events},
                 {"graph_kernels", t.graph_kernels}};
  nlohmann::json tiers = nlohmann::json::array();
  for (const auto& [tier, s] : tier_sums(t)) {
    tiers.push_back({{"tier", tier}, {"rows", s.rows}, {"count", s.count}, {"total_duration_s", static_cast<double>(s.ns) * 1e-9}});
  }
  j["tiers"] = tiers;
  j["warnings"] = t.warnings;
  nlohmann::json rows = nlohmann::json::array();
  for (const KernelRow& r : t.rows) rows.push_back(row_json(r));
  j["kernels"] = std::move(rows);
  return j.dump(1) + "\n";
}

std::string kernel_table_csv(const KernelTable& t) {
  std::string out =
      "name,kind,class,tier,rank,device,grid_x,grid_y,grid_z,block_x,block_y,block_z,registers_per_thread,shared_memory_bytes,bytes,"
      "copy_kind,op,input_dims,input_types,count,total_duration_ns,mean_duration_s,gemm_m,gemm_n,gemm_k,gemm_batch,gemm_trans_a,"
      "gemm_trans_b,gemm_dtype,bytes_read,bytes_written,note\n";
  for (const KernelRow& r : t.rows) {
    const GemmShape g = r.gemm.value_or(GemmShape{});
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.9g},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.name),
                       r.kind, r.kclass, r.tier, r.rank, r.device, r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2],
                       r.registers, r.shared_bytes, r.bytes, r.copy_kind, csv_field(r.op), csv_field(r.input_dims),
                       csv_field(r.input_types), r.count, r.total_ns, r.mean_ns() * 1e-9, r.gemm ? std::to_string(g.m) : "",
                       r.gemm ? std::to_string(g.n) : "", r.gemm ? std::to_string(g.k) : "", r.gemm ? std::to_string(g.batch) : "",
                       r.gemm ? (g.trans_a ? "1" : "0") : "", r.gemm ? (g.trans_b ? "1" : "0") : "", r.gemm ? g.dtype_a : "",
                       r.tier == "other" ? std::to_string(r.bytes_read) : "", r.tier == "other" ? std::to_string(r.bytes_written) : "",
                       csv_field(r.note));
  }
  return out;
}

std::string kernel_table_text(const KernelTable& t, std::size_t top) {
  std::string out = fmt::format("{} trace ({} file{}{}): {} kernels, {} memcpys, {} memsets in {} unique rows\n", t.format, t.files.size(),
                                t.files.size() == 1 ? "" : "s", t.gpus.empty() ? "" : ", " + for_terminal(fmt::format("{}", fmt::join(t.gpus, ", "))),
                                t.kernels, t.memcpys, t.memsets, t.rows.size());
  out += fmt::format("kernel time {:.3f} ms, copies {:.3f} ms; GPU span {:.3f} ms, busy {:.3f} ms, idle {:.3f} ms\n",
                     static_cast<double>(t.kernel_ns) * 1e-6, static_cast<double>(t.memcpy_ns + t.memset_ns) * 1e-6,
                     static_cast<double>(t.span_ns) * 1e-6, static_cast<double>(t.busy_ns) * 1e-6, static_cast<double>(t.idle_ns()) * 1e-6);
  out += fmt::format("\n{:<14} {:>6} {:>9} {:>12} {:>7}\n", "tier", "rows", "count", "time ms", "share");
  const double gpu = static_cast<double>(std::max<int64_t>(t.gpu_ns(), 1));
  for (const auto& [tier, s] : tier_sums(t)) {
    out += fmt::format("{:<14} {:>6} {:>9} {:>12.3f} {:>6.1f}%\n", for_terminal(tier), s.rows, s.count, static_cast<double>(s.ns) * 1e-6,
                       100.0 * static_cast<double>(s.ns) / gpu);
  }
  out += fmt::format("\n{:<10} {:>7} {:>10} {:>9}  {:<28} {}\n", "tier", "count", "total ms", "mean us", "shape", "kernel (op)");
  for (std::size_t i = 0; i < t.rows.size() && i < top; ++i) {
    const KernelRow& r = t.rows[i];
    std::string shape;
    if (r.gemm) {
      shape = fmt::format("{}x{}x{}{} {}{}", r.gemm->m, r.gemm->n, r.gemm->k, r.gemm->batch > 1 ? fmt::format(" b{}", r.gemm->batch) : "",
                          r.gemm->trans_a ? "T" : "N", r.gemm->trans_b ? "T" : "N");
      shape += " " + r.gemm->dtype_a;
    } else if (r.attention) {
      shape = fmt::format("b{} h{}/{} s{}/{} d{}", r.attention->batch, r.attention->heads_q, r.attention->heads_kv, r.attention->seq_q,
                          r.attention->seq_kv, r.attention->head_dim);
    } else if (r.conv) {
      shape = fmt::format("{} k{} s{} g{}{} {}", fmt::join(r.conv->input, "x"), fmt::join(r.conv->weight.begin() + 2, r.conv->weight.end(), "x"),
                          r.conv->stride[0], r.conv->groups, r.conv->channels_last ? " NHWC" : "", r.conv->dtype);
    } else if (r.batchnorm) {
      shape = fmt::format("bn {}{} {}", fmt::join(r.batchnorm->input, "x"), r.batchnorm->channels_last ? " NHWC" : "", r.batchnorm->dtype);
    } else if (r.kind != "kernel") {
      shape = fmt::format("{} B {}", r.bytes, r.copy_kind);
    } else if (r.bytes_read > 0) {
      shape = fmt::format("{:.3g} MB r/w", static_cast<double>(r.bytes_read + r.bytes_written) * 1e-6);
    }
    // Names come from the trace: escaped (ESC, CR, LF ...) so that they cannot move the cursor or fake rows.
    std::string name = for_terminal(r.name);
    if (name.size() > 70) name = name.substr(0, 67) + "...";
    out += fmt::format("{:<10} {:>7} {:>10.3f} {:>9.2f}  {:<28} {}{}\n", for_terminal(r.tier), r.count, static_cast<double>(r.total_ns) * 1e-6,
                       r.mean_ns() * 1e-3, shape, name, r.op.empty() ? "" : " (" + for_terminal(r.op) + ")");
  }
  for (const std::string& w : t.warnings) out += "warning: " + for_terminal(w) + "\n";
  return out;
}

}  // namespace jouleprof
