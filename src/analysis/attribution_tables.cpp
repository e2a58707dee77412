// The tables stage of build_trace_profile: each method's books and class table, and the table
// method's rows by kernel, NVTX path, layer, component and phase, each row with the interval the
// methods and the sensor leave it in; rows the sensor cannot resolve summed into their class,
// layer or component (docs/trace.md, "Tables").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "attribution_stages.hpp"

namespace jouleprof::detail {
namespace {

/// One row as it accumulates: each method's figure and uncertainty.
struct Acc {
  GroupRow row;
  std::string parent;             ///< what the row is summed into when below resolution
  std::vector<double> e, u;       ///< per method
};

using AccMap = std::unordered_map<std::string, Acc>;

std::string truncate_path(const std::string& p, std::size_t depth) {
  if (depth == 0) return p;
  std::size_t pos = 0;
  for (std::size_t d = 0; d < depth; ++d) {
    pos = p.find('/', pos);
    if (pos == std::string::npos) return p;
    if (d + 1 < depth) ++pos;
  }
  return p.substr(0, pos);
}

// The row's estimate (method `table`) and its interval: every method's figure, the regression's
// ± 1.96 σ and the replay's CI (their uncertainty), [0, cap] where the sensor does not resolve it,
// never above what the power limit allows.
void finish_row(GroupRow& r, const Acc& a, const std::vector<Attribution>& results, std::size_t table, double below_s, double cap_w) {
  r.energy_j = std::isnan(a.e[table]) ? 0.0 : a.e[table];  // a method with no figure for the row: 0 J, as before
  r.uncertainty_j = a.u[table];
  r.mean_power_w = r.busy_s > 0 ? r.energy_j / r.busy_s : 0;
  r.below_resolution = r.busy_s < below_s;
  double lo = r.energy_j, hi = r.energy_j;
  for (std::size_t m = 0; m < results.size(); ++m) {
    if (std::isnan(a.e[m])) continue;
    r.by_method[results[m].method] = a.e[m];
    const double k = results[m].method == "regression" ? 1.96 : 1.0;  // the replay's half-widths are 95% already
    lo = std::min(lo, a.e[m] - k * a.u[m]);
    hi = std::max(hi, a.e[m] + k * a.u[m]);
  }
  const double cap = cap_w > 0 ? cap_w * r.busy_s : std::numeric_limits<double>::infinity();
  if (r.below_resolution) {
    lo = 0;
    hi = std::max(hi, std::isfinite(cap) ? cap : hi);
  }
  r.low_j = std::min(r.energy_j, std::max(0.0, lo));
  r.high_j = std::max(r.energy_j, std::min(hi, cap));
}

std::vector<GroupRow> rows_of(const AccMap& m, const std::vector<Attribution>& results, std::size_t table, const TableInput& in,
                              const char* noun) {
  // Rows below resolution summed by parent (two or more of them; one stays, marked); rows of no
  // parent (classes, components, phases) stay, marked, with their interval.
  std::vector<GroupRow> rows;
  std::unordered_map<std::string, std::vector<const Acc*>> below;
  for (const auto& [k, a] : m) {
    if (a.row.busy_s < in.below_s && !a.parent.empty()) {
      below[a.parent].push_back(&a);
      continue;
    }
    GroupRow r = a.row;
    r.key = k;
    finish_row(r, a, results, table, in.below_s, in.cap_w);
    rows.push_back(std::move(r));
  }
  for (auto& [parent, v] : below) {
    std::sort(v.begin(), v.end(), [](const Acc* x, const Acc* y) { return x->row.key < y->row.key; });
    Acc sum = *v.front();
    for (std::size_t i = 1; i < v.size(); ++i) {
      sum.row.busy_s += v[i]->row.busy_s;
      sum.row.count += v[i]->row.count;
      for (std::size_t mth = 0; mth < sum.e.size(); ++mth) {
        sum.e[mth] += v[i]->e[mth];
        sum.u[mth] += v[i]->u[mth];
      }
    }
    GroupRow r = sum.row;
    if (v.size() > 1) {
      r.merged = v.size();
      for (const Acc* x : v) r.members.emplace_back(x->row.key, std::isnan(x->e[table]) ? 0.0 : x->e[table]);
      r.key = parent.front() == '(' ? fmt::format("({} {} below resolution)", v.size(), noun)
                                    : fmt::format("{} ({} {} below resolution)", parent, v.size(), noun);
    }
    finish_row(r, sum, results, table, in.below_s, in.cap_w);
    rows.push_back(std::move(r));
  }
  double total = 0;
  for (const GroupRow& r : rows) total += r.energy_j;
  for (GroupRow& r : rows) r.share = total != 0 ? r.energy_j / total : 0;
  std::sort(rows.begin(), rows.end(), [](const GroupRow& a, const GroupRow& b) {
    return a.energy_j != b.energy_j ? a.energy_j > b.energy_j : a.key < b.key;
  });
  return rows;
}

MethodBooks books_of(const Attribution& at, const std::vector<std::string>& cls) {
  MethodBooks mb;
  mb.method = at.method;
  mb.measured_j = at.measured_j;
  mb.timeline_j = at.timeline_j;
  mb.idle_j = at.idle_j;
  mb.attributed_j = at.attributed_j;
  mb.unattributed_j = at.unattributed_j;
  mb.intercept_w = at.intercept_w;
  mb.r_squared = at.r_squared;
  mb.notes = at.notes;
  for (std::size_t c = 0; c < at.groups.size() && c < cls.size(); ++c) {
    if (at.groups[c].busy_s > 0) mb.class_fits[cls[c]] = at.groups[c];
  }
  return mb;
}

}  // namespace

void build_tables(GpuProfile& gp, const std::vector<Attribution>& results, std::size_t table, const TableInput& in,
                  const std::vector<std::size_t>& row_of, std::vector<double>& row_energy) {
  const TraceData& t = *in.trace;
  const auto& idx = *in.activities;
  const auto& act_class = *in.activity_class;
  const auto& cls = *in.classes;
  const std::size_t M = results.size();
  std::vector<bool> per_activity(M);
  for (std::size_t m = 0; m < M; ++m) per_activity[m] = results[m].granularity == Granularity::activity && results[m].item_j.size() == idx.size();
  // Class rows: every method (class-level methods' items are the classes).
  AccMap by_class;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    Acc& a = by_class[cls[act_class[k]]];
    if (a.e.empty()) {
      a.e.assign(M, 0.0);
      a.u.assign(M, 0.0);
    }
    a.row.busy_s += t.activities[idx[k]].duration_s();
    ++a.row.count;
    for (std::size_t m = 0; m < M; ++m) {
      if (!per_activity[m]) continue;
      a.e[m] += results[m].item_j[k];
      a.u[m] += results[m].item_uncertainty_j[k];
    }
  }
  for (std::size_t m = 0; m < M; ++m) {
    if (per_activity[m]) continue;
    for (std::size_t c = 0; c < cls.size() && c < results[m].item_j.size(); ++c) {
      auto it = by_class.find(cls[c]);
      if (it == by_class.end()) continue;
      // A class the method gave nothing (interval: every stretch too short) has no figure from
      // it, not a figure of 0 J.
      it->second.e[m] = results[m].item_j[c] != 0 ? results[m].item_j[c] : std::numeric_limits<double>::quiet_NaN();
      it->second.u[m] = results[m].item_uncertainty_j[c];
    }
  }
  for (std::size_t m = 0; m < M; ++m) {
    MethodBooks mb = books_of(results[m], cls);
    // Each method's own class table (its figures as the estimate, the same intervals).
    mb.by_class = rows_of(by_class, results, m, in, "classes");
    gp.methods.push_back(std::move(mb));
  }
  gp.by_class = gp.methods[table].by_class;
  // The activity-level tables. A path's groups are worked out once per distinct path.
  AccMap k_, p_, l_, c_, ph_;
  struct PathGroups {
    std::string shown, layer, component;
  };
  std::unordered_map<std::string, PathGroups> path_groups;
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const Activity& a = t.activities[idx[k]];
    auto add = [&](AccMap& mm, const std::string& key, const std::string& parent) {
      Acc& r = mm[key];
      if (r.e.empty()) {
        r.e.assign(M, NAN);
        r.u.assign(M, 0.0);
        r.row.key = key;
        r.parent = parent;
      }
      for (std::size_t m = 0; m < M; ++m) {
        if (!per_activity[m]) {
          if (m == table) r.e[m] = 0;  // the table method is class-level: the rows carry busy time only
          continue;
        }
        r.e[m] = (std::isnan(r.e[m]) ? 0.0 : r.e[m]) + results[m].item_j[k];
        r.u[m] += results[m].item_uncertainty_j[k];
      }
      r.row.busy_s += a.duration_s();
      ++r.row.count;
    };
    auto pg = path_groups.find(a.path);
    if (pg == path_groups.end()) {
      PathGroups pgs{a.path.empty() ? "(no range)" : truncate_path(a.path, in.path_depth), "", ""};
      if (!a.path.empty()) {
        pgs.layer = layer_of_path(a.path);
        pgs.component = component_of_path(a.path);
      }
      pg = path_groups.emplace(a.path, std::move(pgs)).first;
    }
    const PathGroups& g = pg->second;
    add(k_, a.name, cls[act_class[k]]);
      add(p_, g.shown, !g.layer.empty() ? g.layer : !g.component.empty() ? g.component : "(paths)");
    if (!a.path.empty()) {
      if (!g.layer.empty()) add(l_, g.layer, "(layers)");
      add(c_, g.component, "");
    }
    add(ph_, in.phases->of(a), "");
    if (per_activity[table] && row_of[idx[k]] < row_energy.size()) row_energy[row_of[idx[k]]] += results[table].item_j[k];
  }
  // How well the run determines the split: the kernels' energy resolved above the sensor.
  double all = 0, resolved = 0;
  for (const auto& [key, a] : k_) {
    const double e = std::isnan(a.e[table]) ? 0 : a.e[table];
    all += std::fabs(e);
    if (a.row.busy_s >= in.below_s) resolved += std::fabs(e);
  }
  gp.resolved_share = all > 0 ? resolved / all : 0;
  double width = 0, est = 0;
  for (const GroupRow& r : gp.by_class) {
    width += 0.5 * (r.high_j - r.low_j);
    est += std::fabs(r.energy_j);
  }
  gp.class_interval_share = est > 0 ? width / est : 0;
  gp.by_kernel = rows_of(k_, results, table, in, "kernels");
  gp.by_path = rows_of(p_, results, table, in, "paths");
  gp.by_layer = rows_of(l_, results, table, in, "layers");
  gp.by_component = rows_of(c_, results, table, in, "components");
  gp.by_phase = rows_of(ph_, results, table, in, "phases");
}

}  // namespace jouleprof::detail
