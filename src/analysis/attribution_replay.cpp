// The replay-informed method: each activity's energy is its kernel's energy per call as replayed
// in isolation (above the replay's idle), scaled by one factor so that the books balance exactly
// against the run's measured energy. The static power while the GPU is awake between kernels is
// booked as the split books it (idle/static: on a launch-bound decode it is most of the energy
// above idle, and scaling the kernels by it gave rows above the board's power limit); the factor
// absorbs what else the isolated replay does not see (the clock, temperature and context). Activities the replay has no measured row for keep the split's figure
// and the factor applies to the rest. Also the replay file's reader and the kernel matching.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "jouleprof/analysis/attribution.hpp"
#include "jouleprof/analysis/attribution_replay.hpp"

namespace jouleprof {
namespace {

class ReplayMethod final : public AttributionMethod {
 public:
  std::string name() const override { return "replay"; }
  Granularity granularity() const override { return Granularity::activity; }
  std::vector<std::string> uses() const override { return {"split"}; }
  bool applies(const AttributionInput& in) const override { return in.reference_j.size() == in.items && in.items > 0; }

  Attribution attribute_with(const AttributionInput& in, const PriorAttributions& prior) const override {
    Attribution a;
    a.method = name();
    a.measured_j = in.measured_j;
    a.item_j.assign(in.items, 0.0);
    a.item_uncertainty_j.assign(in.items, 0.0);
    const auto sp = prior.find("split");
    Attribution fallback;
    if (sp == prior.end()) fallback = make_split_method()->attribute(in);
    const Attribution& split = sp != prior.end() ? sp->second : fallback;
    a.timeline_j = split.timeline_j;
    const double T = in.t1_s - in.t0_s;
    a.idle_j = in.idle_w * T;
    if (!applies(in)) {
      a.notes.push_back("no replay figures for this run");
      detail::close_books(a);
      return a;
    }
    std::vector<double> busy(in.items, 0.0);
    for (const BusyInterval& b : in.busy) {
      if (b.item < in.items) busy[b.item] += std::max(0.0, std::min(b.t1_s, in.t1_s) - std::max(b.t0_s, in.t0_s));
    }
    double ref_sum = 0, unref_j = 0, busy_all = 0, busy_unref = 0;
    for (std::size_t i = 0; i < in.items; ++i) {
      busy_all += busy[i];
      if (std::isfinite(in.reference_j[i])) {
        ref_sum += std::max(0.0, in.reference_j[i]);
      } else {
        unref_j += i < split.item_j.size() ? split.item_j[i] : 0;
        busy_unref += busy[i];
      }
    }
    a.unreferenced_busy_share = busy_all > 0 ? busy_unref / busy_all : 0;
    // What the replayed kernels get: the run's energy above idle, less the awake gaps' static
    // energy and the windows with no activity (both as the split books them) and the unreplayed
    // kernels' split figures.
    const double gaps_j = std::max(0.0, split.idle_j - a.idle_j);
    a.idle_j += gaps_j;
    const double target = in.measured_j - a.idle_j - split.unattributed_j - unref_j;
    if (ref_sum <= 0 || target <= 0) {
      a.item_j = split.item_j;
      a.item_uncertainty_j = split.item_uncertainty_j;
      a.notes.push_back(ref_sum <= 0 ? "the replay gives these kernels no energy above idle: the split's figures kept"
                                     : "nothing left above idle for the replayed kernels: the split's figures kept");
      detail::close_books(a);
      return a;
    }
    const double s = target / ref_sum;
    a.scale = s;
    for (std::size_t i = 0; i < in.items; ++i) {
      if (std::isfinite(in.reference_j[i])) {
        a.item_j[i] = s * std::max(0.0, in.reference_j[i]);
        a.item_uncertainty_j[i] = i < in.reference_half_width_j.size() ? s * in.reference_half_width_j[i] : 0;
      } else {
        a.item_j[i] = split.item_j[i];
        a.item_uncertainty_j[i] = split.item_uncertainty_j[i];
      }
    }
    a.notes.push_back(fmt::format("replayed energies scaled by {:.3f} to the run's kernel energy: {:.4g} J replayed, {:.4g} J in the run's "
                                  "kernels (its energy above idle less {:.4g} J of static power in the awake gaps between kernels, the split's "
                                  "estimate, booked with idle/static); the factor is the clock, temperature and context difference",
                                  s, ref_sum, target, gaps_j));
    if (s > 1.5 || s < 1 / 1.5) {
      a.notes.push_back(fmt::format("the scale {:.3f} is far from 1: the replay does not describe this run's kernels well (another clock, "
                                    "batch or sequence length?)", s));
    }
    if (a.unreferenced_busy_share > 0) {
      a.notes.push_back(fmt::format("{:.1f}% of the busy time is in kernels the replay did not measure: their split figures kept ({:.4g} J)",
                                    100 * a.unreferenced_busy_share, unref_j));
    }
    if (split.unattributed_j != 0) a.unattributed_j = split.unattributed_j;
    detail::close_books(a);
    return a;
  }
};

using nlohmann::json;

std::optional<std::array<int, 3>> dims(const json& r, const char* key) {
  if (!r.contains(key) || !r[key].is_array() || r[key].size() != 3) return std::nullopt;
  std::array<int, 3> d{};
  for (std::size_t i = 0; i < 3; ++i) {
    if (!r[key][i].is_number_integer()) return std::nullopt;
    d[i] = r[key][i].get<int>();
  }
  return d;
}

}  // namespace

std::unique_ptr<AttributionMethod> make_replay_method() { return std::make_unique<ReplayMethod>(); }

Result<ReplayReference> parse_replay_reference(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    return make_error(Errc::parse, source + ": not JSON");
  }
  if (j.is_object() && j.contains("replay") && j["replay"].is_object()) {
    const json section = j["replay"];
    j = section;
  }
  // The exact replay (jouleprof.torch.replay_step's JSON): its measured rows, as "exact".
  if (j.is_object() && j.value("schema", std::string()) == "jouleprof.exact_replay" && j.contains("rows") && j["rows"].is_array()) {
    json kernels = json::array();
    for (const json& row : j["rows"]) {
      if (!row.is_object() || row.value("kind", std::string()) != "kernel") continue;
      json k = row;
      k["status"] = row.value("status", std::string()) == "measured" ? "exact" : row.value("status", std::string());
      if (row.contains("time_s")) k["replayed_mean_s"] = row["time_s"];
      kernels.push_back(std::move(k));
    }
    json converted = {{"schema", "jouleprof.replay"}, {"kernels", kernels}, {"replay_gpu", j.value("gpu", std::string())},
                      {"replay_gpu_uuid", j.value("gpu_uuid", std::string())}};
    if (j.contains("idle_power_w")) converted["idle_power_w"] = j["idle_power_w"];
    j = std::move(converted);
  }
  if (!j.is_object() || j.value("schema", std::string()) != "jouleprof.replay" || !j.contains("kernels") || !j["kernels"].is_array()) {
    return make_error(Errc::parse, source + ": not `jouleprof replay` or exact-replay output (no \"replay\" section of schema jouleprof.replay, "
                                            "no jouleprof.exact_replay document)");
  }
  ReplayReference r;
  r.source = source;
  r.gpu = j.value("replay_gpu", std::string());
  r.gpu_uuid = j.value("replay_gpu_uuid", std::string());
  r.driver = j.value("driver_version", std::string());
  if (j.contains("sm_clock_mhz") && j["sm_clock_mhz"].is_number()) r.sm_clock_mhz = j["sm_clock_mhz"].get<double>();
  r.idle_w = j.contains("idle_power_w") && j["idle_power_w"].is_number() ? j["idle_power_w"].get<double>() : 0.0;
  if (!std::isfinite(r.idle_w) || r.idle_w < 0) return make_error(Errc::parse, source + ": idle_power_w must be a number >= 0");
  for (const json& k : j["kernels"]) {
    if (!k.is_object() || !k.contains("name") || !k["name"].is_string()) return make_error(Errc::parse, source + ": a kernel row without a name");
    ReplayKernel x;
    x.name = k["name"].get<std::string>();
    x.status = k.value("status", std::string());
    auto num = [&](const char* key) { return k.contains(key) && k[key].is_number() ? k[key].get<double>() : std::nan(""); };
    x.energy_per_call_j = num("replayed_energy_per_call_j");
    if (!std::isfinite(x.energy_per_call_j)) x.energy_per_call_j = num("energy_per_call_j");
    x.half_width_j = num("energy_per_call_half_width_j");
    if (!std::isfinite(x.half_width_j)) x.half_width_j = 0;
    x.time_per_call_s = num("replayed_mean_s");
    x.count = k.value("count", uint64_t{0});
    x.grid = dims(k, "grid");
    x.block = dims(k, "block");
    if (x.measured() && (!std::isfinite(x.energy_per_call_j) || !std::isfinite(x.time_per_call_s) || x.energy_per_call_j < 0 ||
                         x.time_per_call_s < 0)) {
      return make_error(Errc::parse, source + ": kernel row '" + x.name + "' is " + x.status + " without its energy and time per call");
    }
    r.kernels.push_back(std::move(x));
  }
  return r;
}

std::optional<ReplayMatch> match_replay(const ReplayReference& r, const std::string& name, const int grid[3], const int block[3]) {
  auto above = [&](const ReplayKernel& k) { return std::max(0.0, k.energy_per_call_j - r.idle_w * k.time_per_call_s); };
  double e = 0, hw = 0, n = 0;
  std::size_t loose = 0;
  for (const ReplayKernel& k : r.kernels) {
    if (!k.measured() || k.name != name) continue;
    if (k.grid && k.block) {
      const bool same = std::equal(k.grid->begin(), k.grid->end(), grid) && std::equal(k.block->begin(), k.block->end(), block);
      if (same) return ReplayMatch{above(k), k.half_width_j};
      continue;
    }
    const double w = static_cast<double>(std::max<uint64_t>(k.count, 1));
    e += w * above(k);
    hw += w * k.half_width_j;
    n += w;
    ++loose;
  }
  if (loose == 0) return std::nullopt;
  return ReplayMatch{e / n, hw / n};
}

}  // namespace jouleprof
