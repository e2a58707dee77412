// `jouleprof bench llm`: the built-in Llama-architecture energy benchmark (docs/bench-llm.md).
// On a real GPU the work is done by the CUDA binary jouleprof-llm installed beside jouleprof
// (built when JOULEPROF_WITH_CUDA finds a CUDA toolkit); with --device sim the simulated engine
// runs here, on the simulated GPU, and everything it prints is labelled simulated.
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "host/bench.hpp"

namespace jouleprof::cli {
namespace {

std::filesystem::path llm_binary() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return self.parent_path() / "jouleprof-llm";
}

int run_llm(const llm::BenchOptions& o) {
  if (o.device == "sim") return llm::bench_main(o, llm::sim_engine_factory());
  const auto bin = llm_binary();
  std::error_code ec;
  if (bin.empty() || !std::filesystem::exists(bin, ec)) {
    return report(make_error(Errc::unavailable,
                             "jouleprof-llm not found beside jouleprof: this build has no CUDA workloads (configure with "
                             "-DJOULEPROF_WITH_CUDA=ON and a CUDA toolkit), or run the simulated benchmark with --device sim"));
  }
  std::vector<std::string> args{bin.string(), "bench"};
  for (auto& a : llm::bench_args(o)) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  return report(make_error(Errc::exec, "cannot run " + bin.string()));
}

Runner add_bench(CLI::App& app) {
  auto o = std::make_shared<llm::BenchOptions>();
  CLI::App* bench = app.add_subcommand("bench", "Built-in benchmarks with energy per token");
  bench->require_subcommand(1);
  CLI::App* llm = bench->add_subcommand("llm", "Llama-architecture inference: J/token for prefill and decode, per component and layer");
  llm->footer(
      "Examples:\n"
      "  jouleprof bench llm --model llama-3.2-1b --batch 1,8,32 --prompt 128,1024 --gen 128 --json out.json\n"
      "  jouleprof bench llm --weights ~/Llama-3.1-8B --per-layer\n"
      "  jouleprof bench llm --device sim --model tiny      # no GPU needed; every number simulated\n"
      "Method and fields: docs/bench-llm.md");
  llm::add_bench_options(llm, *o);
  return [o] { return run_llm(*o); };
}

const bool registered = register_command(add_bench);

}  // namespace
}  // namespace jouleprof::cli
