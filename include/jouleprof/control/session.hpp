// Guaranteed restore: a ControlSession journals every GPU's original state before the first
// change and puts it back on restore(), in its destructor (normal exit, error, exception) and,
// through the journal, after SIGKILL or power loss (restore_from_journals: `jouleprof restore`
// and jouleprof's next start). Signals (SIGINT, SIGTERM, SIGHUP) are collected synchronously by
// the sweep, which then ends its point and lets the session restore.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jouleprof/control/control.hpp"
#include "jouleprof/control/journal.hpp"

namespace jouleprof::control {

struct SessionOptions {
  std::string journal_dir;    ///< empty: default_journal_dir()
  bool observe_only = false;  ///< nothing is changed and nothing journaled; apply() only validates
  std::function<void(const std::string&)> note;  ///< messages for the user (stderr)
};

class ControlSession {
 public:
  /// Checks permission, restores what an earlier, dead jouleprof left changed on these GPUs,
  /// refuses GPUs another running jouleprof controls, reads and journals the original states.
  static Result<std::unique_ptr<ControlSession>> begin(ControlBackend& backend, std::vector<GpuCapabilities> gpus,
                                                       SessionOptions opt);
  ~ControlSession();
  ControlSession(const ControlSession&) = delete;
  ControlSession& operator=(const ControlSession&) = delete;

  /// Validates and applies a setting to one GPU (observe-only: validates only).
  Result<void> apply(const std::string& uuid, const Setting& s);
  /// Puts every GPU back to its journaled original state and retires the journals. Idempotent.
  Result<void> restore();
  const std::vector<GpuCapabilities>& gpus() const { return gpus_; }
  const GpuControlState& original(const std::string& uuid) const;
  bool observe_only() const { return opt_.observe_only; }

 private:
  ControlSession(ControlBackend& b, std::vector<GpuCapabilities> gpus, SessionOptions opt);
  ControlBackend& backend_;
  std::vector<GpuCapabilities> gpus_;
  std::vector<Journal> journals_;
  SessionOptions opt_;
  bool changed_ = false, restored_ = false;
};

struct RestoreOutcome {
  std::string uuid, path;
  /// unreadable: a bad file in the folder (BadJournal), reported and left in place.
  enum class Kind { restored, in_use, foreign, failed, unreadable } kind = Kind::restored;
  std::string message;
};

/// The NVML a restore drives: `given`, else $JOULEPROF_NVML_LIB, else libnvidia-ml.so.1. Never
/// the library a journal names.
std::string configured_nvml_library(const std::string& given = "");

/// Restores every GPU whose journal in `dir` was left by a process that no longer runs (and,
/// with `include_running`, also those of running ones). Journals from another host or boot are
/// refused, with the reason. Each GPU is verified after restore where the driver can read back.
/// A bad file beside good journals is one `unreadable` outcome; every good journal is still restored.
Result<std::vector<RestoreOutcome>> restore_from_journals(const std::string& dir, bool include_running = false,
                                                          const std::string& nvml_library = "");

struct CheckOutcome {
  std::string uuid;
  bool ok = true;
  std::string message;
};
/// For a SLURM epilog: a journal left is a failure; every restored GPU of this host and boot is
/// compared with its recorded original state.
Result<std::vector<CheckOutcome>> check_journals(const std::string& dir, const std::string& nvml_library = "");

/// Called at jouleprof's start: restores what a killed jouleprof left changed on this host
/// (journals of dead owners only); says what it did through `note`. Never fails the command.
void restore_leftovers_at_start(const std::function<void(const std::string&)>& note);

}  // namespace jouleprof::control
