// Sweep planning: the cross product of settings and parameters, validated and ordered.
#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <random>

#include "jouleprof/control/sweep.hpp"
#include "jouleprof/core/json_checked.hpp"
#include "jouleprof/core/parse.hpp"
#include "jouleprof/core/text.hpp"

namespace jouleprof::control {
namespace {

using nlohmann::json;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

Result<unsigned> parse_mhz(const std::string& t, const char* what) {
  if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) {
    return make_error(Errc::invalid_argument, fmt::format("{}: '{}' is not a whole number", what, t));
  }
  return static_cast<unsigned>(std::stoul(t));
}

// FNV-1a, for a sweep id that is the same when the same sweep is started again.
uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string point_key(const Setting& s, const std::map<std::string, std::string>& params) {
  auto opt = [](const std::optional<unsigned>& v) { return v ? std::to_string(*v) : std::string("-"); };
  std::string k = "clock=" + opt(s.gpu_clock_mhz) + " mem=" + opt(s.mem_clock_mhz) + " pl=" + opt(s.power_limit_w);
  for (const auto& [key, v] : params) k += " " + key + "=" + v;
  return k;
}

// Text that must come back byte for byte (a command to run, a path, a parameter value): a JSON
// string when it is valid UTF-8, else {"hex": "..."} (JSON strings hold nothing else).
json exact_json(const std::string& s) {
  if (is_valid_utf8(s)) return s;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : s) {
    hex += kHex[c >> 4];
    hex += kHex[c & 0x0F];
  }
  return json{{"hex", hex}};
}

json exact_json(const std::vector<std::string>& v) {
  json a = json::array();
  for (const auto& s : v) a.push_back(exact_json(s));
  return a;
}

std::string exact_from_json(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  const std::string hex = j.at("hex").get<std::string>();
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    refuse_json(j, "not a hex digit in " + j.dump());
  };
  if (hex.size() % 2 != 0) refuse_json(j, "odd number of hex digits in " + j.dump());
  std::string s;
  for (std::size_t i = 0; i < hex.size(); i += 2) s += static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1]));
  return s;
}

std::vector<std::string> exact_list_from_json(const json& j) {
  if (!j.is_array()) refuse_json(j, "expected an array, found " + j.dump());
  std::vector<std::string> v;
  for (const auto& x : j) v.push_back(exact_from_json(x));
  return v;
}

json spec_json(const SweepSpec& s) {
  // Tags and the command line are only recorded (as valid UTF-8, core/text.hpp): made valid here
  // so that a stray byte in them cannot stop the plan from being written.
  std::map<std::string, std::string> tags;
  for (const auto& [k, v] : s.tags) tags[to_valid_utf8(k)] = to_valid_utf8(v);
  std::vector<std::string> invocation;
  for (const auto& a : s.invocation) invocation.push_back(to_valid_utf8(a));
  json params = json::array();
  for (const auto& p : s.params) params.push_back({{"key", exact_json(p.key)}, {"values", exact_json(p.values)}});
  return {{"command", exact_json(s.command)}, {"device", s.device}, {"nvml_library", exact_json(s.nvml_library)},
          {"sim_scenario", exact_json(s.sim_scenario)}, {"gpus", exact_json(s.gpus)}, {"clocks", exact_json(s.clocks)},
          {"mem_clocks_mhz", s.mem_clocks_mhz}, {"power_limits_w", s.power_limits_w}, {"params", params},
          {"mode", s.mode},             {"order", s.order},           {"seed", s.seed},
          {"runs", s.runs},             {"warmup", s.warmup},         {"idle_s", s.idle_s},
          {"cooldown", s.cooldown},     {"observe_only", s.observe_only}, {"multi_gpu", s.multi_gpu},
          {"sweep_id", s.sweep_id},     {"metrics", s.metrics},       {"metrics_source", s.metrics_source},
          {"sim_power_w", s.sim_power_w}, {"read_cpu", s.read_cpu},   {"tags", tags},
          {"invocation", invocation}};
}

// Plan files are read by the same jouleprof that wrote them (workers, SLURM tasks); another
// version's plan is refused rather than read with options missing.
constexpr int kPlanSchemaVersion = 2;

}  // namespace

