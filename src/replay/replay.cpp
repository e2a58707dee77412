#include "jouleprof/replay/replay.hpp"

#include "jouleprof/result/sections.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "intervals.hpp"

namespace jouleprof {
namespace {

using nlohmann::json;

std::string op_signature(const KernelRow& r) { return r.op + "\x1f" + r.input_dims + "\x1f" + r.input_types + "\x1f" + r.input_strides; }

// GEMM rows launched by one op call (a split-K GEMM and its reduction): one replay of the call
// stands for all of them; the longest row carries it.
std::map<std::size_t, std::size_t> gemm_companions(const KernelTable& t) {
  std::map<std::string, std::size_t> primary;
  std::map<std::size_t, std::size_t> with;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {  // rows are longest first
    const KernelRow& r = t.rows[i];
    if (!replays_op_call(r) || r.kind != "kernel") continue;
    auto [it, inserted] = primary.emplace(op_signature(r), i);
    if (!inserted && t.rows[it->second].count == r.count) with[i] = it->second;
  }
  return with;
}

// Ops whose B operand is a layer's weight (nn.Linear: mm(input, weight.t()), addmm(bias, input,
// weight.t()), linear): each layer has its own, read from memory on every call.
bool b_is_weight(const std::string& op) {
  return op == "aten::mm" || op == "aten::addmm" || op == "aten::linear" || op == "aten::_addmm_activation";
}

json item_json(const KernelRow& r, std::size_t row, std::string& why) {
  json j = {{"row", row}, {"grid", {r.grid[0], r.grid[1], r.grid[2]}}, {"block", {r.block[0], r.block[1], r.block[2]}}};
  if (r.tier == "copy") {
    if (r.copy_kind != "HtoD" && r.copy_kind != "DtoH" && r.copy_kind != "DtoD" && r.copy_kind != "set") {
      why = "copy kind " + r.copy_kind + " is not replayed";
      return {};
    }
    j["tier"] = "copy";
    j["copy_kind"] = r.copy_kind;
    j["bytes"] = r.bytes;
  } else if (r.tier == "gemm" && r.gemm) {
    const GemmShape& g = *r.gemm;
    j.update({{"tier", "gemm"}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"batch", g.batch}, {"trans_a", g.trans_a}, {"trans_b", g.trans_b},
              {"lda", g.lda}, {"ldb", g.ldb}, {"ldc", g.ldc}, {"stride_a", g.stride_a}, {"stride_b", g.stride_b},
              {"stride_c", g.stride_c}, {"dtype", g.dtype_a}, {"accumulate", g.accumulate}, {"weight_b", b_is_weight(r.op)}});
  } else if (r.tier == "attention" && r.attention) {
    const AttentionShape& a = *r.attention;
    j.update({{"tier", "attention"}, {"batch", a.batch}, {"heads_q", a.heads_q}, {"heads_kv", a.heads_kv}, {"seq_q", a.seq_q},
              {"seq_kv", a.seq_kv}, {"head_dim", a.head_dim}, {"dtype", a.dtype}, {"causal", a.causal}, {"causal_from", a.causal_from}});
    if (a.scale) j["scale"] = *a.scale;  // else the engine's 1/sqrt(head_dim), PyTorch's default
  } else if (r.tier == "conv" && r.conv) {
    j.update(json::parse(conv_item_json(r)));
  } else if (r.tier == "batchnorm" && r.batchnorm) {
    j.update(json::parse(batchnorm_item_json(r)));
  } else if (r.tier == "communication") {
    why = "collectives need their peers: not replayed on one GPU";
    return {};
  } else if (r.tier == "other" && r.bytes_read > 0) {
    j.update({{"tier", "other"}, {"bytes_read", r.bytes_read}, {"bytes_written", r.bytes_written}});
  } else {
    // No shapes: a proxy with the traced launch shape, tuned to the traced time.
    j["tier"] = (r.tier == "gemm" || r.tier == "attention") ? "proxy_compute" : "proxy_memory";
    j["target_ns"] = r.mean_ns();
  }
  return j;
}

// The context sequence: `context_activities` activities of the device with the most, in
// `context_windows` contiguous windows spread evenly over the trace, each with the traced gap
// before it (start minus the latest end so far) and its start-to-start time from the previous one
// (the engine launches at those times, as the traced program did).
// Rows a single GPU cannot re-create (collectives ...) stand in as a wait of their traced time.
json context_plan(const KernelTable& t, const ReplayOptions& o, const std::map<std::size_t, std::size_t>& with) {
  if (t.activities.empty() || o.context_activities == 0 || o.context_windows < 1) return nullptr;
  std::map<uint32_t, std::pair<std::size_t, std::size_t>> devices;  // device → [first, end) in activities
  for (std::size_t i = 0; i < t.activities.size(); ++i) {
    auto [it, inserted] = devices.emplace(t.activities[i].device, std::make_pair(i, i + 1));
    if (!inserted) it->second.second = i + 1;
  }
  auto busiest = devices.begin();
  for (auto it = devices.begin(); it != devices.end(); ++it) {
    if (it->second.second - it->second.first > busiest->second.second - busiest->second.first) busiest = it;
  }
  const auto [first, end] = busiest->second;
  const std::size_t n = end - first;
  const std::size_t windows = std::min<std::size_t>(static_cast<std::size_t>(o.context_windows), n);
  const std::size_t per = std::max<std::size_t>(1, std::min(n, o.context_activities) / windows);
  json seq = json::array(), specs = json::object(), spans = json::array();
  int64_t span_ns = 0;
  for (std::size_t w = 0; w < windows; ++w) {
    // Window w starts at the middle of its share of the trace, minus half a window.
    const std::size_t share0 = first + n * w / windows, share1 = first + n * (w + 1) / windows;
    const std::size_t mid = (share0 + share1) / 2;
    const std::size_t a = std::max(share0, mid >= per / 2 ? mid - per / 2 : share0), b = std::min(share1, a + per);
    int64_t latest_end = t.activities[a].start_ns, prev_start = -1;
    for (std::size_t i = a; i < b; ++i) {
      const TraceActivity& x = t.activities[i];
      const int64_t gap = std::max<int64_t>(0, x.start_ns - latest_end);
      latest_end = std::max(latest_end, x.start_ns + x.dur_ns);
      if (with.count(x.row) != 0) continue;  // inside its op call's primary row's replay
      // [row, gap before it, start-to-start time since the previous entry (a window's first: 0)]
      seq.push_back({x.row, gap, prev_start < 0 ? 0 : x.start_ns - prev_start});
      prev_start = x.start_ns;
      const std::string key = std::to_string(x.row);
      if (!specs.contains(key)) {
        std::string why;
        json item = item_json(t.rows[x.row], x.row, why);
        if (!why.empty()) item = {{"row", x.row}, {"tier", "wait"}, {"target_ns", t.rows[x.row].mean_ns()}, {"reason", why}};
        item["traced_ns"] = t.rows[x.row].mean_ns();
        specs[key] = item;
      }
    }
    span_ns += latest_end - t.activities[a].start_ns;
    spans.push_back({a - first, b - a});
  }
  return {{"device", busiest->first}, {"windows", spans}, {"traced_span_ns", span_ns}, {"sequence", seq}, {"rows", specs},
          {"trial_s", o.context_trial_s}, {"trials", o.context_trials}};
}

// The context replay's figures: one pass of the sequence against the same activities' isolated
// per-call figures; the difference, per second of the pass not spent in isolated kernel time, is
// the gaps' power in context (the GPU between real neighbours: clocks, temperature, power that does
// not drop in microseconds).
ContextFigures context_figures(const ReplayPrediction& p, const json& m) {
  ContextFigures c;
  if (!m.contains("context") || !m["context"].is_object()) {
    c.reason = "the replay has no context measurement";
    return c;
  }
  const json& x = m["context"];
  if (x.value("status", "") != "ok") {
    c.reason = "context replay skipped: " + x.value("reason", std::string("?"));
    return c;
  }
  auto num = [&](const char* k) { return x.contains(k) && x[k].is_number() ? x[k].get<double>() : std::nan(""); };
  c.pass_time_s = num("pass_time_ns") * 1e-9;
  c.pass_energy_j = num("pass_energy_j");
  c.pass_energy_half_width_j = num("pass_energy_j_half_width");
  c.traced_span_s = num("traced_span_ns") * 1e-9;
  c.temperature_c = num("temperature_c");
  if (!std::isfinite(c.pass_time_s) || !std::isfinite(c.pass_energy_j) || c.pass_time_s <= 0) {
    c.reason = "context replay without pass time/energy";
    return c;
  }
  // The pass must run at the traced pace: a pass much slower or faster than the traced windows
  // re-created another program (ResNet-50's ran 6.5x slower: stand-ins far off their kernels'
  // times), and the power between its kernels says nothing about the traced gaps.
  if (std::isfinite(c.traced_span_s) && c.traced_span_s > 0 && std::fabs(c.pass_time_s / c.traced_span_s - 1) > 0.10) {
    c.reason = fmt::format("the context pass ran at {:.2f}x the traced time ({:.2f} ms for {:.2f} ms traced; more than 10% off the traced pace), "
                           "so its gap power is not used",
                           c.pass_time_s / c.traced_span_s, c.pass_time_s * 1e3, c.traced_span_s * 1e3);
    return c;
  }
  const json counts = x.value("row_counts", json::object());  // a local: items() of a temporary would dangle
  double isolated_var = 0;
  for (const auto& [key, n] : counts.items()) {
    char* end = nullptr;
    const std::size_t row = std::strtoul(key.c_str(), &end, 10);
    if (!n.is_number() || end == key.c_str() || *end != '\0' || row >= p.rows.size()) {
      c.reason = "context row " + key + " is not in the kernel table";
      return c;
    }
    const double calls = n.get<double>();
    c.activities += static_cast<std::size_t>(calls);
    const RowPrediction& r = p.rows[row];  // the engine's own figures: the pass ran the same stand-ins
    c.isolated_time_s += calls * r.engine_time_ns() * 1e-9;
    c.isolated_energy_j += calls * r.engine_energy_j();
    if (r.status == "replayed") isolated_var += std::pow(calls * r.energy_half_width_j, 2);
  }
  c.stand_ins = x.value("stand_ins", std::size_t{0});  // waits: part of the gap time
  c.activities += c.stand_ins;
  c.gap_time_s = c.pass_time_s - c.isolated_time_s;
  if (c.gap_time_s < 0.02 * c.pass_time_s) {
    c.reason = fmt::format("the context pass ({:.3f} ms) leaves no gap time beyond its isolated kernels ({:.3f} ms)", c.pass_time_s * 1e3,
                           c.isolated_time_s * 1e3);
    return c;
  }
  c.gap_power_w = (c.pass_energy_j - c.isolated_energy_j) / c.gap_time_s;
  const double pass_hw = std::isfinite(c.pass_energy_half_width_j) ? c.pass_energy_half_width_j : 0;
  c.gap_power_half_width_w = std::sqrt(pass_hw * pass_hw + isolated_var) / c.gap_time_s;
  if (!(c.gap_power_w > 0)) {
    c.reason = fmt::format("the context pass drew less ({:.3f} J) than its kernels in isolation ({:.3f} J)", c.pass_energy_j, c.isolated_energy_j);
    return c;
  }
  c.measured = true;
  return c;
}

}  // namespace

