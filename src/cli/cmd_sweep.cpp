// `jouleprof sweep [options] -- CMD`: the workload at every clock / memory clock / power limit /
// parameter combination, each point a tagged run in the store, the GPUs always restored
// (docs/sweep.md). `--slurm` submits the same plan as a job array; `--report ID` reports a stored sweep.
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "db_option.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/core/self_exe.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/control/session.hpp"
#include "jouleprof/core/progress.hpp"
#include "jouleprof/control/slurm.hpp"
#include "jouleprof/control/sweep.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/text.hpp"
#include "jouleprof/report/assets.hpp"
#include "jouleprof/report/sweep_report.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::cli {
namespace {

namespace ctl = jouleprof::control;

struct SweepFlags {
  ctl::SweepSpec spec;
  MeasuringFlags measuring;  // --device, --idle, --nvml-lib, --sim-*, --no-cpu (defaults: the spec's)
  std::string gpus, mem_clocks, power_limits;
  std::vector<std::string> params, tags;
  std::string db, journal_dir, plan, shard, report_id, json, csv, svg_dir;
  bool dry_run = false, quiet = false, progress = false, progress_off = false, discover = false, list = false;
  bool report_given = false;  // --report was on the command line (an empty id is an error, not "no report")
  // SLURM
  bool slurm = false;
  ctl::SlurmOptions sl;
};

// The NVML library a sweep loads: --nvml-lib, else $JOULEPROF_NVML_LIB (sensors' one reading of it).
std::string nvml_library(const std::string& flag, const std::string& fallback) {
  GpuSelection sel;
  sel.nvml_library = fallback;
  apply_gpu_environment(sel, flag);
  return sel.nvml_library;
}

std::string self_exe() { return self_exe_path().string(); }

std::vector<std::string> builtin_command() {
  const auto dir = self_exe_dir();
  if (dir.empty()) return {};
  std::error_code ec;
  const auto burn = dir / JOULEPROF_BURN_NAME;
  if (!std::filesystem::exists(burn, ec)) return {};
  return {burn.string(), "--seconds", "5", "--phases"};
}

// A plan file is a few kB even for thousands of points; anything far larger is not one.
constexpr std::size_t kMaxPlanBytes = 16 * 1024 * 1024;

// The NVML could not be opened: say how to go on without a GPU, as `measure` does.
Error with_sim_hint(const Error& e, const std::string& device) {
  if (device == "sim") return e;
  return make_error(e.code, e.message + " (use --device sim for the simulated GPU)");
}

Result<std::vector<unsigned>> parse_list(const std::string& text, const char* flag) {
  std::vector<unsigned> out;
  if (text.empty()) return out;
  std::stringstream ss(text);
  std::string t;
  while (std::getline(ss, t, ',')) {
    if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) {
      return make_error(Errc::invalid_argument, fmt::format("{}: '{}' is not a whole number", flag, t));
    }
    out.push_back(static_cast<unsigned>(std::stoul(t)));
  }
  return out;
}

// Progress on stderr (TTY or --progress): point i/N, elapsed, ETA, the last point's figures,
// in the shared format (core/progress.hpp).
void print_progress(const ctl::SweepProgress& p) {
  fmt::print(stderr, "jouleprof: {}\n", format_progress("point", p.done, p.total, p.elapsed_s, p.last));
}

int write_out(const std::string& path, const std::string& text) {
  if (path.empty()) return 0;
  if (auto w = write_output(path, text); !w) return report(w.error());
  return 0;
}

// Text for people goes to stdout only when no machine-readable output does.
bool text_wanted(const SweepFlags& f) { return !f.quiet && !is_stdout(f.json) && !is_stdout(f.csv); }