Result<std::vector<unsigned>> expand_clocks(const std::string& spec, const std::vector<unsigned>& supported) {
  if (spec.empty()) return std::vector<unsigned>{};
  if (spec == "all") return supported;
  if (spec.rfind("step:", 0) == 0) {
    auto n = parse_mhz(spec.substr(5), "--clocks step:N");
    if (!n) return n.error();
    if (*n < 1) return make_error(Errc::invalid_argument, "--clocks step:N needs N ≥ 1");
    std::vector<unsigned> out;
    for (std::size_t i = 0; i < supported.size(); i += *n) out.push_back(supported[i]);
    if (!supported.empty() && out.back() != supported.back()) out.push_back(supported.back());
    return out;
  }
  std::vector<unsigned> out;
  for (const auto& t : split(spec, ',')) {
    auto v = parse_mhz(t, "--clocks");
    if (!v) return v.error();
    out.push_back(*v);
  }
  return out;
}

Result<SweepParam> parse_param(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return make_error(Errc::invalid_argument, "--param needs KEY=V1,V2,..., got '" + text + "'");
  }
  SweepParam p;
  p.key = text.substr(0, eq);
  if (p.key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos) {
    return make_error(Errc::invalid_argument, "--param key '" + p.key + "' must be letters, digits or _");
  }
  p.values = split(text.substr(eq + 1), ',');
  for (const auto& v : p.values) {
    if (v.empty()) return make_error(Errc::invalid_argument, "--param " + p.key + ": empty value in '" + text + "'");
  }
  return p;
}

Result<std::vector<std::string>> substitute(const std::vector<std::string>& command,
                                            const std::map<std::string, std::string>& params) {
  std::vector<std::string> out;
  for (const std::string& arg : command) {
    std::string s;
    for (std::size_t i = 0; i < arg.size(); ++i) {
      const auto close = arg[i] == '{' ? arg.find('}', i) : std::string::npos;
      if (close == std::string::npos) {
        s += arg[i];
        continue;
      }
      const std::string key = arg.substr(i + 1, close - i - 1);
      auto it = params.find(key);
      if (it == params.end()) {
        if (key.empty() || key.find_first_of(" \"'") != std::string::npos) {  // not a placeholder (e.g. JSON)
          s += arg[i];
          continue;
        }
        return make_error(Errc::invalid_argument, "the command uses {" + key + "} but no --param " + key + "=... is given");
      }
      s += it->second;
      i = close;
    }
    out.push_back(s);
  }
  return out;
}

Result<void> check_sweep_id(const std::string& id) {
  // An id names folders (jouleprof-sweep-ID), SLURM job names and tags: one path component of
  // letters, digits, '.', '_' and '-', not starting with '.' or '-'.
  const bool ok = !id.empty() && id.size() <= 64 && id.front() != '.' && id.front() != '-' &&
                  id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
                      std::string::npos;
  if (ok) return {};
  return make_error(Errc::invalid_argument,
                    "--sweep-id '" + for_terminal(id) +
                        "': use 1-64 letters, digits, '.', '_' or '-', not starting with '.' or '-' (it names a folder)");
}

