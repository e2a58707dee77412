#include "jouleprof/measure/footprint.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "jouleprof/core/files.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/core/units.hpp"
#include "jouleprof/measure/repeat_label.hpp"
#include "jouleprof/result/sections.hpp"

namespace jouleprof {
namespace {

using json = nlohmann::json;

constexpr double kJPerKwh = 3.6e6;

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}
constexpr double kMaxIntensity = 5000;  // g/kWh: the dirtiest grids are ~1000
constexpr double kMaxPrice = 1e6;       // per kWh, in whatever currency

Result<double> parse_value(const std::string& text, double max, const std::string& where) {
  const std::string t = trim(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || errno != 0 || !(v >= 0 && v <= max)) {
    return make_error(Errc::invalid_argument, fmt::format("{} must be a number from 0 to {:g}, got '{}'", where, max, clean_label(t)));
  }
  return v;
}

std::string config_path() {
  if (const char* p = std::getenv("JOULEPROF_CONFIG"); p != nullptr && *p != '\0') return p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && *x == '/') return std::string(x) + "/jouleprof/config";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h == '/') return std::string(h) + "/.config/jouleprof/config";
  return {};
}

struct ConfigValue {
  std::string value, where;
};

// `key = value` lines of the config file; a missing file is no settings.
Result<std::map<std::string, ConfigValue>> read_config() {
  std::map<std::string, ConfigValue> out;
  const std::string path = config_path();
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return out;
  if (!S_ISREG(st.st_mode)) return make_error(Errc::invalid_argument, "config " + path + " is not a regular file");
  auto text = read_text_file(path, std::size_t{1} << 20);
  if (!text) return text.error();
  std::size_t line_no = 0, pos = 0;
  while (pos <= text->size()) {
    const std::size_t nl = std::min(text->find('\n', pos), text->size());
    std::string line = text->substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    line = trim(line);
    if (line.empty()) continue;
    const auto eq = line.find('=');
    const std::string where = fmt::format("config {}:{}", path, line_no);
    if (eq == std::string::npos) return make_error(Errc::invalid_argument, where + ": expected 'key = value'");
    const std::string key = trim(line.substr(0, eq));
    if (key != "carbon-intensity" && key != "price" && key != "carbon-source") {
      return make_error(Errc::invalid_argument, where + ": unknown key '" + clean_label(key) +
                                                    "' (known: carbon-intensity, carbon-source, price)");
    }
    out[key] = {trim(line.substr(eq + 1)), where};
    if (pos > text->size()) break;
  }
  return out;
}

double sum_uncertainty(const WindowResult& w) {
  double u = 0;
  for (const GpuEnergy& g : w.gpus) u += g.uncertainty_j;
  return u;
}

// gCO2e and cost of an energy and its uncertainty.
json convert(const FootprintSettings& s, double energy_j, double uncertainty_j) {
  json j;
  j["energy_kwh"] = energy_j / kJPerKwh;
  if (s.carbon_g_per_kwh) {
    j["gco2e"] = energy_j / kJPerKwh * *s.carbon_g_per_kwh;
    j["gco2e_uncertainty"] = uncertainty_j / kJPerKwh * *s.carbon_g_per_kwh;
  }
  if (s.price_per_kwh) {
    j["cost"] = energy_j / kJPerKwh * *s.price_per_kwh;
    j["cost_uncertainty"] = uncertainty_j / kJPerKwh * *s.price_per_kwh;
  }
  return j;
}

// A window's figures and, per counted unit (tokens ...), the same per unit.
json window_footprint(const WindowResult& w, const FootprintSettings& s) {
  json x = convert(s, w.gpu_energy_j, sum_uncertainty(w));
  json per = json::object();
  for (const auto& [k, v] : w.counts) {
    if (v > 0) per[per_unit_name(k)] = convert(s, w.gpu_energy_j / v, sum_uncertainty(w) / v);
  }
  if (!per.empty()) x["per"] = per;
  return x;
}

std::string amount(const json& j, const char* key, const char* unit) {
  if (!j.contains(key) || !j[key].is_number()) return "";
  const std::string u = std::string(key) + "_uncertainty";
  const double v = j[key].get<double>();
  const double e = j.contains(u) && j[u].is_number() ? j[u].get<double>() : 0;
  return e > 0 ? fmt::format("{:.4g} ± {:.2g}{}", v, e, unit) : fmt::format("{:.4g}{}", v, unit);
}

void print_footprint_text(const std::string& section_json, std::ostream& out) {
  const json j = json::parse(section_json, nullptr, false);
  if (!j.is_object()) return;
  if (j.contains("carbon_intensity_g_per_kwh")) {
    fmt::print(out, "  carbon intensity {:g} gCO2e/kWh ({})\n", j.value("carbon_intensity_g_per_kwh", 0.0),
               j.value("carbon_intensity_source", std::string("?")));
  }
  if (j.contains("price_per_kwh")) {
    fmt::print(out, "  price {:g} per kWh ({})\n", j.value("price_per_kwh", 0.0), j.value("price_source", std::string("?")));
  }
  fmt::print(out, "  of {}; ± from the energy's uncertainty (repeats: 95% CI)\n", j.value("scope", std::string("GPU energy")));
  for (const json& w : j.value("windows", json::array())) {
    const std::string kind = w.value("kind", "");
    if (kind != "run" && kind != "phase" && kind != "window") continue;
    std::string line = fmt::format("  {:<24}", w.value("label", w.value("name", std::string("?"))));
    const std::string c = amount(w, "gco2e", " gCO2e"), p = amount(w, "cost", "");
    if (!c.empty()) line += "  " + c;
    if (!p.empty()) line += "  cost " + p;
    const json pers = w.value("per", json::object());
    for (const auto& [unit, per] : pers.items()) {
      const std::string pc = amount(per, "gco2e", " gCO2e"), pp = amount(per, "cost", "");
      line += "  (per " + unit + ":" + (pc.empty() ? "" : " " + pc) + (pp.empty() ? "" : " cost " + pp) + ")";
    }
    fmt::print(out, "{}\n", line);
  }
  for (const json& r : j.value("repeats", json::array())) {
    const std::string c = amount(r, "gco2e", " gCO2e"), p = amount(r, "cost", "");
    fmt::print(out, "  over {} repeats, {}: {}{}\n", r.value("n", 0), r.value("statistic", std::string("?")), c,
               p.empty() ? "" : (c.empty() ? "cost " : "  cost ") + p);
  }
}