// --report ID (and the end of a sweep): the table, --json, --csv and the SVG figures.
int emit_report(const SweepFlags& f, const std::string& sweep_id_text, bool with_json) {
  auto store = Store::open(resolve_db_path(f.db), Store::Mode::read);
  if (!store) return report(store.error());
  // An id, a unique prefix or `last`.
  auto sweep_id = ctl::resolve_sweep_id(*store, sweep_id_text);
  if (!sweep_id) return report(sweep_id.error());
  auto rep = sweep_report(*store, *sweep_id);
  if (!rep) return report(rep.error());
  if (text_wanted(f)) std::cout << sweep_report_text(*rep);
  if (with_json) {
    if (int rc = write_out(f.json, sweep_report_json(*rep)); rc != 0) return rc;
  }
  if (int rc = write_out(f.csv, sweep_report_csv(*rep)); rc != 0) return rc;
  if (f.svg_dir.empty()) return 0;
  std::error_code ec;
  std::filesystem::create_directories(f.svg_dir, ec);
  if (ec) return report(make_error(Errc::io, "cannot create " + f.svg_dir + ": " + ec.message()));
  ChartOptions co;
  co.for_static = true;
  for (const char* axis : {"clock_mhz", "power_limit_w"}) {
    for (const char* metric : {"energy_j", "duration_s", "power_w", "edp_js", "ed2p_js2", "phase_energy_j"}) {
      const ChartSpec c = sweep_chart(*rep, metric, axis, co);
      if (c.option_json.empty()) continue;
      auto svg = render_svg(c, 720, 420);
      if (!svg) return report(svg.error());
      const std::string path = f.svg_dir + "/" + metric + "-vs-" + axis + ".svg";
      if (int rc = write_out(path, *svg); rc != 0) return rc;
      if (!f.quiet) fmt::print(stderr, "jouleprof: wrote {}\n", path);
    }
  }
  return 0;
}

// --list: the sweeps of the store, newest first (the ids --report takes, `last` the first).
int list_sweeps(const SweepFlags& f) {
  auto store = Store::open(resolve_db_path(f.db), Store::Mode::read);
  if (!store) return report(store.error());
  auto all = ctl::list_sweeps(*store);
  if (!all) return report(all.error());
  nlohmann::json j = {{"schema_version", 1}, {"sweeps", nlohmann::json::array()}};
  if (text_wanted(f)) {
    if (all->empty()) fmt::print(stderr, "jouleprof: no sweep in {}\n", resolve_db_path(f.db));
    else fmt::print("{:<24} {:>6} {:>6} {:>9}  {:<20}  {}\n", "sweep id", "points", "runs", "complete", "last stored (UTC)", "command");
  }
  for (const auto& s : *all) {
    j["sweeps"].push_back({{"sweep_id", s.sweep_id}, {"points", s.points}, {"runs", s.runs}, {"complete", s.complete},
                           {"first_recorded_utc", s.first_recorded_utc}, {"last_recorded_utc", s.last_recorded_utc},
                           {"command", to_valid_utf8(s.command)}, {"simulated", s.simulated}});
    if (text_wanted(f)) {
      std::string cmd = for_terminal(s.command.empty() ? "(built-in workload)" : s.command);
      if (cmd.size() > 60) cmd = cmd.substr(0, 57) + "...";
      fmt::print("{:<24} {:>6} {:>6} {:>9}  {:<20}  {}{}\n", s.sweep_id, s.points, s.runs, s.complete, s.last_recorded_utc, cmd,
                 s.simulated ? " [simulated]" : "");
    }
  }
  return write_out(f.json, j.dump(2) + "\n");
}

// A `--param K=V` the user put after `--` went to the workload, not to sweep: when the command
// uses {K} and no --param K was given, say so instead of "no --param K".
Result<void> check_params_after_dashes(const ctl::SweepSpec& spec) {
  for (std::size_t i = 0; i < spec.command.size(); ++i) {
    std::string a = spec.command[i], value;
    if (a == "--param" && i + 1 < spec.command.size()) value = spec.command[i + 1];
    else if (a.rfind("--param=", 0) == 0) value = a.substr(8);
    else continue;
    const std::string key = value.substr(0, value.find('='));
    if (key.empty() || value.find('=') == std::string::npos) continue;
    const bool given = std::any_of(spec.params.begin(), spec.params.end(), [&](const auto& p) { return p.key == key; });
    bool used = false;
    for (const auto& c : spec.command) used = used || c.find("{" + key + "}") != std::string::npos;
    if (!given && used) {
      return make_error(Errc::invalid_argument,
                        "the command uses {" + for_terminal(key) + "}, and '--param " + for_terminal(value) +
                            "' comes after `--`, so it was passed to the command: put sweep's options before `--` "
                            "(jouleprof sweep --param " + for_terminal(value) + " ... -- CMD)");
    }
  }
  return {};
}

