#include "options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <re2/re2.h>
#include <set>

#include "jouleprof/core/files.hpp"
#include "jouleprof/core/suggest.hpp"

namespace jouleprof::cli {
namespace {

// Options already given a range by checked(): the generic pass leaves them alone.
std::set<const CLI::Option*>& ranged() {
  static std::set<const CLI::Option*> s;
  return s;
}

std::string option_name(const CLI::Option* o) { return o->get_name(false, false); }

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

void collect_option_names(const CLI::App& app, std::vector<std::string>& out) {
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); })) out.push_back(s->get_name());
  return out;
}

// The deepest subcommand the parser entered (the app itself when none).
const CLI::App* deepest_parsed(const CLI::App& app) {
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (s->parsed()) return deepest_parsed(*s);
  }
  return &app;
}

std::string command_path(const CLI::App* a) {
  std::string s;
  for (; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) s = a->get_name() + (s.empty() ? "" : " ") + s;
  return s;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

CLI::Option* checked(CLI::Option* o, IntRange r) {
  const std::string name = option_name(o);
  ranged().insert(o);
  return o->check(CLI::Validator(
      [name, r](std::string& s) -> std::string {
        auto v = parse_checked_int(name, s, r);
        return v ? std::string() : v.error().message;
      },
      "", "checked"));
}

CLI::Option* checked(CLI::Option* o, DoubleRange r) {
  const std::string name = option_name(o);
  ranged().insert(o);
  return o->check(CLI::Validator(
      [name, r](std::string& s) -> std::string {
        auto v = parse_checked_double(name, s, r);
        return v ? std::string() : v.error().message;
      },
      "", "checked"));
}

CLI::Option* add_json_option(CLI::App* c, std::string& path, const std::string& what) {
  return c->add_option("--json", path, what + " ('-' or no value: stdout)")->expected(0, 1)->default_str("-");
}

void add_measuring_flags(CLI::App* c, MeasuringFlags& f, const MeasuringFlagSet& which) {
  const std::vector<std::string>& names = gpu_backend_names();
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i) list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  std::string device_help = which.device_help;
  if (const auto at = device_help.find("{}"); at != std::string::npos) device_help.replace(at, 2, list);
  c->add_option("--device", f.device, device_help)->check(CLI::IsMember(names))->capture_default_str();
  if (which.gpus) c->add_option("--gpus", f.gpus, which.gpus_help);
  checked(c->add_option("--idle", f.idle_s, which.idle_help), DoubleRange{.min = 0, .max = 3600})->capture_default_str();
  if (which.idle_from) c->add_option("--idle-from", f.idle_from, "take the idle baseline from an earlier result JSON");
  if (which.nvml_lib) c->add_option("--nvml-lib", f.nvml_lib, "NVML library to load (default: libnvidia-ml.so.1, or $JOULEPROF_NVML_LIB)");
  if (which.sim_power) {
    checked(c->add_option("--sim-power", f.sim_power_w, which.sim_power_help), DoubleRange{.min = 0, .max = 5000})->capture_default_str();
  }
  if (which.sim_scenario) c->add_option("--sim-scenario", f.sim_scenario, "scenario file for the simulated GPU (docs/simulated-gpu.md)");
  if (which.no_cpu) c->add_flag("--no-cpu", f.no_cpu, "do not read CPU energy (RAPL)");
}

Result<void> apply_measuring_flags(const MeasuringFlags& f, MeasureOptions& o) {
  GpuSelection& sel = o.monitor.gpus;
  sel.backend = f.device;
  sel.ids = split_gpu_list(f.gpus);
  // The same GPU twice would be measured twice and its energy counted double.
  for (std::size_t i = 0; i < sel.ids.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (sel.ids[i] == sel.ids[j]) return make_error(Errc::invalid_argument, "--gpus names GPU '" + sel.ids[i] + "' twice");
    }
  }
  if (!f.gpus.empty() && sel.ids.empty()) return make_error(Errc::invalid_argument, "--gpus names no GPU");
  apply_gpu_environment(sel, f.nvml_lib);
  sel.sim_scenario = f.sim_scenario;
  o.sim_active_w = f.sim_power_w;
  o.idle_s = f.idle_s;
  if (!f.idle_from.empty()) {
    auto idle = idle_power_from_result(f.idle_from);
    if (!idle) return idle.error();
    o.idle_w = *idle;
    o.idle_source = "from " + f.idle_from;
  }
  o.monitor.sampler.read_cpu = !f.no_cpu;
  return {};
}

