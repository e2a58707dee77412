#include "jouleprof/core/text.hpp"
#include "jouleprof/estimate/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "jouleprof/estimate/builders.hpp"

namespace jouleprof::estimate {
namespace {

using json = nlohmann::json;

// Formats one number; callers pass literal formats only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}
#pragma GCC diagnostic pop

// Engineering format with a unit: 12.3 mJ, 4.56 ms ...
std::string eng(double v, const char* unit) {
  static const struct {
    double scale;
    const char* prefix;
  } p[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}, {1e-12, "p"}};
  if (v == 0) return std::string("0 ") + unit;
  for (const auto& s : p) {
    if (std::fabs(v) >= s.scale * 0.9995) return fmt("%.3g", v / s.scale) + " " + s.prefix + unit;
  }
  return fmt("%.3g", v / 1e-12) + " p" + unit;
}

std::string pct(double part, double whole) { return whole > 0 ? fmt("%5.1f%%", 100 * part / whole) : "    -"; }

// Event groups in order of first appearance, with their events.
std::vector<std::pair<std::string, std::vector<const Event*>>> grouped(const std::vector<Event>& evs) {
  std::vector<std::pair<std::string, std::vector<const Event*>>> g;
  for (const Event& e : evs) {
    auto it = std::find_if(g.begin(), g.end(), [&](const auto& p) { return p.first == e.group; });
    if (it == g.end()) {
      g.emplace_back(e.group, std::vector<const Event*>{});
      it = g.end() - 1;
    }
    it->second.push_back(&e);
  }
  return g;
}

json events_json(const std::vector<Event>& evs) {
  json a = json::array();
  for (const Event& e : evs) {
    a.push_back({{"group", e.group}, {"event", e.name}, {"count", e.count}, {"unit", e.unit}, {"energy_j", e.energy_j}});
  }
  return a;
}

json estimate_json(const Estimate& e) {
  json j;
  j["schema_version"] = 1;
  j["model"] = e.model;
  j["hardware"] = {{"id", e.hw_id}, {"name", e.hw_name}, {"class", to_string(e.cls)}};
  j["precision"] = to_string(e.precision);
  j["mode"] = {{"fused", e.fused}, {"eager_dispatch", e.eager}, {"warm_cache", e.warm}};
  j["clock_mhz"] = e.clock_mhz;
  j["clock_requested_mhz"] = e.clock_requested_mhz;
  j["power_capped"] = e.power_capped;
  j["power_cap_w"] = e.power_cap_w;
  if (e.power_capped) j["uncapped_power_w"] = e.uncapped_power_w;
  j["calibration"] = e.calibration.empty() ? json(nullptr) : json(e.calibration);
  j["ops"] = e.ops;
  j["subgraph_count"] = e.subgraphs.size();
  j["flops"] = e.flops;
  j["weight_bytes"] = e.weight_bytes;
  j["dram_bytes"] = e.dram_bytes;
  j["latency_s"] = e.latency_s;
  j["energy_j"] = e.energy_j;
  j["dynamic_energy_j"] = e.dynamic_j;
  j["static_energy_j"] = e.static_j;
  j["average_power_w"] = e.avg_power_w;
  j["events"] = events_json(e.totals);
  json sgs = json::array();
  for (const SubgraphEstimate& s : e.subgraphs) {
    sgs.push_back({{"name", s.name},
                   {"anchor", to_string(s.anchor)},
                   {"ops", s.ops},
                   {"kernels", s.kernels},
                   {"flops", s.flops},
                   {"dram_bytes", s.dram_bytes},
                   {"llc_hit_bytes", s.llc_bytes},
                   {"compute_s", s.t_compute_s},
                   {"memory_s", s.t_memory_s},
                   {"overhead_s", s.t_overhead_s},
                   {"latency_s", s.latency_s},
                   {"bound", s.bound},
                   {"utilization", s.utilization},
                   {"clock_mhz", s.clock_mhz},
                   {"energy_j", s.energy_j},
                   {"dynamic_energy_j", s.dynamic_j},
                   {"static_energy_j", s.static_j},
                   {"events", events_json(s.events)}});
  }
  j["subgraphs"] = sgs;
  j["notes"] = e.notes;
  return j;
}

// One unit for a whole column: the prefix that suits the column's largest value.
std::string column_unit(const std::vector<double>& vs, const char* unit, double& scale) {
  static const struct {
    double scale;
    const char* prefix;
  } p[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}};
  double big = 0;
  for (double v : vs) big = std::max(big, std::fabs(v));
  scale = 1;
  for (const auto& s : p) {
    scale = s.scale;
    if (big >= s.scale * 0.9995) return std::string(s.prefix) + unit;
  }
  return std::string("n") + unit;
}

}  // namespace

