// SLURM launcher: a sweep as a job array (each task its shard of the same plan, its own store
// file, its GPUs restored on exit), and the merge of the tasks' stores into one.
#pragma once

#include <string>
#include <vector>

#include "jouleprof/control/sweep.hpp"

namespace jouleprof::control {

struct SlurmOptions {
  std::string partition, account, time;  ///< empty: the cluster's default
  int gpus_per_task = 1;                 ///< 0: no --gpus-per-task line (a cluster without GPU GRES)
  int tasks = 0;                         ///< array size (0: one task per unit of the plan)
  int array_max = 0;                     ///< at most this many tasks at once (0: no limit)
  std::string out_dir;                   ///< plan, scripts, task stores and logs
  std::string self_exe;                  ///< the jouleprof the tasks run (absolute path)
  std::string journal_dir;               ///< passed on to the tasks when set
};

/// Checks everything that goes into the batch script: partition, account and time limit hold
/// only what SLURM accepts (no newline can add a command or an #SBATCH directive), the folder's
/// path no space, '%' or control character, the paths no control character.
Result<void> check_slurm_options(const SlurmOptions& o);

/// The batch script (what --dry-run prints; check_slurm_options first). The plan is read from `out_dir`/plan.json.
std::string slurm_batch_script(const SweepPlan& plan, const SlurmOptions& o);

/// Writes plan.json and sweep.sbatch into out_dir; returns the script's path.
Result<std::string> write_slurm_files(const SweepPlan& plan, const SlurmOptions& o);

/// Runs `sbatch --parsable SCRIPT`; returns the job id, or an error holding sbatch's message.
Result<std::string> submit_sbatch(const std::string& script, const std::string& sbatch = "sbatch");

struct MergeOutcome {
  std::string file;
  int merged = 0, duplicates = 0;
};
/// Copies every run of each source store (a task's .db) into `target`, timelines included;
/// a run already in the target (the same run_uuid) is counted, not copied twice.
Result<std::vector<MergeOutcome>> merge_run_stores(const std::string& target, const std::vector<std::string>& sources);

}  // namespace jouleprof::control
