#include "jouleprof/core/files.hpp"
#include "jouleprof/models/dataset.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "jouleprof/core/files.hpp"
#include "jouleprof/core/parse.hpp"
#include "jouleprof/core/text.hpp"

namespace jouleprof::models {

const std::vector<std::string> kKnownActivity = {
    "fp_active",   "fp64_active",  "fp32_active",      "fp16_active", "FP16A",         "tensor_active",
    "TENSO",       "dram_active",  "sm_active",        "sm_occupancy", "gr_engine_active"};

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  for (auto& s : out) {  // trim spaces
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t");
    s = b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
  }
  return out;
}

}  // namespace

std::vector<std::string> Dataset::applications() const {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const auto& r : rows)
    if (seen.insert(r.application).second) out.push_back(r.application);
  return out;
}

std::vector<std::size_t> Dataset::rows_of(const std::string& app) const {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].application == app) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return rows[a].clock_mhz < rows[b].clock_mhz; });
  return idx;
}

std::vector<std::pair<std::string, std::vector<std::size_t>>> Dataset::groups() const {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> out;
  std::unordered_map<std::string, std::size_t> where;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto [it, inserted] = where.emplace(rows[i].application, out.size());
    if (inserted) out.emplace_back(rows[i].application, std::vector<std::size_t>{});
    out[it->second].second.push_back(i);
  }
  for (auto& [app, idx] : out)
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return rows[a].clock_mhz < rows[b].clock_mhz; });
  return out;
}

int Dataset::activity_index(const std::string& name) const {
  for (std::size_t i = 0; i < activity.size(); ++i)
    if (activity[i] == name) return static_cast<int>(i);
  return -1;
}

Result<Dataset> parse_csv(const std::string& text, const ColumnMap& map, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") != std::string::npos) break;
  }
  if (line_no == 0 || line.find_first_not_of(" \t\r") == std::string::npos)
    return make_error(Errc::parse, source + ": empty file (a header line and rows are needed)");
  // Names the user gave: none may be empty (an empty --app-col or --activity name is a typo, not
  // "no column"), and another model's predictions need both columns.
  for (const auto& [flag, name] : {std::pair<const char*, const std::string*>{"--app-col", &map.application},
                                   {"--clock-col", &map.clock}, {"--power-col", &map.power}, {"--time-col", &map.time}})
    if (name->empty()) return make_error(Errc::invalid_argument, std::string(flag) + " must name a column (got an empty name)");
  for (const auto& a : map.activity)
    if (a.empty()) return make_error(Errc::invalid_argument, "--activity names an empty column (a stray comma?)");
  if (map.pred_power.empty() != map.pred_time.empty())
    return make_error(Errc::invalid_argument, "another model's predictions need both --pred-power-col and --pred-time-col");
  const auto header = split_csv_line(line);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (!header[i].empty() && !col.count(header[i])) col[header[i]] = i;

  std::vector<std::string> missing;
  auto need = [&](const std::string& name) {
    if (!name.empty() && !col.count(name)) missing.push_back(name);
  };
  need(map.application);
  need(map.clock);
  need(map.power);
  need(map.time);
  need(map.phase);
  need(map.quality);
  need(map.power_limit);
  need(map.pred_power);
  need(map.pred_time);
  Dataset d;
  d.source = source;
  if (map.activity.empty()) {
    for (const auto& a : kKnownActivity)
      if (col.count(a)) d.activity.push_back(a);
  } else {
    d.activity_explicit = true;
    for (const auto& a : map.activity) {
      need(a);
      d.activity.push_back(a);
    }
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    return make_error(Errc::invalid_argument, source + ": missing column" + (missing.size() > 1 ? "s " : " ") + names +
                                                   " (map other names with --app-col, --clock-col, --power-col, "
                                                   "--time-col, --activity)");
  }

  auto number = [&](const std::vector<std::string>& f, const std::string& name, double& out) -> Result<void> {
    const std::size_t i = col.at(name);
    const std::string v = i < f.size() ? f[i] : std::string{};
    if (!parse_finite_double(v, out))
      return make_error(Errc::parse, source + ":" + std::to_string(line_no) + ": column " + name + ": '" + v +
                                         "' is not a finite number");
    return {};
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto f = split_csv_line(line);
    Row r;
    const std::size_t ai = col.at(map.application);
    // Names become JSON strings and table cells: any bytes (a Latin-1 name) are made valid UTF-8.
    r.application = to_valid_utf8(ai < f.size() ? f[ai] : std::string{});
    if (r.application.empty())
      return make_error(Errc::parse, source + ":" + std::to_string(line_no) + ": column " + map.application + " is empty");
    if (!map.phase.empty()) {
      const std::size_t pi = col.at(map.phase);
      if (pi < f.size() && !f[pi].empty()) r.application += "/" + to_valid_utf8(f[pi]);
    }
    if (auto e = number(f, map.clock, r.clock_mhz); !e) return e.error();
    if (auto e = number(f, map.power, r.power_w); !e) return e.error();
    if (auto e = number(f, map.time, r.time_s); !e) return e.error();
    const std::string where = source + ":" + std::to_string(line_no) + ": ";
    if (r.clock_mhz <= 0) return make_error(Errc::parse, where + map.clock + " must be > 0 MHz");
    if (r.power_w <= 0) return make_error(Errc::parse, where + map.power + " must be > 0 W");
    if (r.time_s <= 0) return make_error(Errc::parse, where + map.time + " must be > 0 s");
    for (const auto& a : d.activity) {
      double v = 0;
      if (auto e = number(f, a, v); !e) return e.error();
      if (v < 0) return make_error(Errc::parse, where + a + " must be >= 0");
      r.activity.push_back(v);
    }
    if (!map.pred_power.empty() || !map.pred_time.empty()) {
      double pp = 0, pt = 0;
      if (auto e = number(f, map.pred_power, pp); !e) return e.error();
      if (auto e = number(f, map.pred_time, pt); !e) return e.error();
      r.pred_power_w = pp;
      r.pred_time_s = pt;
    }
    if (!map.power_limit.empty()) {
      double pl = 0;
      if (auto e = number(f, map.power_limit, pl); !e) return e.error();
      if (pl <= 0) return make_error(Errc::parse, where + map.power_limit + " must be > 0 W");
      r.power_limit_w = pl;
    }
    if (!map.quality.empty()) {
      double q = 0;
      if (auto e = number(f, map.quality, q); !e) return e.error();
      r.quality = q;
    }
    d.rows.push_back(std::move(r));
  }
  if (d.rows.empty()) return make_error(Errc::parse, source + ": no data rows");
  return d;
}