std::string render_tree(const Estimate& e, const TreeOptions& opt) {
  std::string out;
  out += e.model + " on " + e.hw_name + " (" + e.hw_id + ", " + to_string(e.cls) + "), " + to_string(e.precision) +
         ", " + fmt("%.0f", e.clock_mhz) + " MHz" + (e.power_capped ? " (power-capped)" : "") +
         (e.fused ? ", fused" : ", unfused") + (e.eager ? ", eager dispatch" : "") +
         (e.warm ? ", warm cache" : ", cold cache") + "\n";
  if (e.power_capped) out += "  " + power_cap_text(e) + "\n";
  out += "  " + std::to_string(e.ops) + " ops in " + std::to_string(e.subgraphs.size()) + " subgraphs, " +
         eng(e.flops, "FLOP") + ", weights " + eng(e.weight_bytes, "B") + ", DRAM traffic " + eng(e.dram_bytes, "B") + "\n";
  out += "  latency " + eng(e.latency_s, "s") + ", energy " + eng(e.energy_j, "J") + " (dynamic " + eng(e.dynamic_j, "J") +
         ", static " + eng(e.static_j, "J") + "), average power " + eng(e.avg_power_w, "W") + "\n";
  if (e.tokens > 0 && e.latency_s > 0) {
    out += "  " + fmt("%.4g", e.tokens / e.latency_s) + " tok/s, " + fmt("%.4g", e.energy_j / e.tokens) + " J/token (" +
           fmt("%.0f", e.tokens) + " tokens)\n";
  }
  out += "  calibration: " + (e.calibration.empty() ? std::string("none") : e.calibration) + "\n";
  out += "  stack modelled: " + stack_text(e) + "\n";
  out += e.model + "  " + eng(e.energy_j, "J") + "\n";
  // Event classes over the whole model.
  const auto groups = grouped(e.totals);
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const bool last_g = gi + 1 == groups.size();
    double gj = 0;
    for (const Event* ev : groups[gi].second) gj += ev->energy_j;
    out += std::string(last_g ? "└─ " : "├─ ") + groups[gi].first + "  " + eng(gj, "J") + "  " + pct(gj, e.energy_j) + "\n";
    for (std::size_t k = 0; k < groups[gi].second.size(); ++k) {
      const Event* ev = groups[gi].second[k];
      out += std::string(last_g ? "   " : "│  ") + (k + 1 == groups[gi].second.size() ? "└─ " : "├─ ") + ev->name + "  " +
             eng(ev->energy_j, "J") + "  (" + fmt("%.4g", ev->count) + " " + ev->unit + ")\n";
    }
  }
  // Subgraphs by energy.
  std::vector<std::size_t> idx(e.subgraphs.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return e.subgraphs[a].energy_j > e.subgraphs[b].energy_j;
  });
  out += "subgraphs (top " + std::to_string(std::min(opt.top, idx.size())) + " of " + std::to_string(idx.size()) +
         " by energy):\n";
  double rest_j = 0, rest_t = 0;
  for (std::size_t r = 0; r < idx.size(); ++r) {
    const SubgraphEstimate& s = e.subgraphs[idx[r]];
    if (r >= opt.top) {
      rest_j += s.energy_j;
      rest_t += s.latency_s;
      continue;
    }
    out += "├─ " + s.name + " [" + to_string(s.anchor) + ", " + std::to_string(s.ops) + " ops, " + s.bound + "-bound, " +
           fmt("%.0f", s.clock_mhz) + " MHz]  " + eng(s.energy_j, "J") + "  " + eng(s.latency_s, "s") + "  " +
           pct(s.energy_j, e.energy_j) + "\n";
    const auto sg = grouped(s.events);
    for (std::size_t gi = 0; gi < sg.size(); ++gi) {
      double gj = 0;
      std::string top_ev;
      double top_j = -1;
      for (const Event* ev : sg[gi].second) {
        gj += ev->energy_j;
        if (ev->energy_j > top_j) {
          top_j = ev->energy_j;
          top_ev = ev->name;
        }
      }
      if (gj <= 0) continue;
      out += "│  " + std::string(gi + 1 == sg.size() ? "└─ " : "├─ ") + sg[gi].first + "  " + eng(gj, "J") + "  (largest: " +
             top_ev + ")\n";
    }
  }
  if (idx.size() > opt.top) {
    out += "└─ ... " + std::to_string(idx.size() - opt.top) + " more subgraphs  " + eng(rest_j, "J") + "  " +
           eng(rest_t, "s") + "  " + pct(rest_j, e.energy_j) + "\n";
  }
  for (const auto& n : e.notes) out += "note: " + n + "\n";
  return out;
}

