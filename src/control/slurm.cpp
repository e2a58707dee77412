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

#include "jouleprof/core/text.hpp"
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

// Whether `s` holds only bytes of `allowed` (and is not empty).
bool only(const std::string& s, const char* allowed) { return !s.empty() && s.find_first_not_of(allowed) == std::string::npos; }

bool has_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

}  // namespace

Result<void> check_slurm_options(const SlurmOptions& o) {
  // Everything below is written into the batch script. The #SBATCH values are not quoted there
  // (sbatch reads them to the end of the line), so they are held to what SLURM accepts: a newline
  // in --time or --account would add a command or a directive.
  constexpr const char* kName = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+@-";
  if (!o.partition.empty() && !only(o.partition, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+@,-")) {
    return make_error(Errc::invalid_argument, "--partition '" + for_terminal(o.partition) +
                                                  "': use letters, digits and _ . + @ - (comma-separated partitions)");
  }
  if (!o.account.empty() && !only(o.account, kName)) {
    return make_error(Errc::invalid_argument,
                      "--account '" + for_terminal(o.account) + "': use letters, digits and _ . + @ -");
  }
  if (!o.time.empty() && (!only(o.time, "0123456789:-") || o.time.size() > 16)) {
    return make_error(Errc::invalid_argument, "--time '" + for_terminal(o.time) +
                                                  "': SLURM time limits are MINUTES, HH:MM:SS or D-HH:MM:SS (digits, ':' "
                                                  "and '-')");
  }
  const std::string dir = std::filesystem::absolute(o.out_dir.empty() ? "." : o.out_dir).string();
  if (has_control(dir) || dir.find(' ') != std::string::npos || dir.find('%') != std::string::npos) {
    return make_error(Errc::invalid_argument, "--slurm-dir '" + for_terminal(o.out_dir) +
                                                  "': the folder's path goes into an #SBATCH line, so it must hold no "
                                                  "spaces, '%' or control characters");
  }
  for (const auto& [what, v] : {std::pair<const char*, const std::string&>{"jouleprof's path", o.self_exe},
                                {"--journal-dir", o.journal_dir}}) {
    if (has_control(v)) {
      return make_error(Errc::invalid_argument, std::string(what) + " '" + for_terminal(v) + "' holds control characters");
    }
  }
  return {};
}

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
  if (auto r = check_slurm_options(o); !r) return r.error();
  if (auto r = check_sweep_id(plan.sweep_id); !r) return r.error();
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
