#include "jouleprof/store/compare.hpp"

#include <algorithm>
#include <cmath>
#include "jouleprof/core/units.hpp"

namespace jouleprof {

std::map<std::string, std::vector<double>> repeat_values(const Measurement& m) {
  std::map<std::string, std::vector<double>> v;
  for (const RunInfo& r : m.runs) {
    if (r.warmup || !r.complete || r.window < 0 || static_cast<std::size_t>(r.window) >= m.windows.size()) continue;
    const WindowResult& w = m.windows[static_cast<std::size_t>(r.window)];
    v["gpu_energy_j"].push_back(w.gpu_energy_j);
    if (w.gpu_above_idle_j) v["gpu_above_idle_j"].push_back(*w.gpu_above_idle_j);
    v["duration_s"].push_back(w.duration_s());
    if (w.duration_s() > 0) v["mean_power_w"].push_back(w.gpu_energy_j / w.duration_s());
    if (w.meter_j) v["meter_energy_j"].push_back(*w.meter_j);
    for (const auto& [k, c] : w.counts) {
      if (c > 0) v["gpu_energy_per_" + per_unit_name(k) + "_j"].push_back(w.gpu_energy_j / c);
    }
    for (const WindowResult& p : m.windows) {
      if (p.run != r.index || p.kind != "phase" || !p.complete) continue;
      const std::string pre = "phase:" + p.name + ":";
      v[pre + "gpu_energy_j"].push_back(p.gpu_energy_j);
      v[pre + "duration_s"].push_back(p.duration_s());
      if (p.duration_s() > 0) v[pre + "mean_power_w"].push_back(p.gpu_energy_j / p.duration_s());
      for (const auto& [k, c] : p.counts) {
        if (c > 0) v[pre + "gpu_energy_per_" + per_unit_name(k) + "_j"].push_back(p.gpu_energy_j / c);
      }
    }
  }
  return v;
}

std::vector<std::string> comparable_keys(const std::vector<const Measurement*>& runs, const std::string& phase) {
  const std::string pre = phase.empty() ? "" : "phase:" + phase + ":";
  std::vector<std::string> keys = {pre + "gpu_energy_j", pre + "duration_s", pre + "mean_power_w"};
  if (phase.empty()) keys.insert(keys.begin() + 1, "gpu_above_idle_j");
  std::vector<std::string> per_count;
  for (const Measurement* m : runs) {
    for (const auto& [k, _] : repeat_values(*m)) {
      if (k.rfind(pre + "gpu_energy_per_", 0) == 0 && k.find(':', pre.size()) == std::string::npos &&
          std::find(per_count.begin(), per_count.end(), k) == per_count.end()) {
        per_count.push_back(k);
      }
    }
  }
  keys.insert(keys.end(), per_count.begin(), per_count.end());
  if (phase.empty()) keys.push_back("meter_energy_j");
  // Keep the keys at least one run has.
  std::vector<std::string> out;
  for (const auto& k : keys) {
    for (const Measurement* m : runs) {
      if (repeat_values(*m).count(k) != 0) {
        out.push_back(k);
        break;
      }
    }
  }
  return out;
}

std::optional<bool> differs_95(const Summary& a, const Summary& b) {
  if (a.n < 2 || b.n < 2) return std::nullopt;
  const double va = a.stdev * a.stdev / static_cast<double>(a.n);
  const double vb = b.stdev * b.stdev / static_cast<double>(b.n);
  const double diff = std::fabs(a.mean - b.mean);
  if (va + vb <= 0) return diff > 0;
  const double t = diff / std::sqrt(va + vb);
  // Welch–Satterthwaite degrees of freedom (rounded down: conservative).
  const double den = va * va / static_cast<double>(a.n - 1) + vb * vb / static_cast<double>(b.n - 1);
  const double dof = den > 0 ? (va + vb) * (va + vb) / den : static_cast<double>(a.n + b.n - 2);
  return t > student_t95(std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(dof))));
}

Comparison compare_runs(const std::vector<const Measurement*>& runs, const std::string& phase) {
  Comparison c;
  c.keys = comparable_keys(runs, phase);
  std::vector<std::map<std::string, std::vector<double>>> values;
  for (const Measurement* m : runs) values.push_back(repeat_values(*m));
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::vector<CompareCell> row;
    for (const auto& k : c.keys) {
      CompareCell cell;
      auto it = values[r].find(k);
      if (it != values[r].end() && !it->second.empty()) cell.value = summarize(it->second);
      if (r > 0 && cell.value) {
        auto b = values[0].find(k);
        if (b != values[0].end() && !b->second.empty()) {
          const Summary base = summarize(b->second);
          cell.diff = cell.value->mean - base.mean;
          if (base.mean != 0) cell.diff_rel = *cell.diff / base.mean;
          cell.significant = differs_95(base, *cell.value);
        }
      }
      row.push_back(cell);
    }
    c.cells.push_back(std::move(row));
  }
  return c;
}

}  // namespace jouleprof