namespace {

// The shared body of plan_sweep and plan_sweep_unchecked: `gpus` empty means no GPU can be asked
// (a SLURM login node), so clocks must be a list and nothing is validated against a GPU.
Result<SweepPlan> make_plan(const SweepSpec& spec, const std::vector<GpuCapabilities>& gpus, bool offline) {
  if (spec.runs < 1) return make_error(Errc::invalid_argument, "--runs must be ≥ 1");
  if (spec.warmup < 0) return make_error(Errc::invalid_argument, "--warmup must be ≥ 0");
  if (spec.mode != "baseline" && spec.mode != "dvfs" && spec.mode != "custom") {
    return make_error(Errc::invalid_argument, "--mode must be baseline, dvfs or custom, not '" + spec.mode + "'");
  }
  if (spec.order != "random" && spec.order != "interleaved" && spec.order != "sequential") {
    return make_error(Errc::invalid_argument, "--order must be random, interleaved or sequential, not '" + spec.order + "'");
  }
  if (!spec.sweep_id.empty()) {
    if (auto r = check_sweep_id(spec.sweep_id); !r) return r.error();
  }
  if (gpus.empty() && !offline) return make_error(Errc::not_found, "no GPU selected");
  SweepPlan plan;
  plan.spec = spec;
  // Settings: baseline changes nothing; dvfs defaults to every supported clock.
  std::vector<std::optional<unsigned>> clocks{std::nullopt}, mems{std::nullopt}, limits{std::nullopt};
  if (spec.mode != "baseline") {
    const std::string cs = spec.clocks.empty() && spec.mode == "dvfs" ? "all" : spec.clocks;
    if (offline && (cs == "all" || cs.rfind("step:", 0) == 0)) {
      return make_error(Errc::unavailable,
                        "--clocks " + cs + " needs the GPU's list of supported clocks, which this host cannot read (no "
                        "GPU or NVML here): give the clocks as a list (--clocks 1980,1410), or run the plan on a GPU node");
    }
    auto list = expand_clocks(cs, offline ? std::vector<unsigned>{} : gpus.front().all_gpu_clocks());
    if (!list) return list.error();
    if (!list->empty()) clocks.assign(list->begin(), list->end());
    if (!spec.mem_clocks_mhz.empty()) mems.assign(spec.mem_clocks_mhz.begin(), spec.mem_clocks_mhz.end());
    if (!spec.power_limits_w.empty()) limits.assign(spec.power_limits_w.begin(), spec.power_limits_w.end());
  } else if (!spec.clocks.empty() || !spec.mem_clocks_mhz.empty() || !spec.power_limits_w.empty()) {
    return make_error(Errc::invalid_argument, "--mode baseline changes nothing: drop --clocks, --mem-clocks and --power-limits");
  }
  std::vector<std::map<std::string, std::string>> combos{{}};
  for (const auto& p : spec.params) {
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& c : combos) {
      for (const auto& v : p.values) {
        auto m = c;
        m[p.key] = v;
        next.push_back(m);
      }
    }
    combos = next;
  }
  std::vector<SweepPoint> points;
  for (const auto& c : clocks) {
    for (const auto& m : mems) {
      for (const auto& l : limits) {
        for (const auto& params : combos) {
          SweepPoint p;
          p.index = static_cast<int>(points.size());
          p.setting.gpu_clock_mhz = c;
          p.setting.mem_clock_mhz = m;
          p.setting.power_limit_w = l;
          p.params = params;
          p.key = point_key(p.setting, params);
          for (const auto& g : gpus) {
            if (auto r = validate_setting(g, p.setting); !r) return r.error();
          }
          if (auto cmd = substitute(spec.command, params); !cmd) return cmd.error();
          points.push_back(p);
        }
      }
    }
  }
  // Order: shuffled (seeded) or interleaved passes, so thermal drift does not follow the clock.
  std::mt19937_64 rng(spec.seed);
  if (spec.order == "interleaved") {
    for (int pass = 0; pass < spec.runs; ++pass) {
      auto order = points;
      std::shuffle(order.begin(), order.end(), rng);
      for (auto p : order) {
        p.pass = pass;
        p.runs = 1;
        p.warmup = pass == 0 ? spec.warmup : 0;
        plan.units.push_back(p);
      }
    }
  } else {
    if (spec.order == "random") std::shuffle(points.begin(), points.end(), rng);
    for (auto p : points) {
      p.runs = spec.runs;
      p.warmup = spec.warmup;
      plan.units.push_back(p);
    }
  }
  SweepSpec id_spec = spec;
  id_spec.observe_only = false;  // an observe-only rerun is a different sweep only by its tag
  id_spec.tags.clear();          // labels: a rerun with other tags resumes the same sweep
  id_spec.invocation.clear();    // the same sweep however its command line is spelled
  plan.sweep_id = spec.sweep_id.empty() ? fmt::format("{:012x}", fnv(spec_json(id_spec).dump()) & 0xffffffffffffULL)
                                        : spec.sweep_id;
  if (spec.observe_only && spec.sweep_id.empty()) plan.sweep_id += "-observe";
  return plan;
}

}  // namespace

Result<SweepPlan> plan_sweep(const SweepSpec& spec, const std::vector<GpuCapabilities>& gpus) {
  return make_plan(spec, gpus, false);
}