// --discover: what the GPUs support and how they are set now; nothing is changed.
int discover(const SweepFlags& f) {
  auto backend = ctl::open_backend(f.spec.device == "auto" ? "nvml" : f.spec.device, f.spec.nvml_library, f.spec.sim_scenario);
  if (!backend) return report(with_sim_hint(backend.error(), f.spec.device));
  auto gpus = (*backend)->discover(f.spec.gpus);
  if (!gpus) return report(gpus.error());
  nlohmann::json j = {{"schema_version", 1}, {"backend", (*backend)->name()}, {"gpus", nlohmann::json::array()}};
  for (const auto& g : *gpus) {
    auto st = (*backend)->read_state(g.uuid);
    const auto all = g.all_gpu_clocks();
    nlohmann::json clocks = nlohmann::json::object();
    for (const auto& [m, list] : g.gpu_clocks_mhz) clocks[std::to_string(m)] = list;
    auto mw = [](const std::optional<unsigned>& v) { return v ? nlohmann::json(*v / 1000.0) : nlohmann::json(nullptr); };
    const std::string perm = (*backend)->permission(g.uuid);
    j["gpus"].push_back({{"index", g.index}, {"uuid", g.uuid}, {"name", g.name},
                         {"mem_clocks_mhz", g.mem_clocks_mhz}, {"gpu_clocks_mhz_by_mem_clock", clocks},
                         {"power_limit_min_w", mw(g.power_limit_min_mw)}, {"power_limit_max_w", mw(g.power_limit_max_mw)},
                         {"power_limit_default_w", mw(g.power_limit_default_mw)},
                         {"power_limit_w", st ? mw(st->power_limit_mw) : nlohmann::json(nullptr)},
                         {"app_clocks_mhz", st && st->app_gpu_mhz ? nlohmann::json({*st->app_gpu_mhz, st->app_mem_mhz.value_or(0)}) : nlohmann::json(nullptr)},
                         {"persistence", st && st->persistence ? nlohmann::json(*st->persistence) : nlohmann::json(nullptr)},
                         {"locked_clocks", g.locked_clocks}, {"mem_locked_clocks", g.mem_locked_clocks},
                         {"app_clocks", g.app_clocks}, {"may_change_settings", perm.empty()}, {"permission_problem", perm}});
    if (text_wanted(f)) {
      fmt::print("GPU {} {} ({})\n  memory clocks: {} MHz\n  graphics clocks: {} ({}–{} MHz)\n", g.index, g.name, g.uuid,
                 fmt::join(g.mem_clocks_mhz, ", "), all.size(), all.empty() ? 0 : all.back(), all.empty() ? 0 : all.front());
      fmt::print("  power limit: {} W now, {}–{} W, default {} W\n", st && st->power_limit_mw ? *st->power_limit_mw / 1000.0 : 0.0,
                 g.power_limit_min_mw.value_or(0) / 1000.0, g.power_limit_max_mw.value_or(0) / 1000.0,
                 g.power_limit_default_mw.value_or(0) / 1000.0);
      fmt::print("  application clocks: {}\n  settings may be changed here: {}\n",
                 st && st->app_gpu_mhz ? fmt::format("{}/{} MHz", *st->app_gpu_mhz, st->app_mem_mhz.value_or(0)) : "not offered",
                 perm.empty() ? "yes" : "no: " + perm);
    }
  }
  return write_out(f.json, j.dump(2) + "\n");
}