Result<std::map<std::string, std::string>> parse_tags(const std::vector<std::string>& tags) {
  std::map<std::string, std::string> out;
  for (const std::string& t : tags) {
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) return make_error(Errc::invalid_argument, "--tag needs KEY=VALUE, got '" + t + "'");
    out[t.substr(0, eq)] = t.substr(eq + 1);
  }
  return out;
}

Result<void> write_output(const std::string& path, const std::string& text) {
  // core/files.hpp: '-' is stdout; a file is replaced atomically, every write checked.
  return write_file_atomic(path, text);
}

Result<void> write_output_with(const std::string& path, const std::function<Result<void>(const std::string&)>& write_file) {
  if (!is_stdout(path)) return write_file(path);
  std::error_code ec;
  std::string tmpl = (std::filesystem::temp_directory_path(ec) / "jouleprof-out-XXXXXX").string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) return make_error(Errc::io, std::string("cannot create a temporary file: ") + std::strerror(errno));
  close(fd);
  const std::string tmp(name.data());
  auto w = write_file(tmp);
  if (w) {
    std::ifstream in(tmp, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    w = write_output("-", bytes);
  }
  std::remove(tmp.c_str());
  return w;
}

const std::vector<GlobalOption>& global_options() {
  static const std::vector<GlobalOption> g{{"--db", true, false},   {"-q", false, false},         {"--quiet", false, false},
                                           {"--json", true, true},  {"--csv", true, false},       {"--progress", false, false}};
  return g;
}

GlobalFlags& global_flags() {
  static GlobalFlags g;
  return g;
}

namespace detail {

void apply_contract(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    if (o->get_expected_max() == 0 || ranged().count(o) != 0) continue;  // flags, or already ranged
    const std::string type = o->get_type_name();
    const std::string name = option_name(o);
    if (starts_with(type, "INT") || starts_with(type, "UINT")) {
      const IntRange r = starts_with(type, "UINT") ? IntRange{.min = 0} : IntRange{};
      o->check(CLI::Validator(
          [name, r](std::string& s) -> std::string {
            auto v = parse_checked_int(name, s, r);
            return v ? std::string() : v.error().message;
          },
          "", "number"));
    } else if (starts_with(type, "FLOAT")) {
      o->check(CLI::Validator(
          [name](std::string& s) -> std::string {
            auto v = parse_checked_double(name, s);
            return v ? std::string() : v.error().message;
          },
          "", "number"));
    } else if (name == "--db") {
      // An empty store path would silently mean the default store.
      o->check(CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "--db needs a file name, got ''" : std::string(); }, "", "FILE"));
    }
  }
  // Every command takes -q and --progress (docs/cli.md); where it has none of its own, the
  // global ones (global_flags()) hold them.
  const bool leaf = app.get_subcommands([](CLI::App* a) { return !a->get_name().empty(); }).empty();
  if (leaf && app.get_parent() != nullptr) {
    auto has = [&](const std::string& n) { return app.get_option_no_throw(n) != nullptr; };
    if (!has("--quiet") && !has("-q")) app.add_flag("-q,--quiet", global_flags().quiet, "no messages on stderr besides errors");
    if (!has("--progress")) app.add_flag("--progress", global_flags().progress, "progress on stderr even when it is not a terminal");
  }
  for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) {
    s->fallthrough();
    apply_contract(*s);
  }
}

std::vector<std::string> hoist_global_options(const std::vector<std::string>& args, const CLI::App& app) {
  const auto subs = subcommand_names(app);
  auto is_sub = [&](const std::string& w) { return std::find(subs.begin(), subs.end(), w) != subs.end(); };
  std::vector<std::string> moved, rest;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_sub(a)) break;
    const GlobalOption* g = nullptr;
    for (const auto& opt : global_options()) {
      if (a == opt.name || (opt.takes_value && starts_with(a, std::string(opt.name) + "="))) g = &opt;
    }
    if (g == nullptr) return args;  // something else first (--help, --version, a typo): leave it to the parser
    moved.push_back(a);
    if (g->takes_value && a == g->name && i + 1 < args.size()) {
      const std::string& v = args[i + 1];
      const bool is_value = g->value_optional ? (v == "-" || (!starts_with(v, "-") && !is_sub(v))) : true;
      if (is_value) moved.push_back(args[++i]);
    }
  }
  if (moved.empty() || i == args.size()) return args;
  rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  rest.insert(rest.end(), moved.begin(), moved.end());
  return rest;
}

std::string help_path(const CLI::App& app) {
  const std::string p = command_path(deepest_parsed(app));
  return p.empty() ? "" : " " + p;
}

