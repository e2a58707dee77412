// `jouleprof trace` as library calls (trace_run.hpp): run → read → place → attribute → store.
#include "jouleprof/measure/trace_run.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "jouleprof/analysis/attribution_replay.hpp"
#include "jouleprof/analysis/trace_store.hpp"
#include "jouleprof/core/files.hpp"
#include "jouleprof/core/self_exe.hpp"
#include "jouleprof/store/activities.hpp"
#include "jouleprof/store/store.hpp"
#include "jouleprof/store/run_source.hpp"
#include "jouleprof/trace/format.hpp"

namespace jouleprof {
namespace {

namespace fs = std::filesystem;

// The injection library: given, $JOULEPROF_INJECT_LIB, else beside jouleprof (../lib, .).
std::string find_inject_lib(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* e = std::getenv("JOULEPROF_INJECT_LIB"); e != nullptr && e[0] != '\0') return e;
  std::error_code ec;
  for (const fs::path& p : {self_exe_dir() / "../lib/libjouleprof_inject.so", self_exe_dir() / "libjouleprof_inject.so"}) {
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

// CUPTI: given, $JOULEPROF_CUPTI_LIB, else the CUDA toolkit's usual places. NVTX's injection
// needs a path (NVTX_INJECTION64_PATH), so a soname is not enough.
std::string find_cupti(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* e = std::getenv(trace_format::kCuptiLibEnv); e != nullptr && e[0] != '\0') return e;
  std::vector<fs::path> dirs;
  if (const char* h = std::getenv("CUDA_HOME"); h != nullptr) {
    dirs.push_back(fs::path(h) / "lib64");
    dirs.push_back(fs::path(h) / "extras/CUPTI/lib64");
  }
  for (const char* d : {"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                        "/usr/lib/x86_64-linux-gnu"}) {
    dirs.emplace_back(d);
  }
  std::error_code ec;
  for (const fs::path& d : dirs) {
    for (const char* n : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"}) {
      if (fs::exists(d / n, ec)) return (d / n).string();
    }
  }
  return "";
}

// A given injection library must be a shared library: a regular ELF file (not a folder,
// /dev/zero, a FIFO or a text file).
Result<void> check_inject_lib(const std::string& path) {
  auto lib = InputFile::open(path);
  if (!lib) return make_error(Errc::invalid_argument, "cannot read the injection library: " + lib.error().message);
  char magic[4] = {};
  auto got = lib->is_pipe() ? Result<std::size_t>(std::size_t{0}) : lib->read(magic, sizeof(magic));
  if (!got || *got != sizeof(magic) || std::memcmp(magic, "\x7f" "ELF", 4) != 0) {
    return make_error(Errc::invalid_argument, "the injection library " + path + " is not a shared library (no ELF header)");
  }
  return {};
}

// --replay: a replay's output file (its JSON, or a result with its "replay" section), else a run
// of the store that holds one.
Result<ReplayReference> load_replay(const std::string& ref, const std::string& db) {
  std::error_code ec;
  if (fs::is_regular_file(ref, ec)) {
    auto text = read_text_file(ref);
    if (!text) return text.error();
    auto r = parse_replay_reference(*text, ref);
    if (!r && r.error().code == Errc::parse) return make_error(Errc::invalid_argument, r.error().message);
    return r;
  }
  auto runs = load_runs({ref}, db, false);
  if (!runs) return make_error(runs.error().code == Errc::parse ? Errc::invalid_argument : runs.error().code, "--replay " + ref + ": " + runs.error().message);
  const LoadedRun& r = runs->front();
  auto it = r.m.sections.find("replay");
  if (it == r.m.sections.end()) return make_error(Errc::invalid_argument, "--replay " + ref + ": " + r.label + " is not a replay (no replay section)");
  auto x = parse_replay_reference(it->second, r.label);
  if (!x && x.error().code == Errc::parse) return make_error(Errc::invalid_argument, x.error().message);
  return x;
}

// The per-process files' folder: the one to keep (its old trace files removed), or a temporary one.
Result<std::string> trace_dir(const std::string& keep) {
  if (keep.empty()) {
    char tmpl[] = "/tmp/jouleprof-trace-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return make_error(Errc::io, "cannot create a temporary directory");
    return std::string(tmpl);
  }
  std::error_code ec;
  fs::create_directories(keep, ec);
  if (ec) return make_error(Errc::io, "cannot create " + keep + ": " + ec.message());
  for (const auto& e : fs::directory_iterator(keep, ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == trace_format::kFileSuffix || name.rfind(trace_format::kSampleFilePrefix, 0) == 0) fs::remove(e.path(), ec);
  }
  return keep;
}

// What the traced command's environment gets: the injection library, the files' folder, CUPTI
// (and NVTX's injection), and the recording options.
std::vector<std::string> tracing_env(const TraceRunOptions& o, const std::string& inject, const std::string& cupti, const std::string& dir) {
  std::vector<std::string> env = {"CUDA_INJECTION64_PATH=" + inject, std::string(trace_format::kDirEnv) + "=" + dir};
  if (o.record_sync) env.push_back(std::string(trace_format::kSyncEnv) + "=1");
  if (o.record_launches) env.push_back(std::string(trace_format::kLaunchesEnv) + "=1");
  if (o.graph_nodes) env.push_back(std::string(trace_format::kGraphsEnv) + "=node");
  if (o.sample_percent > 0) {
    env.push_back(fmt::format("{}={}", trace_format::kSampleEnv, o.sample_percent));
    env.push_back(fmt::format("{}={}", trace_format::kSamplePeriodEnv, o.sample_period_s * 1000));
  }
  if (!cupti.empty()) {
    // The injection library is also NVTX's: CUPTI records the ranges, we add their anchors.
    env.push_back(std::string(trace_format::kCuptiLibEnv) + "=" + cupti);
    env.push_back("NVTX_INJECTION64_PATH=" + inject);
  }
  return env;
}

// Attributes the placed trace with the options' replay data (loaded here: the profile points at it).
Result<void> attribute(TracedRun& r, TraceRunOptions& o) {
  std::optional<ReplayReference> replay;
  if (!o.replay.empty()) {
    auto x = load_replay(o.replay, o.store_options.db_path);
    if (!x) return x.error();
    replay = std::move(*x);
    o.profile.replay = &*replay;
  }
  auto p = analyze_placed_trace(r.m, r.trace, o.classes, o.profile);
  o.profile.replay = nullptr;
  if (!p) return p.error();
  r.profile = std::move(*p);
  return {};
}

}  // namespace

Result<void> check_sampling(double percent, double period_s) {
  if (!(percent > 0 && percent < 100)) {
    return make_error(Errc::invalid_argument, fmt::format("--sample must be a percentage above 0% and below 100%, got {}%", percent));
  }
  if (!(period_s > 0) || percent / 100 * period_s < 0.02) {
    return make_error(Errc::invalid_argument, fmt::format("--sample {}% of a {} s period traces {:.3g} ms at a time, less than the power "
                                                          "sensor's 20 ms samples: raise --sample or --sample-period",
                                                          percent, period_s, percent / 100 * period_s * 1e3));
  }
  return {};
}

Result<TracedRun> trace_command(TraceRunOptions o) {
  if (o.sample_percent > 0) {
    if (auto c = check_sampling(o.sample_percent, o.sample_period_s); !c) return c.error();
  }
  if (!o.inject_lib.empty()) {
    if (auto c = check_inject_lib(o.inject_lib); !c) return c.error();
  }
  const std::string inject = find_inject_lib(o.inject_lib);
  if (inject.empty()) {
    return make_error(Errc::unavailable,
                      "the CUPTI injection library (libjouleprof_inject.so) is not installed beside jouleprof; it is built "
                      "where CUPTI's headers are found (give --inject-lib PATH)");
  }
  const std::string cupti = find_cupti(o.cupti_lib);
  if (cupti.empty() && o.measure.monitor.gpus.backend != "sim") {
    return make_error(Errc::unavailable, "CUPTI (libcupti.so) not found: install the CUDA toolkit's CUPTI or give --cupti-lib PATH");
  }
  // Replay data is checked before anything runs.
  if (!o.replay.empty()) {
    if (auto x = load_replay(o.replay, o.store_options.db_path); !x) return x.error();
  }
  auto dir = trace_dir(o.keep_dir);
  if (!dir) return dir.error();
  struct Cleanup {
    std::string dir;
    bool remove;
    ~Cleanup() {
      std::error_code e;
      if (remove) fs::remove_all(dir, e);
    }
  } cleanup{*dir, o.keep_dir.empty()};
  const std::vector<std::string> env = tracing_env(o, inject, cupti, *dir);
  o.measure.env.insert(o.measure.env.begin(), env.begin(), env.end());
  o.measure.tags["traced"] = "true";
  if (o.sample_percent > 0) o.measure.tags["trace_sample"] = fmt::format("{}%/{}s", o.sample_percent, o.sample_period_s);

  auto measured = run_measure(o.measure);
  if (!measured) return measured.error();
  TracedRun r;
  r.m = std::move(*measured);
  auto traced = read_trace_dir(*dir);
  if (!traced) return traced.error();
  r.trace = std::move(*traced);
  read_sample_logs(*dir, r.trace);
  place_trace(r.m, r.trace);
  if (auto a = attribute(r, o); !a) return a.error();
  if (o.store) {
    StoreOptions so = o.store_options;
    so.source = "trace";
    const auto rows = stored_activities(r.m, r.trace);
    if (auto id = record_run(r.m, rows, so); id) {
      r.run_id = *id;
      r.stored_activities = rows.size();
    } else {
      r.store_error = id.error();
    }
  }
  return r;
}

Result<TracedRun> trace_stored_run(const std::string& ref, TraceRunOptions o) {
  const std::string db = resolve_db_path(o.store_options.db_path);
  auto runs = load_runs({ref}, db, true);
  if (!runs) return runs.error();
  LoadedRun& loaded = runs->front();
  if (loaded.id == 0) {
    return make_error(Errc::invalid_argument, "--from " + ref + ": a result file keeps no activities; give a run of the store (ID, last or last~N)");
  }
  auto rows = load_activities(db, loaded.id);
  if (!rows) return rows.error();
  TracedRun r;
  r.m = std::move(loaded.m);
  r.label = loaded.label;
  auto t = trace_from_store(r.m, *rows);
  if (!t) return make_error(t.error().code, "cannot attribute " + r.label + " again: " + t.error().message);
  r.trace = std::move(*t);
  // The trace warnings of its first analysis are given again by this one (as analyze_stored_trace).
  std::erase_if(r.m.warnings, [](const std::string& w) { return w.rfind("trace: ", 0) == 0; });
  if (auto a = attribute(r, o); !a) return a.error();
  return r;
}

}  // namespace jouleprof