// The sweep's spec from a --plan file, or from the flags.
Result<void> build_spec(SweepFlags& f) {
  if (!f.plan.empty()) {
    // Read with a size limit, and only a regular file (a FIFO or /dev/zero is refused).
    auto text = read_text_file(f.plan, kMaxPlanBytes);
    if (!text) return make_error(text.error().code, "cannot read the sweep plan: " + text.error().message);
    auto spec = ctl::spec_from_plan_json(*text, f.plan);
    if (!spec) return spec.error();
    f.spec = *spec;
  }
  if (!f.gpus.empty()) f.spec.gpus = split_gpu_list(f.gpus);
  if (!f.measuring.nvml_lib.empty() || f.plan.empty()) f.spec.nvml_library = nvml_library(f.measuring.nvml_lib, f.spec.nvml_library);
  if (f.plan.empty()) {
    auto mem = parse_list(f.mem_clocks, "--mem-clocks");
    if (!mem) return mem.error();
    f.spec.mem_clocks_mhz = *mem;
    auto pl = parse_list(f.power_limits, "--power-limits");
    if (!pl) return pl.error();
    f.spec.power_limits_w = *pl;
    for (const auto& p : f.params) {
      auto sp = ctl::parse_param(p);
      if (!sp) return sp.error();
      f.spec.params.push_back(*sp);
    }
    f.spec.read_cpu = !f.measuring.no_cpu;
    f.spec.invocation = invocation();
    auto tags = parse_tags(f.tags);
    if (!tags) return tags.error();
    f.spec.tags = std::move(*tags);
    if (auto r = check_params_after_dashes(f.spec); !r) return r.error();
  }
  if (!f.spec.sweep_id.empty()) {
    if (auto r = ctl::check_sweep_id(f.spec.sweep_id); !r) return r.error();
  }
  return {};
}

// What run_sweep needs besides the spec: the store, journal, shard, progress and notes.
Result<ctl::SweepRunOptions> run_options(const SweepFlags& f) {
  ctl::SweepRunOptions o;
  o.spec = f.spec;
  o.db = f.db;
  o.journal_dir = f.journal_dir;
  o.self_exe = self_exe();
  o.quiet = f.quiet;
  if (!f.shard.empty()) {
    int k = -1, n = 0;
    char slash = 0;
    std::istringstream ss(f.shard);
    if (!(ss >> k >> slash >> n) || slash != '/' || n < 1 || k < 0 || k >= n) {
      return make_error(Errc::invalid_argument, "--shard needs K/N with 0 ≤ K < N, got '" + f.shard + "'");
    }
    o.shard = std::pair<int, int>{k, n};
  }
  if (f.spec.command.empty()) o.measure.builtin_command = builtin_command();
  if (!f.quiet) o.note = [](const std::string& s) { fmt::print(stderr, "jouleprof: {}\n", s); };
  const bool show_progress = !f.progress_off && !f.quiet && Progress::wanted(f.progress);
  if (show_progress) o.progress = print_progress;
  return o;
}

// --slurm: the plan as a job array (--dry-run: its batch script only).
int submit_slurm(SweepFlags& f, const ctl::SweepRunOptions& o, const ctl::SweepPlan& plan) {
  f.sl.self_exe = o.self_exe;
  f.sl.journal_dir = f.journal_dir;
  if (f.sl.out_dir.empty()) f.sl.out_dir = "jouleprof-sweep-" + plan.sweep_id;
  if (f.dry_run) {
    std::cout << ctl::slurm_batch_script(plan, f.sl);
    return 0;
  }
  auto script = ctl::write_slurm_files(plan, f.sl);
  if (!script) return report(script.error());
  auto job = ctl::submit_sbatch(*script);
  if (!job) return report(job.error());
  std::cout << *job << "\n";
  if (!f.quiet) {
    fmt::print(stderr, "jouleprof: submitted job array {} ({} units); when it is done:\n  jouleprof runs merge {}/task-*.db\n  jouleprof sweep --report {}\n",
               *job, plan.units.size(), std::filesystem::absolute(f.sl.out_dir).string(), plan.sweep_id);
  }
  return 0;
}

