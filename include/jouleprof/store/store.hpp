// The run store: every measurement kept in one SQLite database (docs/store.md).
//
// Schema versioned with PRAGMA user_version and migrated forward on open; WAL journal; every
// run written in one IMMEDIATE transaction (a crash or kill never leaves half a run); a busy
// timeout so that two jouleprof processes can write at once. A database from a newer jouleprof,
// a file that is not a jouleprof database, or a corrupt one is refused without being modified.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jouleprof/core/error.hpp"
#include "jouleprof/result/result.hpp"
#include "jouleprof/store/activities.hpp"

namespace jouleprof {

/// Version of the store's SQL schema (PRAGMA user_version); migrations live in src/store/schema.cpp.
inline constexpr int kStoreSchemaVersion = 1;

/// Environment variable naming the database (after --db, before the XDG default).
inline constexpr const char* kStoreDbEnv = "JOULEPROF_DB";

struct StoreOptions {
  std::string db_path;             ///< empty: default_db_path()
  int busy_timeout_ms = 30000;     ///< how long a writer waits for another writer
  std::string source = "measure";  ///< how the run came in: "measure", "import:FILE" ...
  bool allow_duplicate = false;    ///< store a run that is already stored (same run_uuid; older results: start time and host)
  /// Test seam: called after each timeline chunk is written inside the run's transaction.
  std::function<void(std::size_t chunks_written)> on_chunk;
};

/// The database path: `flag` if not empty, else $JOULEPROF_DB, else
/// $XDG_DATA_HOME/jouleprof/runs.db, else $HOME/.local/share/jouleprof/runs.db.
std::string resolve_db_path(const std::string& flag = "");

/// One line of `jouleprof runs list`.
struct RunSummary {
  int64_t id = 0;
  std::string recorded_at_utc;  ///< when the run was stored
  std::string started_at_utc;   ///< when the measurement started
  int64_t origin_realtime_ns = 0;
  std::vector<std::string> command;
  std::map<std::string, std::string> tags;
  std::string host, status, source;
  std::vector<std::string> gpu_names;
  bool simulated = false;
  double duration_s = 0;
  int measured_runs = 0;
  std::optional<double> gpu_energy_j;  ///< mean over measured runs (statistics "gpu_energy_j")
  std::optional<double> gpu_energy_ci95_j;
  std::optional<double> run_duration_s;  ///< mean over measured runs
};

struct RunFilter {
  std::vector<std::pair<std::string, std::string>> tags;  ///< all must match (value "*": key present)
  std::string command_contains;
  std::string gpu_contains;  ///< name, UUID or PCI id substring
  std::optional<int64_t> since_ns, until_ns;  ///< measurement start, CLOCK_REALTIME ns
  int limit = 0;  ///< 0: all
};

/// An open run store. Movable, not copyable; closing happens in the destructor.
class Store {
 public:
  enum class Mode {
    read,   ///< the database must exist; nothing is created
    write,  ///< created (with its directory) when missing
  };
  static Result<Store> open(const std::string& path, Mode mode, int busy_timeout_ms = 30000);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  /// Writes one measurement, timelines included, in one transaction; returns the run id.
  Result<int64_t> insert(const Measurement& m, const StoreOptions& o = {});
  /// A run and its activities (a traced run's kernels, copies, ranges: `trace --from` reads them
  /// back) in the same one transaction: both or neither are stored.
  Result<int64_t> record(const Measurement& m, const std::vector<StoredActivity>& activities, const StoreOptions& o = {});
  /// The run with its timelines (or without, which is much faster for long runs).
  Result<Measurement> load(int64_t id, bool with_timelines = true);
  Result<std::vector<RunSummary>> list(const RunFilter& f = {});
  Result<RunSummary> summary(int64_t id);
  /// Removes the runs, all or none (an unknown id is an error).
  Result<void> remove(const std::vector<int64_t>& ids);
  /// The newest run's id (Errc::not_found when empty).
  Result<int64_t> latest_id();
  int schema_version() const;
  const std::string& path() const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Opens (creating when needed) the store at o.db_path (or resolve_db_path()) and records the
/// measurement with its timelines. This is what `jouleprof measure` calls after a run.
Result<int64_t> record_measurement(const Measurement& m, const StoreOptions& o = {});
/// The same with the run's activities, on one connection in one transaction (Store::record):
/// what `jouleprof trace` calls after a run.
Result<int64_t> record_run(const Measurement& m, const std::vector<StoredActivity>& activities, const StoreOptions& o = {});

/// Parses a time for --since/--until: "2026-11-22", "2026-11-22T05:30[:00]" (UTC), or an age
/// before now: "30m", "12h", "7d". Returns CLOCK_REALTIME nanoseconds.
Result<int64_t> parse_time_filter(const std::string& text, int64_t now_ns);

/// Parses a run reference: a run id, "last" (the newest run) or "last~N" (N runs before it).
Result<int64_t> resolve_run_ref(Store& store, const std::string& ref);

}  // namespace jouleprof
