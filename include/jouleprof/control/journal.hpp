// The restore journal: one file per GPU, written and synced before any setting is changed,
// holding the GPU's original state, the host and boot it belongs to and the owning process.
// Restoring renames it into restored/ (the record `jouleprof restore --check` compares with).
#pragma once

#include <string>
#include <vector>

#include "jouleprof/control/control.hpp"

namespace jouleprof::control {

inline constexpr int kJournalVersion = 1;
/// Environment variable naming the journal folder (tests, shared clusters).
inline constexpr const char* kJournalDirEnv = "JOULEPROF_CONTROL_DIR";

struct Journal {
  int version = kJournalVersion;
  std::string host, boot_id;
  long pid = 0;
  unsigned long long pid_start_ticks = 0;  ///< /proc/PID/stat start time: a reused pid differs
  std::string created_utc;
  std::string backend;  ///< "nvml" (the only backend whose settings outlive the process)
  /// The NVML library the writer used: recorded for people only. A restore never loads it: it
  /// drives the NVML this jouleprof is configured with (configured_nvml_library()).
  std::string library;
  std::string uuid, name;
  int index = 0;
  GpuControlState original;
  std::string path;  ///< where it was read from (not stored)
};

/// $JOULEPROF_CONTROL_DIR, else /var/lib/jouleprof/control for root, else
/// $XDG_STATE_HOME/jouleprof/control (~/.local/state/jouleprof/control).
std::string default_journal_dir();
std::string this_host();
std::string this_boot_id();
/// A journal for this process, host and boot (fields other than the GPU's filled in).
Journal journal_for_this_process();

std::string journal_to_json(const Journal& j);
Result<Journal> journal_from_json(const std::string& text, const std::string& path);

/// A file in the journal folder that is not a readable journal (garbage, empty, another
/// journal_version, wrong types, no uuid, a NUL byte, too large): reported, never restored.
struct BadJournal {
  std::string path;
  std::string uuid;  ///< the GPU it names where it still names one, else empty
  std::string reason;
};
struct JournalFolder {
  std::vector<Journal> journals;  ///< readable journals, by GPU index
  std::vector<BadJournal> bad;    ///< by path
};
/// Letters, digits and '-' (an NVML UUID; journals are named by it).
bool valid_journal_uuid(const std::string& uuid);

/// Writes `dir`/UUID.json atomically and durably (temporary file, fsync, rename, fsync of the folder).
Result<void> write_journal(const std::string& dir, const Journal& j);
/// Every file of `dir` (not the restored records): the readable journals and the bad files.
/// Errors only when the folder cannot be listed.
Result<JournalFolder> scan_journals(const std::string& dir);
/// The readable journals in `dir` (scan_journals without the bad files), sorted by GPU index.
Result<std::vector<Journal>> read_journals(const std::string& dir);
/// The records of restored GPUs (dir/restored/).
Result<std::vector<Journal>> read_restored_records(const std::string& dir);
/// Moves the journal to dir/restored/ (atomic rename, synced): the GPU no longer needs restoring.
Result<void> retire_journal(const std::string& dir, const Journal& j);

/// Whether the process that wrote the journal still runs (same pid and start time).
bool owner_running(const Journal& j);
/// Empty when the journal belongs to this host and boot; else why it is refused.
std::string foreign_reason(const Journal& j);

}  // namespace jouleprof::control