// --dry-run and --slurm: the plan, made against the GPUs' supported settings; nothing is changed.
int plan_only(SweepFlags& f, const ctl::SweepRunOptions& o) {
  // Planning asks the GPUs for their supported clocks, but changes nothing. A SLURM login node
  // has no GPU and often no NVML: the plan is then made without them, and each task checks the
  // settings against its GPUs inside the job, on the node (docs/sweep.md "On a cluster").
  if (f.slurm) {
    if (auto r = ctl::check_slurm_options(f.sl); !r) return report(r.error());
  }
  const std::string device = f.spec.device == "auto" ? "nvml" : f.spec.device;
  auto backend = ctl::open_backend(device, f.spec.nvml_library, f.spec.sim_scenario);
  Result<std::vector<ctl::GpuCapabilities>> gpus = backend ? (*backend)->discover(f.spec.gpus)
                                                           : Result<std::vector<ctl::GpuCapabilities>>(backend.error());
  Result<ctl::SweepPlan> plan = make_error(Errc::internal, "not planned");
  if (gpus) {
    plan = ctl::plan_sweep(f.spec, *gpus);
  } else if (f.slurm && device == "nvml") {
    if (!f.quiet) {
      fmt::print(stderr, "jouleprof: no GPU here ({}): the plan is made without one; each task checks the clocks and "
                         "power limits against its GPUs on the node\n", for_terminal(gpus.error().message));
    }
    plan = ctl::plan_sweep_unchecked(f.spec);
  } else {
    return report(with_sim_hint(gpus.error(), f.spec.device));
  }
  if (!plan) return report(plan.error());
  if (f.slurm) return submit_slurm(f, o, *plan);
  fmt::print("sweep {}: {} units of work on {} GPU(s){}\n", plan->sweep_id, plan->units.size(), gpus ? gpus->size() : 0,
             f.spec.observe_only ? " (observe-only: nothing changed)" : "");
  for (const auto& u : plan->units) {
    auto cmd = ctl::substitute(f.spec.command, u.params);
    std::string c;
    for (const auto& a : *cmd) c += (c.empty() ? "" : " ") + a;
    fmt::print("  {}  pass {}  runs {}+{} warm-up  {}\n", u.key, u.pass, u.runs, u.warmup, c.empty() ? "(built-in workload)" : c);
  }
  return 0;
}

nlohmann::json summary_json(const ctl::SweepSummary& s) {
  nlohmann::json j = {{"schema_version", 1}, {"sweep_id", s.sweep_id}, {"restored", s.restored}, {"units", nlohmann::json::array()}};
  for (const auto& u : s.units) {
    j["units"].push_back({{"point", u.unit.key},
                          {"pass", u.unit.pass},
                          {"outcome", u.kind == ctl::UnitOutcome::Kind::measured ? "measured" : u.kind == ctl::UnitOutcome::Kind::skipped ? "skipped" : "failed"},
                          {"message", u.message},
                          {"run_id", u.run_id},
                          {"energy_j", u.energy_j ? nlohmann::json(*u.energy_j) : nlohmann::json(nullptr)},
                          {"duration_s", u.duration_s ? nlohmann::json(*u.duration_s) : nlohmann::json(nullptr)}});
  }
  return j;
}

// The outcome: a line per failed point, the --json summary, the sweep's report; the exit code.
int finish(const SweepFlags& f, const ctl::SweepRunOptions& o, const ctl::SweepSummary& sum) {
  int rc = 0;
  const int failed = sum.count(ctl::UnitOutcome::Kind::failed);
  if (f.quiet && failed > 0) {
    // -q prints only errors, and a failed point is one: exit 1 never comes without a line.
    for (const auto& u : sum.units) {
      if (u.kind != ctl::UnitOutcome::Kind::failed) continue;
      fmt::print(stderr, "jouleprof: error: sweep {}: {}{}\n", sum.sweep_id, u.unit.key.empty() ? "" : "point " + u.unit.key + " failed: ",
                 for_terminal(u.message));
    }
  }
  if (!f.quiet) {
    fmt::print(stderr, "jouleprof: sweep {}: {} measured, {} already stored, {} failed{}\n", sum.sweep_id,
               sum.count(ctl::UnitOutcome::Kind::measured), sum.count(ctl::UnitOutcome::Kind::skipped), failed,
               f.spec.observe_only ? " (observe-only: nothing changed)" : "");
    for (const auto& u : sum.units) {
      if (u.kind == ctl::UnitOutcome::Kind::failed) fmt::print(stderr, "jouleprof: failed: {} — {}\n", u.unit.key, u.message);
    }
  }
  if (!sum.restored) rc = report(make_error(Errc::vendor, "GPUs not restored: " + sum.restore_error + " (run `jouleprof restore`)"));
  if (failed > 0 && rc == 0) rc = 1;
  if (sum.interrupted_by != 0) {
    if (!f.quiet) fmt::print(stderr, "jouleprof: interrupted by signal {}; GPUs restored; run the same command again to resume\n", sum.interrupted_by);
    return 128 + sum.interrupted_by;
  }
  if (!f.json.empty()) {
    if (int w = write_out(f.json, summary_json(sum).dump(2) + "\n"); w != 0) rc = w;
  }
  if (!o.shard && (sum.count(ctl::UnitOutcome::Kind::measured) + sum.count(ctl::UnitOutcome::Kind::skipped) > 0)) {
    if (int e = emit_report(f, sum.sweep_id, false); e != 0 && rc == 0) rc = e;
  }
  return rc;
}