std::string replay_plan_json(const KernelTable& t, const ReplayOptions& o) {
  const auto with = gemm_companions(t);
  json items = json::array(), skipped = json::array();
  const double gpu = static_cast<double>(std::max<int64_t>(t.gpu_ns(), 1));
  double covered = 0;
  std::size_t planned = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const KernelRow& r = t.rows[i];
    if (with.count(i) != 0) {
      covered += static_cast<double>(r.total_ns);
      continue;
    }
    if (covered / gpu >= o.coverage || planned >= o.max_rows) {
      skipped.push_back({{"row", i}, {"reason", "below the coverage cutoff"}});
      continue;
    }
    std::string why;
    json item = item_json(r, i, why);
    covered += static_cast<double>(r.total_ns);
    if (!why.empty()) {
      skipped.push_back({{"row", i}, {"reason", why}});
      continue;
    }
    items.push_back(item);
    ++planned;
  }
  // The gaps' power is measured with the trace's mean gap between GPU activities (10 µs – 1 ms).
  const double activities = static_cast<double>(std::max<uint64_t>(t.kernels + t.memcpys + t.memsets, 1));
  const double gap_us = o.gap_us > 0 ? o.gap_us : std::clamp(static_cast<double>(t.idle_ns()) / activities / 1e3, 10.0, 1000.0);
  json plan = {{"schema", "jouleprof.replay_plan"}, {"schema_version", 1}, {"trials", o.trials}, {"trial_s", o.trial_s},
               {"settle_s", o.settle_s}, {"warmup_s", o.warmup_s}, {"gap_s", o.gap_s}, {"gap_us", gap_us},
               {"ci_target", o.ci_target}, {"ci_min_ns", o.ci_min_ns}, {"long_trial_s", o.long_trial_s},
               {"max_trials", o.max_trials}, {"row_cap_s", o.row_cap_s},
               {"items", items}, {"not_replayed", skipped}};
  if (json ctx = context_plan(t, o, with); !ctx.is_null()) plan["context"] = ctx;
  return plan.dump(1) + "\n";
}