std::string parse_error_message(const CLI::ParseError& e, const CLI::App& app, const std::vector<std::string>& args) {
  std::string msg = e.what();
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  const CLI::App* where = deepest_parsed(app);
  const std::string cmd = command_path(where);
  // RE2 (linear time, no recursion): the message quotes what was typed, which may be any length.
  std::string m1, m2, m3, m4;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    static const RE2 extras(R"(not expected: (\S+))");
    if (RE2::PartialMatch(msg, extras, &m1)) {
      const std::string word = m1;
      if (starts_with(word, "-")) {
        std::vector<std::string> names;
        for (const CLI::App* a = where; a != nullptr; a = a->get_parent()) collect_option_names(*a, names);
        return (cmd.empty() ? "" : cmd + ": ") + "unknown option " + word + did_you_mean(word.substr(0, word.find('=')), names);
      }
      const auto subs = subcommand_names(*where);
      if (!subs.empty() && where->get_subcommands().empty()) {
        return "unknown command '" + (cmd.empty() ? "" : cmd + " ") + word + "'" + did_you_mean(word, subs) +
               "; commands: " + join(subs, ", ");
      }
      return (cmd.empty() ? "" : cmd + ": ") + "unexpected argument '" + word + "'";
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && starts_with(msg, "A subcommand")) {
    // The word typed where the subcommand should be: the first after the command's own path
    // that is neither an option nor an option's value.
    std::size_t depth = 0;
    for (const CLI::App* a = where; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) ++depth;
    std::size_t seen = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& w = args[i];
      if (starts_with(w, "-")) {
        if (seen < depth) continue;
        const CLI::Option* o = where->get_option_no_throw(w.substr(0, w.find('=')));
        if (o == nullptr) {
          std::vector<std::string> names;
          for (const CLI::App* a = where; a != nullptr; a = a->get_parent()) collect_option_names(*a, names);
          return (cmd.empty() ? "" : cmd + ": ") + "unknown option " + w + did_you_mean(w.substr(0, w.find('=')), names);
        }
        if (o->get_expected_max() > 0 && w.find('=') == std::string::npos) ++i;  // its value
        continue;
      }
      if (seen++ < depth) continue;
      const auto subs = subcommand_names(*where);
      return "unknown command '" + (cmd.empty() ? "" : cmd + " ") + w + "'" + did_you_mean(w, subs) + "; commands: " +
             join(subs, ", ");
    }
    return (cmd.empty() ? std::string("a command is needed") : cmd + " needs a command") + ": " +
           join(subcommand_names(*where), ", ");
  }
  static const RE2 member(R"(^(\S+): (.*) not in \{(.*)\})");
  if (RE2::PartialMatch(msg, member, &m1, &m2, &m3)) {
    std::vector<std::string> allowed;
    const std::string list = m3;
    std::size_t p = 0;
    while (p <= list.size()) {
      const auto q = list.find(',', p);
      allowed.push_back(list.substr(p, q == std::string::npos ? std::string::npos : q - p));
      if (q == std::string::npos) break;
      p = q + 1;
    }
    return m1 + " must be one of " + join(allowed, ", ") + ", got '" + m2 + "'" + did_you_mean(m2, allowed);
  }
  // CLI11's own range checks print DBL_MAX in full; say the range in words instead.
  static const RE2 range(R"(^(\S+): Value (\S+) not in range (\S+) to (\S+))");
  if (RE2::PartialMatch(msg, range, &m1, &m2, &m3, &m4)) {
    const double lo = std::strtod(m3.c_str(), nullptr), hi = std::strtod(m4.c_str(), nullptr);
    DoubleRange r;
    if (lo > 0 && lo < 1e-300) {
      r.min = 0;
      r.min_exclusive = true;
    } else if (lo > -1e300) {
      r.min = lo;
    }
    if (hi < 1e300) r.max = hi;
    auto v = parse_checked_double(m1, m2, r);
    if (v) {
      // CLI11 prints DBL_MIN (PositiveNumber's bound) as 0.000000: the value it refused is the bound.
      r.min_exclusive = true;
      return range_message(m1, *v, r);
    }
    return v.error().message;
  }
  // Our validators already name the option: "--runs: --runs must be ≥ 1" → "--runs must be ≥ 1".
  static const RE2 dup(R"(^(\S+): (\S+) (.*)$)");
  if (RE2::PartialMatch(msg, dup, &m1, &m2, &m3) && m1 == m2) return m1 + " " + m3;
  static const RE2 conv(R"(Could not convert: (\S+) = (.*)$)");
  if (RE2::PartialMatch(msg, conv, &m1, &m2)) return m1 + " needs a number that fits, got '" + m2 + "'";
  (void)args;
  return msg;
}

}  // namespace detail
}  // namespace jouleprof::cli