int run(SweepFlags f) {
  if (!command_after_dashes().empty()) f.spec.command = command_after_dashes();
  // The measuring flags into the spec (a --plan file replaces the spec below, as it did before).
  f.spec.device = f.measuring.device;
  f.spec.idle_s = f.measuring.idle_s;
  f.spec.sim_power_w = f.measuring.sim_power_w;
  f.spec.sim_scenario = f.measuring.sim_scenario;
  if (f.discover) {
    if (!f.gpus.empty()) f.spec.gpus = split_gpu_list(f.gpus);
    f.spec.nvml_library = nvml_library(f.measuring.nvml_lib, f.spec.nvml_library);
    return discover(f);
  }
  if (f.list) return list_sweeps(f);
  if (f.report_given) {
    if (f.report_id.empty()) return report(make_error(Errc::invalid_argument, "--report needs a sweep id (see `jouleprof sweep --list`; `last` is the newest)"));
    return emit_report(f, f.report_id, true);
  }
  if (auto r = build_spec(f); !r) return report(r.error());
  auto o = run_options(f);
  if (!o) return report(o.error());
  if (f.dry_run || f.slurm) return plan_only(f, *o);
  auto sum = ctl::run_sweep(*o);
  if (!sum) return report(sum.error());
  return finish(f, *o, *sum);
}