namespace {

// "[json.exception.type_error.302] type must be number, but is string" → "type must be number, but is string".
std::string json_message(const json::exception& e) {
  std::string w = e.what();
  if (const auto close = w.find("] "); w.rfind("[json.exception", 0) == 0 && close != std::string::npos) w = w.substr(close + 2);
  return w;
}

// The engine's figures must be physical: a negative energy, a power beyond any GPU's or a row
// given twice is a damaged or hand-edited file, refused with the row named.
Result<void> check_measurements(const json& m, std::size_t rows) {
  auto in_range = [](const json& j, const char* k, double lo, double hi, bool required) -> std::optional<std::string> {
    if (!j.contains(k)) return required ? std::optional<std::string>(fmt::format("no {}", k)) : std::nullopt;
    if (!j[k].is_number()) return fmt::format("{} is not a number", k);
    const double v = j[k].get<double>();
    if (!std::isfinite(v) || v < lo || v > hi) return fmt::format("{} = {:g} is outside [{:g}, {:g}]", k, v, lo, hi);
    return std::nullopt;
  };
  constexpr double kMaxW = 5000;  // no GPU draws more
  for (const char* k : {"idle_w", "gap_w"}) {
    if (auto e = in_range(m, k, 0, kMaxW, std::string(k) == "gap_w")) return make_error(Errc::parse, "replay measurements: " + *e);
  }
  if (!m["items"].is_array()) return make_error(Errc::parse, "replay measurements: items is not an array");
  std::vector<bool> seen(rows, false);
  for (const json& it : m["items"]) {
    if (!it.is_object()) return make_error(Errc::parse, "replay measurements: an item is not an object");
    if (!it.contains("row") || !it["row"].is_number_unsigned()) return make_error(Errc::parse, "replay measurements: an item has no row number");
    const auto row = it["row"].get<std::size_t>();
    if (row >= rows) return make_error(Errc::parse, "replay measurements: row " + std::to_string(row) + " is not in the kernel table");
    if (seen[row]) return make_error(Errc::parse, "replay measurements: row " + std::to_string(row) + " appears twice");
    seen[row] = true;
    if (!it.contains("status") || !it["status"].is_string()) return make_error(Errc::parse, "replay measurements: row " + std::to_string(row) + " has no status");
    if (it["status"] != "ok") continue;
    for (auto [k, lo, hi, req] : {std::tuple{"time_ns", 1e-3, 1e12, true}, {"power_w", 0.0, kMaxW, true}, {"energy_j", 0.0, 1e6, true},
                                  {"time_ns_half_width", 0.0, 1e12, false}, {"energy_j_half_width", 0.0, 1e6, false}}) {
      if (auto e = in_range(it, k, lo, hi, req)) return make_error(Errc::parse, "replay measurements: row " + std::to_string(row) + ": " + *e);
    }
  }
  if (m.contains("context") && m["context"].is_object() && m["context"].value("status", "") == "ok") {
    const json& c = m["context"];
    for (auto [k, lo, hi] : {std::tuple{"pass_time_ns", 1e-3, 1e13}, {"pass_energy_j", 0.0, 1e7}, {"traced_span_ns", 0.0, 1e13}}) {
      if (auto e = in_range(c, k, lo, hi, true)) return make_error(Errc::parse, "replay measurements: context: " + *e);
    }
  }
  return {};
}

Result<ReplayPrediction> predict_impl(const KernelTable& t, const json& m);

}  // namespace

Result<ReplayPrediction> predict_from_replay(const KernelTable& t, const std::string& measurements_json) {
  json m;
  try {
    m = json::parse(measurements_json);
  } catch (const json::exception& e) {
    return make_error(Errc::parse, std::string("replay measurements: invalid JSON: ") + json_message(e));
  }
  if (!m.is_object() || m.value("schema", "") != "jouleprof.replay_measurements" || !m.contains("items")) {
    return make_error(Errc::parse, "replay measurements: not jouleprof-replay's output (schema jouleprof.replay_measurements)");
  }
  try {
    if (auto c = check_measurements(m, t.rows.size()); !c) return c.error();
    return predict_impl(t, m);
  } catch (const json::exception& e) {
    return make_error(Errc::parse, "replay measurements: a value of the wrong type: " + json_message(e));
  }
}

namespace {

double number_or_nan(const json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan(""); }

// Every row starts extrapolated; a GEMM companion rides with its op call's replayed row.
void start_rows(const KernelTable& t, const json& m, ReplayPrediction& p) {
  p.rows.assign(t.rows.size(), RowPrediction{});
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    p.rows[i].traced_ns = t.rows[i].mean_ns();
    p.rows[i].status = "extrapolated";
    p.rows[i].reason = "not in the replay";
  }
  for (const auto& [row, with] : gemm_companions(t)) {
    p.rows[row].status = "with_row";
    p.rows[row].with_row = static_cast<int>(with);
    p.rows[row].reason = "";
  }
  if (m.contains("not_replayed")) {
    for (const json& s : m["not_replayed"]) {
      const auto row = s.value("row", std::size_t{0});
      if (row < p.rows.size()) p.rows[row].reason = s.value("reason", "");
    }
  }
}

