// `jouleprof bench llm`: the built-in Llama-architecture energy benchmark (docs/bench-llm.md).
// On a real GPU the work is done by the CUDA binary jouleprof-llm installed beside jouleprof
// (built when JOULEPROF_WITH_CUDA finds a CUDA toolkit), run as a child that writes its result
// JSON (with every sample) to a file of ours; with --device sim the simulated engine runs here,
// on the simulated GPU, and everything it prints is labelled simulated. Either way, each
// configuration of the sweep is then recorded in the run store (jouleprof/workloads/bench_record.hpp).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "jouleprof/core/self_exe.hpp"
#include "db_option.hpp"
#include "jouleprof/core/files.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "jouleprof/workloads/bench_llm.hpp"
#include "jouleprof/workloads/bench_record.hpp"
#include "jouleprof/measure/process.hpp"
#include "jouleprof/result/result_io.hpp"
#include "jouleprof/store/store.hpp"

namespace jouleprof::cli {
namespace {

/// Names the jouleprof-llm executable to run instead of the one beside jouleprof (tests, or a
/// build kept elsewhere).
constexpr const char* kLlmBinaryEnv = "JOULEPROF_LLM";

struct BenchFlags {
  llm::BenchOptions o;
  std::string db;
  bool no_store = false;
};

std::filesystem::path llm_binary() {
  if (const char* env = std::getenv(kLlmBinaryEnv); env != nullptr && *env != '\0') return env;
  const auto dir = self_exe_dir();
  if (dir.empty()) return {};
  return dir / "jouleprof-llm";
}

// Records every configuration of the sweep; returns an exit code (0: recorded or nothing to
// do). When that fails and no --json was written, `keep` saves the result for `runs import`.
int record(Measurement sweep, const BenchFlags& f, const std::function<std::string()>& keep) {
  if (f.no_store) return 0;
  sweep.invocation = invocation();
  StoreOptions so;
  so.db_path = f.db;
  so.source = "bench llm";
  auto ids = llm::record_bench_sweep(sweep, so);
  if (!ids) {
    const int rc = report(ids.error());
    if (f.o.json.empty()) {
      const std::string kept = keep();
      if (!kept.empty()) fmt::print(stderr, "jouleprof: the result is kept in {} (jouleprof runs import {})\n", kept, kept);
    }
    return rc;
  }
  if (f.o.quiet) return 0;
  if (ids->empty()) {
    fmt::print(stderr, "jouleprof: nothing measured to record\n");
  } else {
    fmt::print(stderr, "jouleprof: recorded {} configuration{} as run{} {}{} in {} (jouleprof runs list --tag bench=llm)\n",
               ids->size(), ids->size() == 1 ? "" : "s", ids->size() == 1 ? "" : "s", ids->front(),
               ids->size() == 1 ? "" : fmt::format("-{}", ids->back()), resolve_db_path(f.db));
  }
  return 0;
}

// A new empty file "jouleprof-bench-XXXXXX.json" in the temporary folder ("" when impossible).
std::string temp_json() {
  std::error_code ec;
  std::string path = (std::filesystem::temp_directory_path(ec) / "jouleprof-bench-XXXXXX.json").string();
  const int fd = mkstemps(path.data(), 5);
  if (fd < 0) return "";
  close(fd);
  return path;
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::not_found, "cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The real GPU: jouleprof-llm as a child (signals forwarded, its exit status ours) writing the
// result, with every sample, to a temporary file; the user's --json is that document as
// jouleprof-llm would have written it (without the samples unless --json-timelines).
int run_child(const BenchFlags& f) {
  const auto bin = llm_binary();
  std::error_code ec;
  if (bin.empty() || !std::filesystem::exists(bin, ec)) {
    return report(make_error(Errc::unavailable,
                             "jouleprof-llm not found beside jouleprof: this build has no CUDA workloads (configure with "
                             "-DJOULEPROF_WITH_CUDA=ON and a CUDA toolkit), or run the simulated benchmark with --device sim"));
  }
  const std::string tmp = temp_json();
  if (tmp.empty()) return report(make_error(Errc::io, "cannot create a temporary file for jouleprof-llm's result"));
  struct Remove {
    std::string path;
    ~Remove() {
      if (!path.empty()) std::remove(path.c_str());
    }
  } remove_tmp{tmp};

  llm::BenchOptions child = f.o;
  child.json = tmp;
  child.json_timelines = !f.no_store || f.o.json_timelines;
  std::vector<std::string> argv{bin.string(), "bench"};
  for (auto& a : llm::bench_args(child)) argv.push_back(std::move(a));
  install_signal_forwarding();
  // With the JSON on stdout, stdout carries the JSON only: the child inherits stderr as its
  // stdout, so jouleprof-llm's table goes to stderr (as the simulated benchmark's does).
  const int saved_stdout = is_stdout(f.o.json) ? ::dup(STDOUT_FILENO) : -1;
  if (saved_stdout >= 0) {
    std::fflush(stdout);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  auto proc = ChildProcess::spawn(argv, {});
  if (saved_stdout >= 0) {
    ::dup2(saved_stdout, STDOUT_FILENO);
    ::close(saved_stdout);
  }
  if (!proc) return report(proc.error());
  const ChildStatus st = proc->wait();

  auto text = read_text(tmp);
  if (!text || text->empty()) {
    // jouleprof-llm said why (one line) unless it crashed or was killed before writing.
    if (st.exit_code == 0) return report(make_error(Errc::internal, bin.string() + " wrote no result"));
    // Its status stays ours, with one line that says what happened (issue 35: exit 1, no line).
    (void)report(make_error(Errc::internal, st.signal != 0 ? fmt::format("{} was killed by signal {} before writing a result", bin.string(), st.signal)
                                                           : fmt::format("{} failed (exit {}) before writing a result", bin.string(), st.exit_code)));
    return st.exit_code;
  }
  int rc = st.exit_code;
  // The command is the user's (jouleprof-llm's names our temporary file).
  std::vector<std::string> command{"jouleprof", "bench", "llm"};
  for (auto& a : llm::bench_args(f.o)) command.push_back(std::move(a));
  if (!f.o.json.empty()) {
    auto doc = nlohmann::json::parse(*text, nullptr, false);
    if (doc.is_discarded()) return report(make_error(Errc::parse, bin.string() + " wrote a malformed result"));
    if (!f.o.json_timelines) doc.erase("timelines");
    if (doc.contains("command")) doc["command"] = command;
    if (auto w = write_output(f.o.json, doc.dump(f.o.json_timelines ? -1 : 2) + "\n"); !w) {
      const int e = report(w.error());
      if (rc == 0) rc = e;
    }
  }
  auto sweep = measurement_from_json(*text);
  if (!sweep) return report(make_error(sweep.error().code, bin.string() + ": " + sweep.error().message));
  sweep->command = command;
  const int r = record(std::move(*sweep), f, [&remove_tmp] { return std::exchange(remove_tmp.path, std::string()); });
  return rc != 0 ? rc : r;
}

int run_llm(const BenchFlags& f) {
  if (f.o.device != "sim") return run_child(f);
  return llm::bench_main(f.o, llm::sim_engine_factory(), [&f](const llm::BenchResult& r) {
    return record(r.measurement, f, [&r]() -> std::string {
      const std::string path = temp_json();
      return !path.empty() && llm::write_bench_json(r, path, true) ? path : "";
    });
  });
}

Runner add_bench(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* bench = app.add_subcommand("bench", "Built-in benchmarks with energy per token");
  bench->require_subcommand(1);
  CLI::App* llm = bench->add_subcommand("llm", "Llama-architecture inference: J/token for prefill and decode, per component and layer");
  llm->footer(
      "Examples:\n"
      "  jouleprof bench llm --model llama-3.2-1b --batch 1,8,32 --prompt 128,1024 --gen 128 --json out.json\n"
      "  jouleprof bench llm --weights ~/Llama-3.1-8B --per-layer\n"
      "  jouleprof bench llm --device sim --model tiny      # no GPU needed; every number simulated\n"
      "  jouleprof runs list --tag bench=llm && jouleprof report 12 13 14 -o bench.html\n"
      "Every configuration is recorded in the run store (--no-store: not). On a GPU this runs jouleprof-llm from\n"
      "beside jouleprof ($JOULEPROF_LLM names another). Method and fields: docs/bench-llm.md");
  llm::add_bench_options(llm, f->o);
  llm->add_option("--db", f->db, kDbOptionHelp);
  llm->add_flag("--no-store", f->no_store, "do not record the configurations in the run store");
  return [f] { return run_llm(*f); };
}

const bool registered = register_command(add_bench);

}  // namespace
}  // namespace jouleprof::cli