Runner add_sweep(CLI::App& app) {
  auto f = std::make_shared<SweepFlags>();
  CLI::App* c = app.add_subcommand("sweep", "Measure a workload across clocks, power limits and parameters; GPUs always restored");
  c->footer(
      "Examples:\n"
      "  jouleprof sweep --device sim --clocks step:10 --runs 3              # simulated GPU, built-in workload\n"
      "  jouleprof sweep --clocks 1980,1410,990 --power-limits 700,400 --param batch=1,8 -- python infer.py --batch {batch}\n"
      "  jouleprof sweep --observe-only --clocks all -- ./bench          # same schedule, nothing changed\n"
      "  jouleprof sweep --slurm --partition gpu --time 01:00:00 --clocks step:4 -- ./bench\n"
      "  jouleprof sweep --list                                     # the stored sweeps, newest first\n"
      "  jouleprof sweep --report last --csv sweep.csv --svg-dir figs  # or a sweep id, or a unique prefix of one\n"
      "Options go before `--`; everything after it is the workload's command line.\n"
      "The original clocks and power limit are journaled before any change and restored on exit, error,\n"
      "Ctrl-C, SIGTERM, SIGHUP; after SIGKILL by `jouleprof restore` or jouleprof's next start (docs/sweep.md).");
  auto& s = f->spec;
  f->measuring = {.device = s.device, .idle_s = s.idle_s, .sim_power_w = s.sim_power_w};
  add_measuring_flags(c, f->measuring, {.gpus = false, .idle_from = false, .device_help = "GPU backend: {} (auto: nvml)",
                                        .idle_help = "seconds of idle baseline before each point",
                                        .sim_power_help = "simulated GPU power at full clock while a command runs, W"});
  c->add_option("--gpus", f->gpus, "GPUs: NVML indices or UUIDs, comma separated, or all (default: CUDA_VISIBLE_DEVICES, else all)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--clocks", s.clocks, "graphics clocks, MHz: LIST, all or step:N (every Nth supported clock)");
  c->add_option("--mem-clocks", f->mem_clocks, "memory clocks, MHz, comma separated");
  c->add_option("--power-limits", f->power_limits, "power limits, W, comma separated");
  c->add_option("--param", f->params, "KEY=V1,V2: workload parameter, {KEY} in the command and $JOULEPROF_PARAM_KEY (repeatable)");
  checked(c->add_option("--runs", s.runs, "measured runs per point"), IntRange{.min = 1, .max = 10000})->capture_default_str();
  checked(c->add_option("--warmup", s.warmup, "warm-up runs per point"), IntRange{.min = 0, .max = 10000})->capture_default_str();
  c->add_option("--mode", s.mode, "baseline (change nothing), dvfs (every clock unless --clocks) or custom")
      ->check(CLI::IsMember({"baseline", "dvfs", "custom"}))->capture_default_str();
  c->add_option("--order", s.order, "random (seeded), interleaved (one run of every point per pass) or sequential")
      ->check(CLI::IsMember({"random", "interleaved", "sequential"}))->capture_default_str();
  c->add_option("--seed", s.seed, "seed of the random order")->capture_default_str();
  c->add_flag("--cooldown", s.cooldown, "wait for a stable GPU temperature between points and runs");
  c->add_flag("--observe-only", s.observe_only, "run the same schedule without changing any setting");
  c->add_option("--multi-gpu", s.multi_gpu, "split: one point per GPU in parallel; together: every GPU at each point (multi-GPU workloads)")
      ->check(CLI::IsMember({"split", "together"}))->capture_default_str();
  c->add_option("--sweep-id", s.sweep_id, "name of the sweep (default: derived from its settings, so a rerun resumes)");
  c->add_option("--tag", f->tags, "KEY=VALUE recorded with every point (repeatable)");
  c->add_option("--db", f->db, kDbOptionHelp);
  c->add_option("--journal-dir", f->journal_dir, "restore journal folder (default: see `jouleprof restore --help`)");
  c->add_flag("--discover", f->discover, "print the GPUs' supported clocks, power-limit range and current settings; change nothing");
  c->add_flag("--dry-run", f->dry_run, "print the plan (or with --slurm the batch script) and change nothing");
  CLI::Option* report_opt =
      c->add_option("--report", f->report_id, "report a stored sweep instead of running one: a sweep id, a unique prefix of one, or last");
  c->add_flag("--list", f->list, "list the sweeps in the store, newest first (sweep id, points, runs), and exit");
  add_json_option(c, f->json, "the sweep's outcome per unit, or with --report the report (schemas/sweep*.schema.json)");
  c->add_option("--csv", f->csv, "the sweep report as CSV, one row per point ('-': stdout)");
  c->add_option("--svg-dir", f->svg_dir, "write energy, time, power, EDP and ED²P vs clock / power limit as SVG here");
  c->add_flag("--progress", f->progress, "progress on stderr even when it is not a terminal");
  c->add_flag("--progress-off", f->progress_off, "no progress lines")->group("");
  c->add_flag("--metrics", s.metrics, "record activity metrics at every point (measure --metrics): `model fit --sweep` trains on them");
  c->add_option("--metrics-source", s.metrics_source, "activity source with --metrics (as measure's): auto, dcgm, gpm, utilization, cupti-pm")
      ->check(CLI::IsMember(activity_source_names()))->capture_default_str();
  c->add_flag("-q,--quiet", f->quiet, "only errors");
  c->add_option("--plan", f->plan, "run a plan file (what --slurm and multi-GPU workers run)")->group("");
  c->add_option("--shard", f->shard, "K/N: run only units u with u mod N = K")->group("")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_flag("--slurm", f->slurm, "submit the sweep as a SLURM job array (points split over tasks)");
  c->add_option("--partition", f->sl.partition, "SLURM partition");
  c->add_option("--account", f->sl.account, "SLURM account");
  c->add_option("--time", f->sl.time, "SLURM time limit per task (e.g. 01:00:00)");
  checked(c->add_option("--gpus-per-task", f->sl.gpus_per_task, "GPUs per SLURM task (0: no GPU request)"), IntRange{.min = 0, .max = 1024})
      ->capture_default_str();
  checked(c->add_option("--tasks", f->sl.tasks, "array size (default: one task per unit of work)"), IntRange{.min = 0, .max = 1000000});
  checked(c->add_option("--array-max", f->sl.array_max, "at most this many tasks at once (0: no limit)"), IntRange{.min = 0, .max = 1000000});
  c->add_option("--slurm-dir", f->sl.out_dir, "folder for the plan, script, task stores and logs (default: jouleprof-sweep-ID)");
  c->add_option("command", s.command, "the workload and its arguments, after --")->expected(-1);
  return [f, report_opt] {
    f->report_given = report_opt->count() > 0;
    return run(*f);
  };
}

const bool registered = register_command(add_sweep);

}  // namespace
}  // namespace jouleprof::cli