// The engine's items: the replayed rows' time, power and energy.
Result<void> read_items(const KernelTable& t, const json& m, ReplayPrediction& p) {
  for (const json& it : m["items"]) {
    const auto row = it.value("row", SIZE_MAX);
    if (row >= p.rows.size()) return make_error(Errc::parse, "replay measurements: row " + std::to_string(row) + " is not in the kernel table");
    RowPrediction& r = p.rows[row];
    if (it.value("status", "") != "ok") {
      r.reason = "skipped by the engine: " + it.value("reason", std::string("?"));
      continue;
    }
    r.status = "replayed";
    r.reason.clear();
    const KernelRow& k = t.rows[row];
    r.proxy = !((replays_op_call(k) && it.value("tier", k.tier) == k.tier) || k.tier == "copy");  // engine's tier: a conv's stand-in
    r.time_matched = it.value("tier", std::string()).rfind("proxy_", 0) == 0;  // tuned to the traced time
    r.time_ns = number_or_nan(it, "time_ns");
    r.time_half_width_ns = number_or_nan(it, "time_ns_half_width");
    r.power_w = number_or_nan(it, "power_w");
    r.energy_j = number_or_nan(it, "energy_j");
    r.energy_half_width_j = number_or_nan(it, "energy_j_half_width");
    if (it.contains("trial_power_w")) r.trial_power_w = it["trial_power_w"].get<std::vector<double>>();
    if (it.contains("trial_time_ns")) r.trial_time_ns = it["trial_time_ns"].get<std::vector<double>>();
    if (!std::isfinite(r.time_ns) || !std::isfinite(r.energy_j)) return make_error(Errc::parse, "replay measurements: row " + std::to_string(row) + " lacks time/energy");
    r.replayed_time_ns = r.time_ns;
    r.replayed_energy_j = r.energy_j;
  }
  return {};
}

// Σ P·t and Σ t of the replayed rows, per tier and over all: the power of the rows not replayed is
// the time-weighted mean of the replayed rows of their tier (else of all replayed rows).
struct ReplayedPower {
  std::map<std::string, std::pair<double, double>> tier;
  std::pair<double, double> all{0, 0};
};

ReplayedPower replayed_power(const KernelTable& t, const ReplayPrediction& p) {
  ReplayedPower pt;
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    const RowPrediction& r = p.rows[i];
    if (r.status != "replayed") continue;
    const double tt = r.time_ns * static_cast<double>(t.rows[i].count);
    pt.tier[t.rows[i].tier].first += r.power_w * tt;
    pt.tier[t.rows[i].tier].second += tt;
    pt.all.first += r.power_w * tt;
    pt.all.second += tt;
  }
  return pt;
}

// Each row's predicted time and energy, summed per tier into p.tiers; returns how many rows were
// extrapolated.
std::size_t predict_tiers(const KernelTable& t, ReplayPrediction& p, ReplayedPower& pt) {
  // The replay's own time stands for the op call's other GEMM rows (its companions): compare the
  // call's replayed time with the traced time of all its kernels.
  std::map<int, double> companion_traced_ns;
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    if (p.rows[i].status == "with_row") companion_traced_ns[p.rows[i].with_row] += t.rows[i].mean_ns();
  }
  std::map<std::string, TierPrediction> tiers;
  std::size_t extrapolated = 0;
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    RowPrediction& r = p.rows[i];
    const KernelRow& k = t.rows[i];
    TierPrediction& tp = tiers[k.tier];
    tp.tier = k.tier;
    tp.count += k.count;
    ++tp.rows;
    tp.traced_s += static_cast<double>(k.total_ns) * 1e-9;
    const double n = static_cast<double>(k.count);
    if (r.status == "replayed") {
      ++tp.replayed;
      const double traced = r.traced_ns + companion_traced_ns[static_cast<int>(i)];
      r.time_off = traced > 0 && std::fabs(r.time_ns / traced - 1) > 0.10;
      // Every replayed row counts with its own replayed time and energy (stand-ins too: a
      // prediction, not the trace's figure; the time check flags the rows far off).
    } else if (r.status == "extrapolated") {
      ++tp.extrapolated;
      ++extrapolated;
      const auto tier_pt = pt.tier.count(k.tier) != 0 && pt.tier[k.tier].second > 0 ? pt.tier[k.tier] : pt.all;
      r.time_ns = r.traced_ns;
      r.power_w = tier_pt.first / tier_pt.second;
      r.energy_j = r.power_w * r.time_ns * 1e-9;
    } else {  // with_row: inside its primary's replay
      ++tp.replayed;
      r.time_ns = 0;
      r.energy_j = 0;
    }
    tp.predicted_s += n * r.time_ns * 1e-9;
    tp.replayed_s += n * r.engine_time_ns() * 1e-9;
    tp.energy_j += n * r.energy_j;
    tp.energy_at_traced_time_j += static_cast<double>(k.total_ns) * 1e-9 * (r.status == "with_row" ? p.rows[static_cast<std::size_t>(r.with_row)].power_w : r.power_w);
  }
  for (auto& [name, tp] : tiers) p.tiers.push_back(tp);
  return extrapolated;
}

// The run's time and energy: the kernels' (per tier) plus the gaps' at the in-context gap power
// when the engine measured it.
void predict_totals(const KernelTable& t, const json& m, ReplayPrediction& p) {
  p.traced_gpu_s = static_cast<double>(t.gpu_ns()) * 1e-9;
  p.traced_time_s = static_cast<double>(t.span_ns) * 1e-9;
  p.gap_time_s = static_cast<double>(t.idle_ns()) * 1e-9;
  p.isolated_gap_w = p.gap_w;
  p.context = context_figures(p, m);
  if (p.context.measured) {
    p.gap_w = p.context.gap_power_w;
  } else {
    p.warnings.push_back("no in-context gap power (" + p.context.reason + "): the gaps are predicted at the isolated gap power");
  }
  for (const TierPrediction& tp : p.tiers) {
    p.predicted_gpu_s += tp.predicted_s;
    p.kernel_energy_j += tp.energy_j;
  }
  // Busy time scales with the kernels' time (overlapping streams keep their overlap ratio).
  const double busy = static_cast<double>(t.busy_ns) * 1e-9;
  const double predicted_busy = p.traced_gpu_s > 0 ? busy * p.predicted_gpu_s / p.traced_gpu_s : 0;
  p.predicted_time_s = p.gap_time_s + predicted_busy;
  p.gap_energy_j = p.gap_w * p.gap_time_s;
  p.predicted_energy_j = p.kernel_energy_j + p.gap_energy_j;
}

