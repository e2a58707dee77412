// The human-readable summary printed after a measurement.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "jouleprof/analysis/energy.hpp"
#include "jouleprof/core/units.hpp"
#include "jouleprof/measure/output.hpp"
#include "jouleprof/measure/repeat_label.hpp"

namespace jouleprof {
namespace {

std::string pm(const GpuEnergy& e) {
  if (!(e.uncertainty_j > 0)) return "";
  // A counter figure's bound says what it rests on when it is not the plain staleness term.
  const std::string basis = e.uncertainty_basis;
  return fmt::format(" ± {:.3g} J", e.uncertainty_j) + (basis.empty() || basis == "staleness" ? "" : " (" + basis + ")");
}

// "36 °C" when the range is one value, "36–41 °C" otherwise.
std::string range_text(double lo, double hi, const char* unit) {
  if (fmt::format("{:.0f}", lo) == fmt::format("{:.0f}", hi)) return fmt::format("{:.0f} {}", lo, unit);
  return fmt::format("{:.0f}–{:.0f} {}", lo, hi, unit);
}

}  // namespace

std::string repeat_label(const Measurement& m, int run_index) {
  bool warm = false;
  int warmups = 0;
  for (const RunInfo& r : m.runs) {
    if (r.warmup) ++warmups;
    if (r.index == run_index) warm = r.warmup;
  }
  return warm ? fmt::format("warm-up {}", run_index + 1) : fmt::format("repeat {}", run_index - warmups + 1);
}

void print_summary(const Measurement& m, std::ostream& out) {
  const char* sim = m.simulated ? " [simulated]" : "";
  fmt::print(out, "jouleprof {} — {}{}\n", m.tool_version, m.complete ? "complete" : "INCOMPLETE", sim);
  if (!m.complete) fmt::print(out, "  reason: {}\n", m.incomplete_reason);
  if (!m.device_note.empty()) fmt::print(out, "  note: {}\n", m.device_note);
  for (std::size_t g = 0; g < m.gpus.size(); ++g) {
    const GpuInfo& i = m.gpus[g];
    const GpuRunState& s = m.gpu_state[g];
    fmt::print(out, "  GPU {}: {} ({}), driver {}{}\n", i.index, i.name, i.uuid, i.driver_version, sim);
    if (s.idle_power_w) fmt::print(out, "    idle baseline {:.1f} W ({})\n", *s.idle_power_w, s.idle_source);
    if (s.temperature_min_c) {
      fmt::print(out, "    temperature {}", range_text(*s.temperature_min_c, *s.temperature_max_c, "°C"));
      if (s.sm_clock_min_mhz) fmt::print(out, ", SM clock {}", range_text(*s.sm_clock_min_mhz, *s.sm_clock_max_mhz, "MHz"));
      fmt::print(out, "\n");
    }
    if (!s.throttle_reasons_seen.empty()) {
      fmt::print(out, "    clock event reasons seen: {}\n", fmt::join(s.throttle_reasons_seen, ", "));
    }
    if (s.error_count > 0) fmt::print(out, "    {} sensor errors (first: {})\n", s.error_count, s.errors.front().message);
  }
  if (m.cpu_domains.empty()) {
    fmt::print(out, "  CPU energy: unavailable ({})\n", m.cpu_unavailable_reason);
  }
  // With several GPUs, each GPU's energy gets its own column after the total.
  const std::size_t n_gpu = m.gpus.size();
  std::string per_gpu_head;
  if (n_gpu > 1) {
    for (std::size_t g = 0; g < n_gpu; ++g) per_gpu_head += fmt::format(" {:>11}", fmt::format("GPU {} J", m.gpus[g].index));
  }
  fmt::print(out, "\n  {:<22} {:>9} {:>13}{} {:>12} {:>10} {:>9}  {}\n", "window", "time s", "GPU energy J", per_gpu_head,
             "above idle J", "mean W", "tl/ctr", "method");
  for (const WindowResult& w : m.windows) {
    std::string name = w.name;
    if (w.run >= 0 && w.kind == "phase") name = "  " + name;
    if (w.kind == "run" || w.kind == "warmup") name = repeat_label(m, w.run);
    if (!w.complete) name += " (incomplete)";
    std::string method, ratio = "-";
    if (!w.gpus.empty()) {
      method = w.gpus.front().method + pm(w.gpus.front());
      if (w.gpus.front().disagreement) ratio = fmt::format("{:+.2f}%", 100 * *w.gpus.front().disagreement);
    }
    std::string per_gpu;
    if (n_gpu > 1) {
      for (std::size_t g = 0; g < n_gpu; ++g) {
        per_gpu += g < w.gpus.size() ? fmt::format(" {:>11.2f}", w.gpus[g].energy_j) : fmt::format(" {:>11}", "-");
      }
    }
    // The idle window is the baseline itself: energy above idle means nothing there.
    const bool above = w.gpu_above_idle_j && w.kind != "idle";
    fmt::print(out, "  {:<22} {:>9.3f} {:>13.2f}{} {:>12} {:>10.1f} {:>9}  {}\n", name, w.duration_s(), w.gpu_energy_j, per_gpu,
               above ? fmt::format("{:.2f}", *w.gpu_above_idle_j) : "-",
               w.duration_s() > 0 ? w.gpu_energy_j / w.duration_s() : 0.0, ratio, method);
    for (const CpuEnergy& c : w.cpu) fmt::print(out, "  {:<22} {:>9} {:>13.2f}  (CPU {})\n", "", "", c.energy_j, c.domain);
    if (w.meter_j) fmt::print(out, "  {:<22} {:>9} {:>13.2f}  (external meter)\n", "", "", *w.meter_j);
    for (const auto& [k, v] : w.counts) {
      if (v > 0) fmt::print(out, "  {:<22} {:g} {} → {:.4g} J/{}\n", "", v, k, w.gpu_energy_j / v, per_unit_name(k));
    }
  }
  fmt::print(out,
             "  tl/ctr: the sample timeline's integral minus the energy counter, % of the counter (≥ 1 s windows);\n"
             "  method: where the GPU energy comes from — counter, timeline or timeline(response) (docs/energy-methods.md)\n");
  bool header = false;
  for (const RepeatStat& s : m.stats) {
    if (s.summary.n < 2) continue;
    if (!header) {
      fmt::print(out, "\n  over {} repeats: {:<31} {:>12} {:>12} {:>10} {:>12}\n", s.summary.n, "", "mean", "median", "stdev",
                 "95% CI ±");
      header = true;
    }
    fmt::print(out, "  {:<46} {:>12.4g} {:>12.4g} {:>10.3g} {:>12.3g}\n", s.what, s.summary.mean, s.summary.median,
               s.summary.stdev, s.summary.ci95_half_width);
  }
  for (const std::string& w : m.warnings) fmt::print(out, "  warning: {}\n", w);
}

}  // namespace jouleprof