Result<Dataset> read_csv(const std::string& path, const ColumnMap& map) {
  // A sweep CSV of a million rows is ~200 MB; more than 2 GiB is not a sweep (and /dev/zero, a
  // folder or a FIFO is refused by read_text_file rather than read without end).
  auto text = read_text_file(path, std::size_t{2} << 30);
  if (!text) return text.error().code == Errc::not_found ? make_error(Errc::not_found, "cannot open " + path + ": no such file") : text.error();
  return parse_csv(*text, map, path);
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

bool varies_power_limit(const Dataset& d) {
  std::map<std::string, double> first;
  for (const auto& r : d.rows) {
    const double pl = r.power_limit_w.value_or(-1);
    auto [it, inserted] = first.emplace(r.application, pl);
    if (!inserted && it->second != pl) return true;
  }
  return false;
}

std::size_t flag_outliers(Dataset& d, const OutlierRule& rule) {
  std::size_t marked = 0;
  for (auto& r : d.rows) {
    r.outlier = false;
    r.outlier_reason.clear();
  }
  // The rule compares neighbouring clocks at one setting; a power-limit sweep has several powers
  // per clock by design, so it is not applied there.
  if (!rule.enabled || rule.window < 1 || varies_power_limit(d)) return 0;
  for (const auto& [app, idx] : d.groups()) {
    const int n = static_cast<int>(idx.size());
    if (n < 2 * rule.window + 1) continue;  // too short a sweep to judge
    for (int i = 0; i < n; ++i) {
      std::vector<std::size_t> nb;
      for (int j = std::max(0, i - rule.window); j <= std::min(n - 1, i + rule.window); ++j)
        if (j != i) nb.push_back(idx[static_cast<std::size_t>(j)]);
      Row& r = d.rows[idx[static_cast<std::size_t>(i)]];
      auto neighbours_median = [&](auto value_of) {
        std::vector<double> v;
        for (auto k : nb) v.push_back(value_of(d.rows[k]));
        return median(v);
      };
      auto mark = [&](std::string reason) {
        r.outlier = true;
        r.outlier_reason = std::move(reason);
      };
      const double mp = neighbours_median([](const Row& x) { return x.power_w; });
      if (std::abs(r.power_w / mp - 1) > rule.power_tol) {
        mark(fmt::format("power {:.1f} W vs {:.1f} W at neighbouring clocks", r.power_w, mp));
      }
      if (rule.time_tol > 0 && !r.outlier) {
        const double mt = neighbours_median([](const Row& x) { return x.time_s; });
        if (std::abs(r.time_s / mt - 1) > rule.time_tol) mark(fmt::format("run time {:.2f} s vs {:.2f} s at neighbouring clocks", r.time_s, mt));
      }
      for (std::size_t a = 0; a < d.activity.size() && !r.outlier; ++a) {
        const double m = neighbours_median([a](const Row& x) { return x.activity[a]; });
        if (std::abs(r.activity[a] - m) > rule.activity_abs + rule.activity_rel * m) {
          mark(fmt::format("{} {:.3f} vs {:.3f} at neighbouring clocks", d.activity[a], r.activity[a], m));
        }
      }
      if (r.outlier) ++marked;
    }
  }
  return marked;
}

}  // namespace jouleprof::models