// What the prediction is made of: rows replayed faithfully, stand-ins at their replayed time,
// time-matched proxies and extrapolated rows (both at the traced time: not predicted), gaps.
void predict_parts(const KernelTable& t, ReplayPrediction& p) {
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    const RowPrediction& r = p.rows[i];
    const double n = static_cast<double>(t.rows[i].count);
    PredictionPart* part = &p.parts.faithful;
    if (r.status == "extrapolated") {
      part = &p.parts.extrapolated;
    } else if (r.status == "replayed" && r.time_matched) {
      part = &p.parts.time_matched;
    } else if (r.status == "replayed" && r.proxy) {
      part = &p.parts.stand_in;
    }
    part->energy_j += n * r.energy_j;
    part->time_s += n * r.time_ns * 1e-9;
    ++part->rows;
  }
  p.parts.gaps = {p.gap_energy_j, p.gap_time_s, 0};
  if (p.parts.time_matched.rows + p.parts.extrapolated.rows > 0) {
    p.warnings.push_back(fmt::format("{:.1f}% of the predicted energy ({:.1f}% of the predicted GPU time) is from rows at their traced time "
                                     "(time-matched proxies {:.1f}%, extrapolated rows {:.1f}%): that part of the time is the trace's, not a prediction",
                                     100 * (p.parts.time_matched.energy_j + p.parts.extrapolated.energy_j) / std::max(p.predicted_energy_j, 1e-300),
                                     100 * (p.parts.time_matched.time_s + p.parts.extrapolated.time_s) / std::max(p.predicted_gpu_s, 1e-300),
                                     100 * p.parts.time_matched.energy_j / std::max(p.predicted_energy_j, 1e-300),
                                     100 * p.parts.extrapolated.energy_j / std::max(p.predicted_energy_j, 1e-300)));
  }
}

// The 95% half-width of the predicted energy: the in-context gap power's and the replayed rows'
// half-widths, independent, added in quadrature.
double energy_half_width(const KernelTable& t, const ReplayPrediction& p) {
  double var = p.context.measured ? std::pow(p.context.gap_power_half_width_w * p.gap_time_s, 2) : 0;
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    const RowPrediction& r = p.rows[i];
    if (r.status != "replayed" || !(r.replayed_energy_j > 0)) continue;
    // A stand-in counts at its traced time: its half-width scales with its predicted energy.
    var += std::pow(static_cast<double>(t.rows[i].count) * r.energy_half_width_j * r.energy_j / r.replayed_energy_j, 2);
  }
  return std::sqrt(var);
}

Result<ReplayPrediction> predict_impl(const KernelTable& t, const json& m) {
  ReplayPrediction p;
  p.gpu = m.value("gpu", "");
  p.gpu_uuid = m.value("sensor_gpu_uuid", "");
  p.idle_w = number_or_nan(m, "idle_w");
  p.gap_w = number_or_nan(m, "gap_w");
  if (!std::isfinite(p.gap_w)) return make_error(Errc::parse, "replay measurements: no gap power (gap_w)");
  if (!t.gpus.empty() && !p.gpu.empty() && std::find(t.gpus.begin(), t.gpus.end(), p.gpu) == t.gpus.end()) {
    p.warnings.push_back("the trace comes from " + fmt::format("{}", fmt::join(t.gpus, ", ")) + ", the replay ran on " + p.gpu +
                         ": the prediction is for the replay's GPU");
  }
  start_rows(t, m, p);
  if (auto r = read_items(t, m, p); !r) return r.error();
  ReplayedPower pt = replayed_power(t, p);
  if (pt.all.second <= 0) return make_error(Errc::parse, "replay measurements: no kernel was replayed");
  const std::size_t extrapolated = predict_tiers(t, p, pt);
  predict_totals(t, m, p);
  predict_parts(t, p);
  p.predicted_energy_half_width_j = energy_half_width(t, p);
  if (extrapolated > 0) {
    double s = 0;
    for (std::size_t i = 0; i < p.rows.size(); ++i) {
      if (p.rows[i].status == "extrapolated") s += static_cast<double>(t.rows[i].total_ns) * 1e-9;
    }
    p.warnings.push_back(fmt::format("{} rows ({:.2f}% of GPU time) not replayed: their traced time at their tier's replayed power", extrapolated,
                                     100 * s / std::max(p.traced_gpu_s, 1e-12)));
  }
  if (static_cast<double>(t.busy_ns) * 1e-9 + 1e-12 < p.traced_gpu_s * 0.99) {
    p.warnings.push_back("kernels overlap in the trace (several streams): replayed in isolation, their overlap is assumed unchanged");
  }
  return p;
}

}  // namespace

namespace {
double window_uncertainty_j(const WindowResult& w) {
  double u = 0;
  for (const GpuEnergy& g : w.gpus) u += g.uncertainty_j;
  return u;
}
}  // namespace

Result<void> compare_with_measurement(ReplayPrediction& p, const Measurement& m, const std::string& label, const std::string& window) {
  const WindowResult* w = nullptr;
  std::vector<std::string> names;
  for (const WindowResult& x : m.windows) {
    names.push_back(x.name);
    if (x.name == window && w == nullptr) w = &x;
  }
  if (w == nullptr) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return make_error(Errc::invalid_argument, label + " has no window '" + window + "' (it has: " +
                                                  (names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))) + ")");
  }
  if (!w->complete) p.warnings.push_back("the measured window '" + window + "' is incomplete");
  p.measured_run = label;
  p.measured_window = window;
  p.measured_energy_j = w->gpu_energy_j;
  p.measured_time_s = w->duration_s();
  p.measured_uncertainty_j = window_uncertainty_j(*w);
  return {};
}