const bool kFootprintRendererRegistered =
    register_section_renderer({kFootprintSchema, "carbon and cost", &print_footprint_text});

}  // namespace

Result<FootprintSettings> resolve_footprint(std::optional<double> carbon_flag, std::optional<double> price_flag,
                                            const std::string& carbon_note_flag, const FootprintNames& names) {
  (void)kFootprintRendererRegistered;
  FootprintSettings s;
  auto cfg = read_config();
  if (!cfg) return cfg.error();
  auto from = [&](std::optional<double> flag, const char* flag_name, const char* env, const char* key, double max,
                  std::optional<double>& value, std::string& source) -> Result<void> {
    if (flag) {
      if (!(*flag >= 0 && *flag <= max)) {
        return make_error(Errc::invalid_argument, fmt::format("{} must be a number from 0 to {:g}", flag_name, max));
      }
      value = *flag;
      source = flag_name;
      return {};
    }
    if (const char* e = std::getenv(env); e != nullptr && *e != '\0') {
      auto v = parse_value(e, max, std::string("$") + env);
      if (!v) return v.error();
      value = *v;
      source = std::string("$") + env;
      return {};
    }
    if (auto it = cfg->find(key); it != cfg->end()) {
      auto v = parse_value(it->second.value, max, it->second.where + ": " + key);
      if (!v) return v.error();
      value = *v;
      source = it->second.where;
    }
    return {};
  };
  if (auto r = from(carbon_flag, names.carbon, "JOULEPROF_CARBON_INTENSITY", "carbon-intensity", kMaxIntensity,
                    s.carbon_g_per_kwh, s.carbon_source);
      !r) {
    return r.error();
  }
  if (auto r = from(price_flag, names.price, "JOULEPROF_PRICE", "price", kMaxPrice, s.price_per_kwh, s.price_source); !r) {
    return r.error();
  }
  std::string note = carbon_note_flag;
  if (note.empty()) {
    if (const char* e = std::getenv("JOULEPROF_CARBON_SOURCE"); e != nullptr) note = e;
  }
  if (note.empty()) {
    if (auto it = cfg->find("carbon-source"); it != cfg->end()) note = it->second.value;
  }
  if (!note.empty()) {
    if (!s.carbon_g_per_kwh) {
      return make_error(Errc::invalid_argument, std::string(names.source) + " is given without a carbon intensity");
    }
    s.carbon_source += ": " + clean_label(note);
  }
  return s;
}

std::string footprint_section_json(const Measurement& m, const FootprintSettings& s) {
  json j;
  j["schema"] = kFootprintSchema;
  j["scope"] = m.gpus.size() > 1 ? "GPU energy, summed over the GPUs" : "GPU energy";
  if (s.carbon_g_per_kwh) {
    j["carbon_intensity_g_per_kwh"] = *s.carbon_g_per_kwh;
    j["carbon_intensity_source"] = s.carbon_source;
  }
  if (s.price_per_kwh) {
    j["price_per_kwh"] = *s.price_per_kwh;
    j["price_source"] = s.price_source;
  }
  json wins = json::array();
  for (std::size_t i = 0; i < m.windows.size(); ++i) {
    const WindowResult& w = m.windows[i];
    json x = window_footprint(w, s);
    x["window"] = i;
    x["name"] = w.name;
    x["kind"] = w.kind;
    x["label"] = (w.kind == "run" || w.kind == "warmup") ? repeat_label(m, w.run)
                 : (w.kind == "phase" && w.run >= 0)     ? w.name + " (" + repeat_label(m, w.run) + ")"
                                                         : w.name;
    wins.push_back(std::move(x));
  }
  j["windows"] = wins;
  json reps = json::array();
  for (const RepeatStat& st : m.stats) {
    const bool energy = st.what == "gpu_energy_j" || st.what.find("gpu_energy_per_") != std::string::npos ||
                        (st.what.rfind("phase:", 0) == 0 && st.what.size() > 13 &&
                         st.what.compare(st.what.size() - 13, 13, ":gpu_energy_j") == 0);
    if (!energy || st.summary.n < 2) continue;
    json r = convert(s, st.summary.mean, st.summary.ci95_half_width);
    r["statistic"] = st.what;
    r["n"] = st.summary.n;
    reps.push_back(std::move(r));
  }
  j["repeats"] = reps;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string window_footprint_json(const WindowResult& w, const FootprintSettings& s) {
  return window_footprint(w, s).dump(-1, ' ', false, json::error_handler_t::replace);
}

void add_footprint(Measurement& m, const FootprintSettings& s) {
  if (!s.any()) return;
  m.sections[kFootprintSection] = footprint_section_json(m, s);
}

void print_footprint(const std::string& section_json, std::ostream& out) { print_footprint_text(section_json, out); }

}  // namespace jouleprof