std::string to_json(const Estimate& e, int indent) { return estimate_json(e).dump(indent); }

// One shape whatever the count (docs/cli.md): {"schema_version", "estimates": [...]}.
std::string to_json(const std::vector<Estimate>& es, int indent) {
  json a = json::array();
  for (const auto& e : es) {
    json j = estimate_json(e);
    j["stack"] = stack_text(e);
    if (e.tokens > 0) {
      j["tokens"] = e.tokens;
      j["tokens_per_s"] = e.latency_s > 0 ? json(e.tokens / e.latency_s) : json(nullptr);
      j["energy_per_token_j"] = e.energy_j / e.tokens;
    }
    a.push_back(std::move(j));
  }
  return json{{"schema_version", 1}, {"estimates", a}}.dump(indent);
}

std::string to_csv(const std::vector<Estimate>& es) {
  std::string out = "hardware,model,precision,subgraph,group,event,count,unit,energy_j,latency_s\n";
  for (const Estimate& e : es) {
    const std::string pre = csv_field(e.hw_id) + "," + csv_field(e.model) + "," + to_string(e.precision) + ",";
    out += pre + "(total),,," + fmt("%.6g", e.flops) + ",FLOP," + fmt("%.9g", e.energy_j) + "," + fmt("%.9g", e.latency_s) + "\n";
    for (const Event& ev : e.totals) {
      out += pre + "(total)," + ev.group + "," + ev.name + "," + fmt("%.6g", ev.count) + "," + ev.unit + "," +
             fmt("%.9g", ev.energy_j) + ",\n";
    }
    for (const SubgraphEstimate& s : e.subgraphs) {
      out += pre + csv_field(s.name) + ",,," + fmt("%.6g", s.flops) + ",FLOP," + fmt("%.9g", s.energy_j) + "," +
             fmt("%.9g", s.latency_s) + "\n";
      for (const Event& ev : s.events) {
        out += pre + csv_field(s.name) + "," + ev.group + "," + ev.name + "," + fmt("%.6g", ev.count) + "," + ev.unit + "," +
               fmt("%.9g", ev.energy_j) + ",\n";
      }
    }
  }
  return out;
}