void predict_phases(const KernelTable& t, ReplayPrediction& p, const std::vector<std::string>& names, std::vector<std::string>& missing) {
  p.phases.clear();
  for (const std::string& name : names) {
    std::vector<const TraceRange*> ranges;
    for (const TraceRange& r : t.annotations) {
      if (r.name == name) ranges.push_back(&r);  // annotations are sorted by start
    }
    if (ranges.empty()) {
      missing.push_back(name);
      continue;
    }
    PhasePrediction ph;
    ph.name = name;
    ph.ranges = ranges.size();
    double predicted_gpu_ns = 0;
    std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> busy;  // device → intervals in the phase
    for (const TraceActivity& a : t.activities) {
      // The range whose start is the latest at or before the activity's start, on its rank.
      auto it = std::upper_bound(ranges.begin(), ranges.end(), a.start_ns, [](int64_t v, const TraceRange* r) { return v < r->start_ns; });
      bool inside = false;
      for (auto j = it; j != ranges.begin();) {
        --j;
        if (static_cast<int>((*j)->rank) != static_cast<int>(a.device >> 8)) continue;
        inside = a.start_ns < (*j)->end_ns;
        break;
      }
      if (!inside || a.row >= p.rows.size()) continue;
      const RowPrediction& r = p.rows[a.row];
      ++ph.activities;
      ph.traced_gpu_s += static_cast<double>(a.dur_ns) * 1e-9;
      predicted_gpu_ns += r.time_ns;  // with_row: 0, inside its primary's replay
      ph.kernel_energy_j += r.energy_j;
      busy[a.device].emplace_back(a.start_ns, a.start_ns + a.dur_ns);
    }
    double busy_s = 0;
    for (auto& [dev, iv] : busy) busy_s += static_cast<double>(replay_detail::busy_and_span(iv).busy_ns) * 1e-9;
    for (const TraceRange* r : ranges) ph.traced_time_s += static_cast<double>(r->end_ns - r->start_ns) * 1e-9;
    ph.gap_time_s = std::max(0.0, ph.traced_time_s - busy_s);
    const double scale = ph.traced_gpu_s > 0 ? predicted_gpu_ns * 1e-9 / ph.traced_gpu_s : 1.0;
    ph.predicted_time_s = ph.gap_time_s + busy_s * scale;
    ph.gap_energy_j = ph.gap_time_s * p.gap_w;
    ph.predicted_energy_j = ph.kernel_energy_j + ph.gap_energy_j;
    p.phases.push_back(ph);
  }
}

void compare_phases(ReplayPrediction& p, const Measurement& m) {
  for (PhasePrediction& ph : p.phases) {
    double e = 0, d = 0;
    bool any = false;
    for (const WindowResult& w : m.windows) {
      if (w.name != ph.name) continue;
      any = true;
      e += w.gpu_energy_j;
      d += w.duration_s();
      ph.measured_uncertainty_j += window_uncertainty_j(w);
      if (!w.complete) p.warnings.push_back("the measured window '" + w.name + "' is incomplete");
    }
    if (any) {
      ph.measured_energy_j = e;
      ph.measured_time_s = d;
    }
  }
}

std::vector<std::string> common_phase_names(const KernelTable& t, const Measurement& m, const std::string& skip) {
  std::vector<std::string> out;
  for (const TraceRange& r : t.annotations) {
    if (r.name == skip || std::find(out.begin(), out.end(), r.name) != out.end()) continue;
    for (const WindowResult& w : m.windows) {
      if (w.name == r.name) {
        out.push_back(r.name);
        break;
      }
    }
  }
  return out;
}

namespace {
json parts_json(const ReplayPrediction& p) {
  json j = json::object();
  const double e = std::max(p.predicted_energy_j, 1e-300);
  for (const auto& [name, part] : {std::pair{"faithful", &p.parts.faithful}, {"stand_in", &p.parts.stand_in},
                                   {"time_matched", &p.parts.time_matched}, {"extrapolated", &p.parts.extrapolated}, {"gaps", &p.parts.gaps}}) {
    j[name] = {{"rows", part->rows}, {"energy_j", part->energy_j}, {"duration_s", part->time_s}, {"energy_share", part->energy_j / e}};
  }
  return j;
}
}  // namespace

std::string replay_json(const KernelTable& t, const ReplayPrediction& p) {
  json rows = json::array();
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const KernelRow& k = t.rows[i];
    const RowPrediction& r = p.rows[i];
    json j = {{"row", i},           {"name", k.name},          {"tier", k.tier},          {"class", k.kclass},
              {"op", k.op},         {"count", k.count},        {"status", r.status},      {"traced_mean_s", r.traced_ns * 1e-9},
              {"predicted_mean_s", r.time_ns * 1e-9},          {"power_w", r.power_w},    {"energy_per_call_j", r.energy_j},
              {"replayed_mean_s", r.engine_time_ns() * 1e-9},
              {"energy_j", r.energy_j * static_cast<double>(k.count)}};
    if (r.status == "replayed") {
      j["replayed_energy_per_call_j"] = r.replayed_energy_j;
      j["proxy"] = r.proxy;
      j["replayed_time_half_width_s"] = r.time_half_width_ns * 1e-9;
      j["energy_per_call_half_width_j"] = r.energy_half_width_j;
      j["time_off_by_more_than_10_percent"] = r.time_off;
      j["trial_power_w"] = r.trial_power_w;
      j["trial_time_ns"] = r.trial_time_ns;
    }
    if (r.with_row >= 0) j["replayed_with_row"] = r.with_row;
    if (!r.reason.empty()) j["reason"] = r.reason;
    if (!k.note.empty()) j["note"] = k.note;
    rows.push_back(j);
  }
  json tiers = json::array();
  for (const TierPrediction& tp : p.tiers) {
    tiers.push_back({{"tier", tp.tier}, {"rows", tp.rows}, {"replayed_rows", tp.replayed}, {"extrapolated_rows", tp.extrapolated},
                     {"count", tp.count}, {"traced_duration_s", tp.traced_s}, {"predicted_duration_s", tp.predicted_s},
                     {"predicted_energy_j", tp.energy_j}, {"energy_at_traced_time_j", tp.energy_at_traced_time_j},
                     {"replayed_duration_s", tp.replayed_s}});
  }
  json j = {{"schema", kReplaySchema},
            {"schema_version", 1},
            {"trace", {{"files", t.files}, {"format", t.format}, {"gpus", t.gpus}, {"kernels", t.kernels}, {"memcpys", t.memcpys},
                       {"memsets", t.memsets}, {"unique_rows", t.rows.size()}}},
            {"replay_gpu", p.gpu},
            {"replay_gpu_uuid", p.gpu_uuid},
            {"idle_power_w", p.idle_w},
            {"gap_power_w", p.gap_w},
            {"isolated_gap_power_w", p.isolated_gap_w},
            {"prediction",
             {{"traced_duration_s", p.traced_time_s}, {"traced_gpu_duration_s", p.traced_gpu_s}, {"gap_duration_s", p.gap_time_s},
              {"predicted_gpu_duration_s", p.predicted_gpu_s}, {"predicted_duration_s", p.predicted_time_s},
              {"kernel_energy_j", p.kernel_energy_j}, {"gap_energy_j", p.gap_energy_j}, {"predicted_energy_j", p.predicted_energy_j},
              {"predicted_energy_half_width_j", p.predicted_energy_half_width_j}}},
            {"tiers", tiers},
            {"prediction_parts", parts_json(p)},
            {"kernels", rows},
            {"warnings", p.warnings}};
  {
    const ContextFigures& c = p.context;
    json cj = {{"measured", c.measured}};
    if (!c.reason.empty()) cj["reason"] = c.reason;
    if (c.pass_time_s > 0) {
      cj.update({{"activities", c.activities}, {"stand_ins", c.stand_ins}, {"traced_span_s", c.traced_span_s}, {"pass_duration_s", c.pass_time_s},
                 {"pass_energy_j", c.pass_energy_j}, {"pass_energy_half_width_j", c.pass_energy_half_width_j},
                 {"isolated_duration_s", c.isolated_time_s}, {"isolated_energy_j", c.isolated_energy_j}, {"gap_duration_s", c.gap_time_s},
                 {"gap_power_w", c.gap_power_w}, {"gap_power_half_width_w", c.gap_power_half_width_w}, {"temperature_c", c.temperature_c}});
    }
    j["context"] = cj;
  }
  if (!p.phases.empty()) {
    json ph = json::array();
    for (const PhasePrediction& x : p.phases) {
      json e = {{"phase", x.name}, {"ranges", x.ranges}, {"activities", x.activities}, {"traced_duration_s", x.traced_time_s},
                {"traced_gpu_duration_s", x.traced_gpu_s}, {"gap_duration_s", x.gap_time_s}, {"predicted_duration_s", x.predicted_time_s},
                {"kernel_energy_j", x.kernel_energy_j}, {"gap_energy_j", x.gap_energy_j}, {"predicted_energy_j", x.predicted_energy_j}};
      if (x.measured_energy_j) {
        e["measured_energy_j"] = *x.measured_energy_j;
        e["measured_duration_s"] = *x.measured_time_s;
        e["measured_uncertainty_j"] = x.measured_uncertainty_j;
        e["energy_error"] = *x.measured_energy_j > 0 ? x.predicted_energy_j / *x.measured_energy_j - 1 : std::nan("");
        e["duration_error"] = *x.measured_time_s > 0 ? x.predicted_time_s / *x.measured_time_s - 1 : std::nan("");
      }
      ph.push_back(e);
    }
    j["phases"] = ph;
  }
  if (p.measured_energy_j) {
    j["comparison"] = {{"measured_run", p.measured_run},
                       {"window", p.measured_window},
                       {"measured_energy_j", *p.measured_energy_j},
                       {"measured_uncertainty_j", p.measured_uncertainty_j},
                       {"measured_duration_s", *p.measured_time_s},
                       {"predicted_energy_j", p.predicted_energy_j},
                       {"predicted_duration_s", p.predicted_time_s},
                       {"energy_error", p.energy_error().value_or(std::nan(""))},
                       {"duration_error", p.time_error().value_or(std::nan(""))}};
  }
  return j.dump(1) + "\n";
}

