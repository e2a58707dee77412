// The SLURM job array of a sweep, and merging the tasks' stores (docs/sweep.md "On a cluster").
#include "jouleprof/control/slurm.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "jouleprof/store/store.hpp"

namespace jouleprof::control {
namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int task_count(const SweepPlan& plan, const SlurmOptions& o) {
  const int units = std::max<int>(1, static_cast<int>(plan.units.size()));
  return o.tasks > 0 ? std::min(o.tasks, units) : units;
}

}  // namespace

std::string slurm_batch_script(const SweepPlan& plan, const SlurmOptions& o) {
  const int n = task_count(plan, o);
  const std::string dir = std::filesystem::absolute(o.out_dir).string();
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name=jouleprof-sweep-{}\n", plan.sweep_id);
  s += fmt::format("#SBATCH --array=0-{}{}\n", n - 1, o.array_max > 0 ? fmt::format("%{}", o.array_max) : "");
  s += "#SBATCH --ntasks=1\n";
  if (o.gpus_per_task > 0) s += fmt::format("#SBATCH --gpus-per-task={}\n", o.gpus_per_task);
  if (!o.partition.empty()) s += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.account.empty()) s += "#SBATCH --account=" + o.account + "\n";
  if (!o.time.empty()) s += "#SBATCH --time=" + o.time + "\n";
  s += "#SBATCH --output=" + dir + "/task-%a.log\n";
  s += fmt::format(
      "# jouleprof sweep {}: {} units of work in {} tasks. Each task runs its shard of plan.json on the GPUs\n"
      "# SLURM gives it (CUDA_VISIBLE_DEVICES), stores its runs in task-N.db and restores its GPUs on exit,\n"
      "# SIGTERM at preemption or time limit included. Afterwards: jouleprof runs merge {}/task-*.db\n",
      plan.sweep_id, plan.units.size(), n, dir);
  s += "set -u\n";
  std::string cmd = quote(o.self_exe) + " sweep --plan " + quote(dir + "/plan.json") +
                    fmt::format(" --shard \"${{SLURM_ARRAY_TASK_ID}}/{}\"", n) + " --db " + quote(dir) +
                    "/task-\"${SLURM_ARRAY_TASK_ID}\".db";
  if (!o.journal_dir.empty()) cmd += " --journal-dir " + quote(o.journal_dir);
  s += "exec " + cmd + "\n";
  return s;
}

Result<std::string> write_slurm_files(const SweepPlan& plan, const SlurmOptions& o) {
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return make_error(Errc::io, "cannot create " + o.out_dir + ": " + ec.message());
  SweepPlan task_plan = plan;
  task_plan.spec.gpus.clear();  // each task sweeps the GPUs SLURM gives it
  task_plan.spec.sweep_id = plan.sweep_id;
  const std::string plan_path = o.out_dir + "/plan.json";
  const std::string script_path = o.out_dir + "/sweep.sbatch";
  std::ofstream(plan_path) << plan_to_json(task_plan);
  std::ofstream(script_path) << slurm_batch_script(task_plan, o);
  if (!std::ifstream(plan_path) || !std::ifstream(script_path)) {
    return make_error(Errc::io, "cannot write the batch files into " + o.out_dir);
  }
  return script_path;
}

Result<std::string> submit_sbatch(const std::string& script, const std::string& sbatch) {
  const std::string cmd = quote(sbatch) + " --parsable " + quote(script) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return make_error(Errc::exec, "cannot run " + sbatch);
  std::string out;
  std::array<char, 512> buf{};
  while (fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int st = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (st != 0 || out.empty()) {
    const int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (rc == 127) return make_error(Errc::exec, "sbatch not found: is this a SLURM login node?");
    std::string one = out;
    std::replace(one.begin(), one.end(), '\n', ' ');
    return make_error(Errc::invalid_argument, "sbatch refused the job: " + (one.empty() ? "no message" : one));
  }
  const auto semi = out.find(';');  // "JOBID;CLUSTER" on federated clusters
  return semi == std::string::npos ? out : out.substr(0, semi);
}

Result<std::vector<MergeOutcome>> merge_run_stores(const std::string& target, const std::vector<std::string>& sources) {
  auto dst = Store::open(target, Store::Mode::write);
  if (!dst) return dst.error();
  std::vector<MergeOutcome> out;
  for (const auto& file : sources) {
    auto src = Store::open(file, Store::Mode::read);
    if (!src) return src.error();
    MergeOutcome mo{file, 0, 0};
    auto runs = src->list();
    if (!runs) return runs.error();
    for (const auto& r : *runs) {
      auto m = src->load(r.id, true);
      if (!m) return m.error();
      StoreOptions so;
      so.source = "merge:" + std::filesystem::path(file).filename().string();
      auto id = dst->insert(*m, so);
      if (id) {
        ++mo.merged;
      } else if (id.error().message.find("already") != std::string::npos) {
        ++mo.duplicates;
      } else {
        return id.error();
      }
    }
    out.push_back(mo);
  }
  return out;
}

}  // namespace jouleprof::control