std::string render_comparison(const std::vector<Estimate>& es) {
  std::string out;
  char line[512];
  // One unit per column (the header says it), chosen by the column's largest value.
  std::vector<double> lat, en, pw;
  bool llm = !es.empty();
  for (const Estimate& e : es) {
    lat.push_back(e.latency_s);
    en.push_back(e.energy_j);
    pw.push_back(e.avg_power_w);
    llm = llm && e.tokens > 0;
  }
  double ls = 1, es_ = 1, ps = 1;
  const std::string lu = column_unit(lat, "s", ls), eu = column_unit(en, "J", es_), pu = column_unit(pw, "W", ps);
  std::snprintf(line, sizeof(line), "%-22s %-5s %-6s %9s %12s %12s %10s %10s %12s", "hardware", "class", "prec", "clock MHz",
                ("latency " + lu).c_str(), ("energy " + eu).c_str(), ("power " + pu).c_str(), "TFLOP/s", "J/GFLOP");
  out += line;
  if (llm) {
    std::snprintf(line, sizeof(line), " %10s %10s", "tok/s", "J/token");
    out += line;
  }
  out += " calibrated\n";
  bool capped = false;
  for (const Estimate& e : es) {
    capped = capped || e.power_capped;
    std::snprintf(line, sizeof(line), "%-22s %-5s %-6s %9s %12.4g %12.4g %10.4g %10.1f %12.4g", e.hw_id.c_str(), to_string(e.cls),
                  to_string(e.precision), (fmt("%.0f", e.clock_mhz) + (e.power_capped ? "*" : "")).c_str(), e.latency_s / ls, e.energy_j / es_, e.avg_power_w / ps,
                  e.latency_s > 0 ? e.flops / e.latency_s / 1e12 : 0.0, e.flops > 0 ? e.energy_j / (e.flops / 1e9) : 0.0);
    out += line;
    if (llm) {
      std::snprintf(line, sizeof(line), " %10.4g %10.4g", e.latency_s > 0 ? e.tokens / e.latency_s : 0.0, e.energy_j / e.tokens);
      out += line;
    }
    out += std::string(" ") + (e.calibration.empty() ? "no" : "yes") + "\n";
  }
  if (capped) {
    out += "* power-capped: at the requested clock the average power would exceed the TDP, so the clock is lowered\n";
    for (const Estimate& e : es) {
      if (e.power_capped) out += "  " + e.hw_id + ": " + power_cap_text(e) + "\n";
    }
  }
  if (!es.empty()) out += "stack modelled: " + stack_text(es.front()) + "\n";
  return out;
}

std::string render_hw_list(const Catalog& c) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-22s %-5s %-40s %8s %10s %10s %8s\n", "id", "class", "name", "TDP W", "bf16 TF/s",
                "fp32 TF/s", "DRAM GB/s");
  out += line;
  std::vector<const HardwareSpec*> hs;
  for (const auto& h : c.hw) hs.push_back(&h);
  std::stable_sort(hs.begin(), hs.end(), [](const HardwareSpec* a, const HardwareSpec* b) {
    return std::make_pair(static_cast<int>(a->cls), a->id) < std::make_pair(static_cast<int>(b->cls), b->id);
  });
  for (const HardwareSpec* h : hs) {
    const auto bf = h->peak_flops(DType::bf16, true);
    const auto fp = h->peak_flops(DType::f32, false);
    std::snprintf(line, sizeof(line), "%-22s %-5s %-40s %8.0f %10s %10s %8.0f\n", h->id.c_str(), to_string(h->cls),
                  h->name.c_str(), h->tdp_w.value, bf ? fmt("%.1f", *bf / 1e12).c_str() : "-",
                  fp ? fmt("%.1f", *fp / 1e12).c_str() : "-", h->dram().bandwidth_gbps.value);
    out += line;
  }
  out += "(" + std::to_string(c.hw.size()) + " targets from";
  for (const auto& d : c.dirs) out += " " + d;
  return out + ")\n";
}

std::string render_model_list() {
  std::string out;
  for (const auto& m : model_catalog()) {
    char line[512];
    std::snprintf(line, sizeof(line), "%-40s %s\n", m.name.c_str(), m.description.c_str());
    out += line;
  }
  return out;
}

std::string power_cap_text(const Estimate& e) {
  if (!e.power_capped) return {};
  return "power-capped: at " + fmt("%.0f", e.clock_requested_mhz) + " MHz the average power would be " +
         fmt("%.0f", e.uncapped_power_w) + " W, above the " + fmt("%.0f", e.power_cap_w) +
         " W TDP, so the clock is lowered to " + fmt("%.0f", e.clock_mhz) +
         " MHz for the whole run (as the GPU's power limit does; --no-power-cap to ignore it)";
}

std::string stack_text(const Estimate& e) {
  std::string s = e.fused ? "fused kernels" : "one kernel per op (--unfused)";
  s += e.eager ? ", with an eager framework's per-op host dispatch (--eager, e.g. PyTorch eager)"
               : ", no per-op framework dispatch (a tuned engine or compiled graph; --eager models an eager framework)";
  s += e.warm ? ", steady state with warm caches" : ", one cold run";
  return s;
}

}  // namespace jouleprof::estimate