std::string replay_csv(const KernelTable& t, const ReplayPrediction& p) {
  std::string out = "row,tier,class,op,count,status,traced_mean_s,replayed_mean_s,power_w,energy_per_call_j,energy_per_call_half_width_j,energy_j,name\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const KernelRow& k = t.rows[i];
    const RowPrediction& r = p.rows[i];
    std::string name = k.name;
    if (name.find_first_of(",\"\n") != std::string::npos) {
      std::string q = "\"";
      for (char c : name) {
        if (c == '"') q += '"';
        q += c;
      }
      name = q + "\"";
    }
    out += fmt::format("{},{},{},{},{},{},{:.9g},{:.9g},{:.6g},{:.6g},{:.6g},{:.6g},{}\n", i, k.tier, k.kclass, k.op, k.count, r.status,
                       r.traced_ns * 1e-9, r.time_ns * 1e-9, r.power_w, r.energy_j, r.energy_half_width_j,
                       r.energy_j * static_cast<double>(k.count), name);
  }
  return out;
}

std::string replay_text(const KernelTable& t, const ReplayPrediction& p, std::size_t top) {
  std::string out = fmt::format("replay on {}: gaps {:.1f} W ({}; around a lone tiny kernel {:.1f} W, idle {:.1f} W)\n", p.gpu, p.gap_w,
                                p.context.measured ? "in context" : "isolated", p.isolated_gap_w, p.idle_w);
  if (p.context.pass_time_s > 0) {
    const ContextFigures& c = p.context;
    out += fmt::format("context replay: {} activities (traced {:.2f} ms) in {:.2f} ms, {:.3f} J ±{:.3f}; isolated kernels {:.2f} ms, {:.3f} J "
                       "-> gaps {:.2f} ms at {:.1f} W ±{:.1f}\n",
                       c.activities, c.traced_span_s * 1e3, c.pass_time_s * 1e3, c.pass_energy_j, c.pass_energy_half_width_j,
                       c.isolated_time_s * 1e3, c.isolated_energy_j, c.gap_time_s * 1e3, c.gap_power_w, c.gap_power_half_width_w);
  }
  out += fmt::format("\n{:<14} {:>5} {:>8} {:>11} {:>11} {:>11}\n", "tier", "rows", "replayed", "traced ms", "pred ms", "energy J");
  for (const TierPrediction& tp : p.tiers) {
    out += fmt::format("{:<14} {:>5} {:>8} {:>11.3f} {:>11.3f} {:>11.4f}\n", tp.tier, tp.rows, tp.replayed, tp.traced_s * 1e3, tp.predicted_s * 1e3,
                       tp.energy_j);
  }
  out += fmt::format("{:<14} {:>5} {:>8} {:>11.3f} {:>11.3f} {:>11.4f}\n", "gaps", "", "", p.gap_time_s * 1e3, p.gap_time_s * 1e3, p.gap_energy_j);
  out += fmt::format("\npredicted: {:.4f} s, {:.3f} J ± {:.3f} (kernels {:.3f} J + gaps {:.3f} J); traced {:.4f} s\n", p.predicted_time_s,
                     p.predicted_energy_j, p.predicted_energy_half_width_j, p.kernel_energy_j, p.gap_energy_j, p.traced_time_s);
  {
    const double e = std::max(p.predicted_energy_j, 1e-300);
    out += fmt::format("prediction made of: replayed faithfully {:.1f}%, stand-ins at their replayed time {:.1f}%, time-matched proxies {:.1f}%, "
                       "extrapolated at the traced time {:.1f}%, gaps {:.1f}% (of the energy)\n",
                       100 * p.parts.faithful.energy_j / e, 100 * p.parts.stand_in.energy_j / e, 100 * p.parts.time_matched.energy_j / e,
                       100 * p.parts.extrapolated.energy_j / e, 100 * p.parts.gaps.energy_j / e);
  }
  if (p.measured_energy_j) {
    out += fmt::format("measured ({} window '{}'): {:.4f} s, {:.3f} J ± {:.3f} -> time {:+.1f}%, energy {:+.1f}% (measurement ± {:.1f}%, "
                       "prediction ± {:.1f}%)\n",
                       p.measured_run, p.measured_window, *p.measured_time_s, *p.measured_energy_j, p.measured_uncertainty_j,
                       100 * p.time_error().value_or(0), 100 * p.energy_error().value_or(0),
                       *p.measured_energy_j > 0 ? 100 * p.measured_uncertainty_j / *p.measured_energy_j : 0.0,
                       p.predicted_energy_j > 0 ? 100 * p.predicted_energy_half_width_j / p.predicted_energy_j : 0.0);
  }
  if (!p.phases.empty()) {
    out += fmt::format("\n{:<12} {:>6} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "phase", "ranges", "pred s", "meas s", "pred J", "meas J",
                       "time", "energy");
    for (const PhasePrediction& x : p.phases) {
      auto pct = [](double a, const std::optional<double>& b) { return b && *b > 0 ? fmt::format("{:+.1f}%", 100 * (a / *b - 1)) : std::string("-"); };
      out += fmt::format("{:<12} {:>6} {:>10.4f} {:>10} {:>10.3f} {:>10} {:>8} {:>8}\n", x.name, x.ranges, x.predicted_time_s,
                         x.measured_time_s ? fmt::format("{:.4f}", *x.measured_time_s) : "-", x.predicted_energy_j,
                         x.measured_energy_j ? fmt::format("{:.3f}", *x.measured_energy_j) : "-", pct(x.predicted_time_s, x.measured_time_s),
                         pct(x.predicted_energy_j, x.measured_energy_j));
    }
  }
  // The rows with the most predicted energy.
  std::vector<std::size_t> order(t.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto e = [&](std::size_t i) { return p.rows[i].energy_j * static_cast<double>(t.rows[i].count); };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return e(a) > e(b); });
  out += fmt::format("\n{:<10} {:>6} {:>10} {:>10} {:>8} {:>10} {:>7}  {}\n", "tier", "count", "traced us", "replay us", "W", "J", "±%", "kernel");
  for (std::size_t n = 0; n < order.size() && n < top; ++n) {
    const std::size_t i = order[n];
    const RowPrediction& r = p.rows[i];
    const KernelRow& k = t.rows[i];
    const std::string name = k.name.size() > 60 ? k.name.substr(0, 57) + "..." : k.name;
    out += fmt::format("{:<10} {:>6} {:>10.2f} {:>10.2f} {:>8.1f} {:>10.4f} {:>7}  {}{}{}\n", k.tier, k.count, r.traced_ns * 1e-3, r.time_ns * 1e-3,
                       r.power_w, e(i), r.status == "replayed" && r.replayed_energy_j > 0 ? fmt::format("{:.1f}", 100 * r.energy_half_width_j / r.replayed_energy_j) : "-",
                       name, r.status == "replayed" ? "" : " [" + r.status + "]", r.time_off ? " [time >10% off]" : "");
  }
  for (const std::string& w : p.warnings) out += "warning: " + w + "\n";
  return out;
}