Result<SweepPlan> plan_sweep_unchecked(const SweepSpec& spec) { return make_plan(spec, {}, true); }

std::string plan_to_json(const SweepPlan& p) {
  json units = json::array();
  for (const auto& u : p.units) units.push_back({{"point", u.key}, {"pass", u.pass}});
  return json{{"schema_version", kPlanSchemaVersion}, {"sweep_id", p.sweep_id}, {"spec", spec_json(p.spec)}, {"units", units}}.dump(2) + "\n";
}

Result<SweepSpec> spec_from_plan_json(const std::string& text, const std::string& path) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("spec")) {
    return make_error(Errc::parse, path + ": not a jouleprof sweep plan");
  }
  if (const auto v = j.find("schema_version"); v == j.end() || *v != kPlanSchemaVersion) {
    return make_error(Errc::invalid_argument, path + ": sweep plan schema_version " +
                                                  (v == j.end() ? std::string("missing") : v->dump()) +
                                                  ", this jouleprof reads " + std::to_string(kPlanSchemaVersion) +
                                                  " (plan again with this jouleprof)");
  }
  try {
    const json& s = j.at("spec");
    SweepSpec o;
    o.command = exact_list_from_json(s.at("command"));
    o.device = s.at("device").get<std::string>();
    o.nvml_library = exact_from_json(s.at("nvml_library"));
    o.sim_scenario = exact_from_json(s.at("sim_scenario"));
    o.gpus = exact_list_from_json(s.at("gpus"));
    o.clocks = exact_from_json(s.at("clocks"));
    // Numbers checked in their type's range (core/json_checked.hpp): 2^32 + 990 is not 990 MHz.
    const auto mhz_list = [](const json& a) {
      if (!a.is_array()) refuse_json(a, "expected an array, found " + a.dump());
      std::vector<unsigned> v;
      for (const json& x : a) v.push_back(checked_json<unsigned>(x));
      return v;
    };
    o.mem_clocks_mhz = mhz_list(s.at("mem_clocks_mhz"));
    o.power_limits_w = mhz_list(s.at("power_limits_w"));
    for (const auto& p : s.at("params")) o.params.push_back({exact_from_json(p.at("key")), exact_list_from_json(p.at("values"))});
    o.mode = s.at("mode").get<std::string>();
    o.order = s.at("order").get<std::string>();
    o.seed = checked_json<uint64_t>(s.at("seed"));
    o.runs = checked_json<int>(s.at("runs"));
    o.warmup = checked_json<int>(s.at("warmup"));
    o.idle_s = checked_json<double>(s.at("idle_s"));
    o.cooldown = s.at("cooldown").get<bool>();
    o.observe_only = s.at("observe_only").get<bool>();
    o.multi_gpu = s.at("multi_gpu").get<std::string>();
    o.sweep_id = j.at("sweep_id").get<std::string>();
    o.metrics = s.at("metrics").get<bool>();
    o.metrics_source = s.at("metrics_source").get<std::string>();
    o.sim_power_w = checked_json<double>(s.at("sim_power_w"));
    o.read_cpu = s.at("read_cpu").get<bool>();
    o.tags = s.at("tags").get<std::map<std::string, std::string>>();
    o.invocation = s.at("invocation").get<std::vector<std::string>>();
    return o;
  } catch (const json::exception& e) {
    return make_error(Errc::parse, path + ": malformed sweep plan (" + std::string(e.what()) + ")");
  }
}

std::map<std::string, std::string> point_tags(const SweepPlan& plan, const SweepPoint& u) {
  std::map<std::string, std::string> t = u.params;
  t["sweep"] = plan.sweep_id;
  t["point"] = u.key;
  t["pass"] = std::to_string(u.pass);
  if (u.setting.gpu_clock_mhz) t["clock_mhz"] = std::to_string(*u.setting.gpu_clock_mhz);
  if (u.setting.mem_clock_mhz) t["mem_clock_mhz"] = std::to_string(*u.setting.mem_clock_mhz);
  if (u.setting.power_limit_w) t["power_limit_w"] = std::to_string(*u.setting.power_limit_w);
  t["control"] = plan.spec.observe_only ? "observe-only" : "set";
  return t;
}

}  // namespace jouleprof::control