namespace {

// `runs show` of a stored replay run: the prediction, the comparison and the per-tier table.
void print_replay_section(const std::string& text, std::ostream& out) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("prediction")) return;
  const json& p = j["prediction"];
  out << fmt::format("  predicted {:.4f} s, {:.3f} J (kernels {:.3f} J, gaps {:.3f} J at {:.1f} W) on {}\n", p.value("predicted_duration_s", 0.0),
                     p.value("predicted_energy_j", 0.0), p.value("kernel_energy_j", 0.0), p.value("gap_energy_j", 0.0),
                     j.value("gap_power_w", 0.0), j.value("replay_gpu", std::string("?")));
  if (j.contains("comparison")) {
    const json& c = j["comparison"];
    out << fmt::format("  measured {:.4f} s, {:.3f} J ± {:.3f} ({} window '{}'): time {:+.1f}%, energy {:+.1f}%\n", c.value("measured_duration_s", 0.0),
                       c.value("measured_energy_j", 0.0), c.value("measured_uncertainty_j", 0.0), c.value("measured_run", std::string()), c.value("window", std::string()),
                       100 * c.value("duration_error", 0.0), 100 * c.value("energy_error", 0.0));
  }
  if (j.contains("context") && j["context"].value("measured", false)) {
    const json& c = j["context"];
    out << fmt::format("  gaps in context: {:.1f} W (context replay of {} activities: {:.2f} ms, {:.3f} J; isolated gap power {:.1f} W)\n",
                       j.value("gap_power_w", 0.0), c.value("activities", 0), 1e3 * c.value("pass_duration_s", 0.0), c.value("pass_energy_j", 0.0),
                       j.value("isolated_gap_power_w", 0.0));
  }
  for (const json& ph : j.value("phases", json::array())) {
    out << fmt::format("  phase {:<10} predicted {:.4f} s, {:.3f} J", ph.value("phase", std::string()), ph.value("predicted_duration_s", 0.0),
                       ph.value("predicted_energy_j", 0.0));
    if (ph.contains("measured_energy_j")) {
      out << fmt::format("; measured {:.4f} s, {:.3f} J: time {:+.1f}%, energy {:+.1f}%", ph.value("measured_duration_s", 0.0),
                         ph.value("measured_energy_j", 0.0), 100 * ph.value("duration_error", 0.0), 100 * ph.value("energy_error", 0.0));
    }
    out << "\n";
  }
  for (const json& t : j.value("tiers", json::array())) {
    out << fmt::format("  {:<14} {:>4} rows {:>4} replayed  traced {:>9.3f} ms  replayed {:>9.3f} ms  {:>10.4f} J\n", t.value("tier", std::string()),
                       t.value("rows", 0), t.value("replayed_rows", 0), 1e3 * t.value("traced_duration_s", 0.0),
                       1e3 * t.value("predicted_duration_s", 0.0), t.value("predicted_energy_j", 0.0));
  }
}

const bool kReplayRendererRegistered = register_section_renderer({kReplaySchema, "replay", &print_replay_section});

}  // namespace

}  // namespace jouleprof
