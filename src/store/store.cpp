// The SQLite run store (docs/store.md).
#include "jouleprof/store/store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "jouleprof/core/text.hpp"
#include "jouleprof/result/result_json.hpp"
#include "jouleprof/result/result_io.hpp"
#include "schema.hpp"
#include "sqlite_util.hpp"

namespace jouleprof {

using detail::exec;
using detail::sqlite_error;
using detail::Stmt;

namespace {

static_assert(std::endian::native == std::endian::little, "timeline blobs are little-endian float64");
static_assert(sizeof(Sample) == 2 * sizeof(double));

constexpr std::size_t kTimelineChunk = 65536;  // samples per blob (1 MiB)
constexpr const char* kEncoding = "f64le-pairs";

std::string iso_utc(int64_t ns) {
  const auto t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int64_t now_realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

#define JP_TRY(expr)                 \
  do {                               \
    auto jp_r_ = (expr);             \
    if (!jp_r_) return jp_r_.error(); \
  } while (0)

Result<int64_t> query_int(sqlite3* db, const std::string& sql, const std::string& path) {
  auto st = Stmt::prepare(db, sql);
  if (!st) return sqlite_error(db, path);
  if (st->step() != SQLITE_ROW) return sqlite_error(db, path);
  return st->i64(0);
}
Result<int64_t> pragma_int(sqlite3* db, const char* pragma, const std::string& path) {
  return query_int(db, std::string("PRAGMA ") + pragma, path);
}

// What tells one run from another: its run_uuid, minted when it was measured and carried by its
// result file, so a re-import or a merge of the same run is recognised while two runs that start
// in the same nanosecond (parallel sweep workers, SLURM tasks on one node) are both kept. Results
// from before run_uuid: start time and host, as stores of that time fingerprinted them.
std::string run_fingerprint(const Measurement& m) {
  if (!m.run_uuid.empty()) return "run:" + m.run_uuid;
  return std::to_string(m.origin_realtime_ns) + "@" + m.host;
}

// A store not yet in WAL mode (a new one) is switched by a write inside SQLite that upgrades a
// read transaction; an upgrade that meets another process's write lock fails at once with
// SQLITE_BUSY, whatever the busy timeout (SQLite does not wait there: two upgrading readers would
// deadlock). Processes creating one store together (sweep workers, SLURM tasks, two measure runs)
// meet exactly there, so the switch is tried again until the busy timeout has passed.
Result<void> switch_to_wal(sqlite3* db, const std::string& path, int busy_timeout_ms) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  for (int wait_ms = 1;; wait_ms = std::min(2 * wait_ms, 50)) {
    {
      auto st = Stmt::prepare(db, "PRAGMA journal_mode = WAL");
      if (!st) return st.error();
      const int rc = st->step();
      if (rc == SQLITE_ROW) return {};
      if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= give_up) {
        return sqlite_error(db, path + ": cannot switch to WAL");
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  }
}

const Summary* find_stat(const Measurement& m, const std::string& what) {
  for (const RepeatStat& s : m.stats) {
    if (s.what == what) return &s.summary;
  }
  return nullptr;
}

}  // namespace

struct Store::Impl {
  sqlite3* db = nullptr;
  std::string path;
  int version = 0;
  ~Impl() { sqlite3_close_v2(db); }

  Error err(const std::string& what) const { return sqlite_error(db, path + ": " + what); }

  Result<void> begin() { return exec(db, "BEGIN IMMEDIATE", path + ": cannot start a write (another writer holds the database)"); }
  void rollback() const { sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr); }
  Result<void> commit() { return exec(db, "COMMIT", path + ": commit"); }

  Result<void> migrate();
  Result<int64_t> insert(const Measurement& m, const StoreOptions& o, const std::vector<StoredActivity>* activities = nullptr);
  Result<void> insert_activities(int64_t run_id, const std::vector<StoredActivity>& rows);
  Result<void> insert_timeline(int64_t run_id, const std::string& source, std::size_t device, const std::string& metric,
                               const std::function<void(const std::function<void(const Sample*, std::size_t)>&)>& chunks,
                               std::size_t& chunks_written, const StoreOptions& o);
  Result<void> load_timelines(int64_t id, Measurement& m);
  Result<std::vector<RunSummary>> list(const RunFilter& f, std::optional<int64_t> only);
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;
int Store::schema_version() const { return impl_->version; }
const std::string& Store::path() const { return impl_->path; }

std::string resolve_db_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv(kStoreDbEnv); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/jouleprof/runs.db";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.local/share/jouleprof/runs.db";
}

Result<Store> Store::open(const std::string& path, Mode mode, int busy_timeout_ms) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (!exists && mode == Mode::read) {
    return make_error(Errc::not_found, "no run store at " + path +
                                           " (runs are recorded by jouleprof measure or runs import; --db or $" +
                                           kStoreDbEnv + " name another)");
  }
  if (exists && fs::is_directory(path, ec)) return make_error(Errc::invalid_argument, path + " is a directory, not a run store");
  if (!exists) {
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) return make_error(Errc::io, "cannot create " + parent.string() + ": " + ec.message());
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (mode == Mode::write) flags |= SQLITE_OPEN_CREATE;
  // A store we may not write (a read-only file or folder, e.g. an archive) is still readable.
  // WAL needs a -shm beside it: without a -wal holding changes, the store is opened immutable
  // (nothing to create); with one, read-only through the -shm a writer left (immutable would
  // silently skip the changes in the -wal, i.e. show fewer runs).
  std::string uri = path;
  bool read_only = false;
  if (mode == Mode::read && exists) {
    const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
    if (::access(path.c_str(), W_OK) != 0 || ::access(dir.c_str(), W_OK) != 0) {
      read_only = true;
      const std::string wal = path + "-wal";
      const bool pending = fs::exists(wal, ec) && fs::file_size(wal, ec) > 0 && !ec;
      if (pending && !fs::exists(path + "-shm", ec)) {
        return make_error(Errc::invalid_argument, path + " cannot be read here: its " + wal +
                                        " holds changes that SQLite reads only through a -shm file, which this folder "
                                        "does not let jouleprof create; copy the store with its -wal to a writable folder");
      }
      std::string escaped;
      for (char c : fs::absolute(path, ec).string()) {
        if (c == '%' || c == '?' || c == '#') {
          static constexpr char kHex[] = "0123456789ABCDEF";
          escaped += '%';
          escaped += kHex[(static_cast<unsigned char>(c) >> 4) & 0xF];
          escaped += kHex[static_cast<unsigned char>(c) & 0xF];
        } else {
          escaped += c;
        }
      }
      uri = "file:" + escaped + (pending ? "?mode=ro" : "?mode=ro&immutable=1");
      flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
    }
  }
  if (sqlite3_open_v2(uri.c_str(), &impl->db, flags, nullptr) != SQLITE_OK) {
    return sqlite_error(impl->db, "cannot open run store " + path);
  }
  sqlite3_busy_timeout(impl->db, busy_timeout_ms);
  sqlite3_extended_result_codes(impl->db, 1);

  // Look before touching anything: a foreign, newer or corrupt database is left as it is. The
  // three reads share one read transaction, so they see one state of a store that another
  // process is creating at the same moment (its migration commits tables and marks together).
  JP_TRY(exec(impl->db, "BEGIN", path));
  auto app = pragma_int(impl->db, "application_id", path);
  if (!app) return make_error(app.error().code, app.error().message + " (not a jouleprof run store, or corrupt)");
  auto ver = pragma_int(impl->db, "user_version", path);
  if (!ver) return ver.error();
  auto tables = query_int(impl->db, "SELECT count(*) FROM sqlite_master", path);  // 0: an empty file
  if (!tables) return tables.error();
  if (*tables > 0) {
    // A damaged page would otherwise show as some runs missing, with no error (docs/store.md).
    auto qc = Stmt::prepare(impl->db, "PRAGMA quick_check(1)");
    if (!qc) return make_error(qc.error().code, qc.error().message + " (corrupt run store)");
    const int rc = qc->step();
    const std::string verdict = rc == SQLITE_ROW ? qc->text(0) : std::string(sqlite3_errmsg(impl->db));
    if (verdict != "ok") {
      return make_error(Errc::parse, path + " is a corrupt run store (SQLite quick_check: " + verdict +
                                         "); restore it from a copy, or read what is left with the sqlite3 tool's .recover");
    }
  }
  JP_TRY(exec(impl->db, "COMMIT", path));
  const bool empty = *app == 0 && *ver == 0 && *tables == 0;
  if (!empty && *app != detail::kStoreApplicationId) {
    return make_error(Errc::invalid_argument, path + " is an SQLite database but not a jouleprof run store");
  }
  if (*ver > kStoreSchemaVersion) {
    return make_error(Errc::unsupported, path + " has store schema version " + std::to_string(*ver) +
                                             ", newer than this jouleprof reads (" + std::to_string(kStoreSchemaVersion) +
                                             "): upgrade jouleprof");
  }
  if (empty && mode == Mode::read) return make_error(Errc::not_found, path + " is an empty database, not a run store");
  if (read_only && *ver < kStoreSchemaVersion) {
    return make_error(Errc::unsupported, path + " has store schema version " + std::to_string(*ver) +
                                             ", older than this jouleprof reads (" + std::to_string(kStoreSchemaVersion) +
                                             "), and cannot be upgraded where it is (not writable): copy it to a writable folder");
  }
  impl->version = static_cast<int>(*ver);
  JP_TRY(exec(impl->db, "PRAGMA foreign_keys = ON", path));
  if (empty) JP_TRY(exec(impl->db, "PRAGMA auto_vacuum = INCREMENTAL", path));
  if (mode == Mode::write || impl->version < kStoreSchemaVersion) {
    JP_TRY(switch_to_wal(impl->db, path, busy_timeout_ms));
    JP_TRY(exec(impl->db, "PRAGMA synchronous = NORMAL", path));
  }
  if (impl->version < kStoreSchemaVersion) JP_TRY(impl->migrate());
  return Store(std::move(impl));
}

Result<void> Store::Impl::migrate() {
  JP_TRY(begin());
  // Another process may have migrated while we waited for the write lock.
  auto v = pragma_int(db, "user_version", path);
  if (!v) {
    rollback();
    return v.error();
  }
  version = static_cast<int>(*v);
  for (const detail::Migration& mg : detail::migrations()) {
    if (mg.to_version <= version) continue;
    if (auto r = exec(db, mg.sql, path + ": migration to schema " + std::to_string(mg.to_version)); !r) {
      rollback();
      return r;
    }
    const std::string set = "PRAGMA user_version = " + std::to_string(mg.to_version) +
                            "; PRAGMA application_id = " + std::to_string(detail::kStoreApplicationId);
    if (auto r = exec(db, set.c_str(), path); !r) {
      rollback();
      return r;
    }
    version = mg.to_version;
  }
  return commit();
}

Result<void> Store::Impl::insert_timeline(
    int64_t run_id, const std::string& source, std::size_t device, const std::string& metric,
    const std::function<void(const std::function<void(const Sample*, std::size_t)>&)>& chunks,
    std::size_t& chunks_written, const StoreOptions& o) {
  auto tl = Stmt::prepare(db, "INSERT INTO timelines(run_id, source, device, metric, samples) VALUES(?,?,?,?,0)");
  if (!tl) return tl.error();
  tl->bind(1, run_id).bind(2, source).bind(3, device).bind(4, metric);
  if (tl->step() != SQLITE_DONE) return err("writing timeline");
  const int64_t tid = sqlite3_last_insert_rowid(db);
  auto ch = Stmt::prepare(db, "INSERT INTO timeline_chunks(timeline_id, seq, samples, t_first, t_last, encoding, data) VALUES(?,?,?,?,?,?,?)");
  if (!ch) return ch.error();
  int64_t seq = 0;
  std::size_t total = 0;
  double t_first = 0, t_last = 0;
  Result<void> status;
  chunks([&](const Sample* p, std::size_t n) {
    if (!status || n == 0) return;
    ch->reset();
    ch->bind(1, tid).bind(2, seq++).bind(3, n).bind(4, p[0].t_s).bind(5, p[n - 1].t_s).bind(6, kEncoding);
    ch->bind_blob(7, p, n * sizeof(Sample));
    if (ch->step() != SQLITE_DONE) {
      status = err("writing timeline samples");
      return;
    }
    if (total == 0) t_first = p[0].t_s;
    t_last = p[n - 1].t_s;
    total += n;
    ++chunks_written;
    if (o.on_chunk) o.on_chunk(chunks_written);
  });
  if (!status) return status;
  auto up = Stmt::prepare(db, "UPDATE timelines SET samples = ?, t_first = ?, t_last = ? WHERE id = ?");
  if (!up) return up.error();
  up->bind(1, total).bind(4, tid);
  if (total > 0) {
    up->bind(2, t_first).bind(3, t_last);
  } else {
    up->bind_null(2).bind_null(3);
  }
  if (up->step() != SQLITE_DONE) return err("writing timeline");
  return {};
}

Result<void> Store::Impl::insert_activities(int64_t run_id, const std::vector<StoredActivity>& rows) {
  auto st = Stmt::prepare(db,
                          "INSERT INTO activities(run_id, device, kind, name, t0_s, t1_s, stream, correlation_id, attrs_json)"
                          " VALUES (?,?,?,?,?,?,?,?,?)");
  if (!st) return st.error();
  for (const StoredActivity& a : rows) {
    st->reset();
    st->bind(1, run_id).bind(2, a.device).bind(3, a.kind).bind(4, a.name).bind(5, a.t0_s).bind(6, a.t1_s).bind(9, a.attrs_json);
    if (a.stream >= 0) st->bind(7, a.stream);  // unbound: NULL
    if (a.correlation >= 0) st->bind(8, a.correlation);
    if (st->step() != SQLITE_DONE) return err("storing activities");
  }
  return {};
}

Result<int64_t> Store::Impl::insert(const Measurement& m, const StoreOptions& o, const std::vector<StoredActivity>* activities) {
  using nlohmann::json;
  const std::string result_json = result_to_json(m, -1);
  const std::string fingerprint = run_fingerprint(m);
  std::string command_text;
  for (const std::string& a : m.command) command_text += (command_text.empty() ? "" : " ") + a;
  command_text = for_terminal(command_text);  // listed on terminals: no control characters
  int measured = 0;
  for (const RunInfo& r : m.runs) measured += (!r.warmup && r.complete) ? 1 : 0;
  const Summary* energy = find_stat(m, "gpu_energy_j");
  const Summary* dur = find_stat(m, "duration_s");

  JP_TRY(begin());
  auto body = [&]() -> Result<int64_t> {
    if (!o.allow_duplicate) {
      auto dup = Stmt::prepare(db, "SELECT id FROM runs WHERE fingerprint = ?");
      if (!dup) return dup.error();
      dup->bind(1, fingerprint);
      if (dup->step() == SQLITE_ROW) {
        return make_error(Errc::invalid_argument, "this run (started " + iso_utc(m.origin_realtime_ns) + " on " + m.host +
                                                      ") is already stored as run " + std::to_string(dup->i64(0)) +
                                                      " (--allow-duplicate stores it again)");
      }
    }
    auto run = Stmt::prepare(db,
                             "INSERT INTO runs(fingerprint, recorded_at_ns, origin_realtime_ns, command_json, command_text, host,"
                             " status, simulated, duration_s, measured_runs, gpu_energy_j, gpu_energy_ci95_j, run_duration_s,"
                             " source, tool_version, result_schema_version, result_json)"
                             " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!run) return run.error();
    if (o.allow_duplicate) {
      run->bind_null(1);
    } else {
      run->bind(1, fingerprint);
    }
    run->bind(2, now_realtime_ns()).bind(3, m.origin_realtime_ns).bind(4, json(m.command).dump(-1, ' ', false, json::error_handler_t::replace)).bind(5, command_text);
    run->bind(6, m.host).bind(7, m.complete ? "complete" : "incomplete").bind(8, m.simulated).bind(9, m.duration_s);
    run->bind(10, measured);
    run->bind(11, energy != nullptr && energy->n > 0 ? std::optional<double>(energy->mean) : std::nullopt);
    run->bind(12, energy != nullptr && energy->n > 1 ? std::optional<double>(energy->ci95_half_width) : std::nullopt);
    run->bind(13, dur != nullptr && dur->n > 0 ? std::optional<double>(dur->mean) : std::nullopt);
    run->bind(14, o.source).bind(15, m.tool_version).bind(16, m.schema_version).bind(17, result_json);
    if (run->step() != SQLITE_DONE) return err("writing run");
    const int64_t id = sqlite3_last_insert_rowid(db);

    auto tag = Stmt::prepare(db, "INSERT INTO tags(run_id, key, value) VALUES(?,?,?)");
    if (!tag) return tag.error();
    for (const auto& [k, v] : m.tags) {
      tag->reset();
      tag->bind(1, id).bind(2, clean_label(k)).bind(3, clean_label(v));  // as measurement_from_json reads them
      if (tag->step() != SQLITE_DONE) return err("writing tags");
    }
    auto dev = Stmt::prepare(db,
                             "INSERT INTO devices(run_id, position, gpu_index, name, uuid, pci_bus_id, driver_version, backend,"
                             " simulated, power_limit_w, idle_power_w) VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    if (!dev) return dev.error();
    for (std::size_t g = 0; g < m.gpus.size(); ++g) {
      const GpuInfo& i = m.gpus[g];
      dev->reset();
      dev->bind(1, id).bind(2, g).bind(3, i.index).bind(4, i.name).bind(5, i.uuid).bind(6, i.pci_bus_id);
      dev->bind(7, i.driver_version).bind(8, i.backend).bind(9, i.simulated).bind(10, i.power_limit_w);
      dev->bind(11, g < m.gpu_state.size() ? m.gpu_state[g].idle_power_w : std::nullopt);
      if (dev->step() != SQLITE_DONE) return err("writing devices");
    }
    auto win = Stmt::prepare(db,
                             "INSERT INTO windows(run_id, position, name, kind, run_index, parent, t0_s, t1_s, complete,"
                             " gpu_energy_j, gpu_above_idle_j, meter_j, counts_json) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
    auto we = Stmt::prepare(db,
                            "INSERT INTO window_energy(run_id, window, device, energy_j, method, uncertainty_j, counter_j,"
                            " timeline_j, above_idle_j, mean_power_w) VALUES(?,?,?,?,?,?,?,?,?,?)");
    if (!win) return win.error();
    if (!we) return we.error();
    for (std::size_t w = 0; w < m.windows.size(); ++w) {
      const WindowResult& x = m.windows[w];
      win->reset();
      win->bind(1, id).bind(2, w).bind(3, x.name).bind(4, x.kind).bind(5, x.run).bind(6, x.parent).bind(7, x.t0_s);
      win->bind(8, x.t1_s).bind(9, x.complete).bind(10, x.gpu_energy_j).bind(11, x.gpu_above_idle_j).bind(12, x.meter_j);
      win->bind(13, json(x.counts).dump(-1, ' ', false, json::error_handler_t::replace));
      if (win->step() != SQLITE_DONE) return err("writing windows");
      for (std::size_t g = 0; g < x.gpus.size(); ++g) {
        const GpuEnergy& e = x.gpus[g];
        we->reset();
        we->bind(1, id).bind(2, w).bind(3, g).bind(4, e.energy_j).bind(5, e.method).bind(6, e.uncertainty_j);
        we->bind(7, e.counter_j).bind(8, e.timeline_j).bind(9, e.above_idle_j).bind(10, e.mean_power_w);
        if (we->step() != SQLITE_DONE) return err("writing window energies");
      }
    }
    auto st = Stmt::prepare(db,
                            "INSERT OR REPLACE INTO statistics(run_id, what, n, mean, median, stdev, min, max, ci95_half_width)"
                            " VALUES(?,?,?,?,?,?,?,?,?)");
    if (!st) return st.error();
    for (const RepeatStat& s : m.stats) {
      st->reset();
      st->bind(1, id).bind(2, s.what).bind(3, s.summary.n).bind(4, s.summary.mean).bind(5, s.summary.median);
      st->bind(6, s.summary.stdev).bind(7, s.summary.min).bind(8, s.summary.max).bind(9, s.summary.ci95_half_width);
      if (st->step() != SQLITE_DONE) return err("writing statistics");
    }

    std::size_t chunks = 0;
    for (std::size_t g = 0; g < m.timelines.size(); ++g) {
      if (!m.timelines[g]) continue;
      for (int k = 0; k < kMetricCount; ++k) {
        const Series& s = m.timelines[g]->series[static_cast<std::size_t>(k)];
        if (s.empty()) continue;
        auto r = insert_timeline(
            id, "gpu", g, metric_name(static_cast<Metric>(k)),
            [&s](const std::function<void(const Sample*, std::size_t)>& emit) {
              std::vector<Sample> buf;
              buf.reserve(kTimelineChunk);
              s.for_each([&](const Sample& x) {
                buf.push_back(x);
                if (buf.size() == kTimelineChunk) {
                  emit(buf.data(), buf.size());
                  buf.clear();
                }
              });
              emit(buf.data(), buf.size());
            },
            chunks, o);
        if (!r) return r.error();
      }
    }
    auto vec_chunks = [](const std::vector<Sample>& v) {
      return [&v](const std::function<void(const Sample*, std::size_t)>& emit) {
        for (std::size_t i = 0; i < v.size(); i += kTimelineChunk) emit(v.data() + i, std::min(kTimelineChunk, v.size() - i));
      };
    };
    for (std::size_t d = 0; d < m.cpu_energy.size() && d < m.cpu_domains.size(); ++d) {
      if (m.cpu_energy[d].empty()) continue;
      auto r = insert_timeline(id, "cpu", d, m.cpu_domains[d] + "_energy_j", vec_chunks(m.cpu_energy[d]), chunks, o);
      if (!r) return r.error();
    }
    if (!m.meter_power.empty()) {
      auto r = insert_timeline(id, "meter", 0, "power_w", vec_chunks(m.meter_power), chunks, o);
      if (!r) return r.error();
    }
    if (activities != nullptr) JP_TRY(insert_activities(id, *activities));
    return id;
  };
  auto id = body();
  if (!id) {
    rollback();
    return id.error();
  }
  if (auto c = commit(); !c) {
    rollback();
    return c.error();
  }
  return id;
}

Result<int64_t> Store::insert(const Measurement& m, const StoreOptions& o) { return impl_->insert(m, o); }
Result<int64_t> Store::record(const Measurement& m, const std::vector<StoredActivity>& activities, const StoreOptions& o) {
  return impl_->insert(m, o, &activities);
}

Result<void> Store::Impl::load_timelines(int64_t id, Measurement& m) {
  std::vector<std::shared_ptr<GpuTimeline>> tls;
  for (std::size_t g = 0; g < m.gpus.size(); ++g) tls.push_back(std::make_shared<GpuTimeline>(std::size_t{1} << 21));
  m.cpu_energy.assign(m.cpu_domains.size(), {});
  m.meter_power.clear();
  auto st = Stmt::prepare(db,
                          "SELECT t.source, t.device, t.metric, c.encoding, c.samples, c.data FROM timelines t"
                          " JOIN timeline_chunks c ON c.timeline_id = t.id WHERE t.run_id = ? ORDER BY t.id, c.seq");
  if (!st) return st.error();
  st->bind(1, id);
  std::vector<Sample> buf;
  int rc = 0;
  while ((rc = st->step()) == SQLITE_ROW) {
    const std::string source = st->text(0);
    const auto device = static_cast<std::size_t>(st->i64(1));
    const std::string metric = st->text(2);
    const auto n = static_cast<std::size_t>(st->i64(4));
    if (st->text(3) != kEncoding || st->bytes(5) != n * sizeof(Sample)) {
      return make_error(Errc::parse, path + ": run " + std::to_string(id) + ": timeline " + metric + " has an unknown encoding");
    }
    buf.resize(n);
    if (n > 0) std::memcpy(buf.data(), st->blob(5), n * sizeof(Sample));
    if (source == "gpu") {
      const auto k = metric_from_name(metric);
      if (!k || device >= tls.size()) continue;
      Series& s = tls[device]->series[static_cast<std::size_t>(*k)];
      for (const Sample& x : buf) s.append(x.t_s, x.value);
    } else if (source == "cpu" && device < m.cpu_energy.size()) {
      m.cpu_energy[device].insert(m.cpu_energy[device].end(), buf.begin(), buf.end());
    } else if (source == "meter") {
      m.meter_power.insert(m.meter_power.end(), buf.begin(), buf.end());
    }
  }
  if (rc != SQLITE_DONE) return err("reading timelines of run " + std::to_string(id));
  m.timelines.assign(tls.begin(), tls.end());
  return {};
}

Result<Measurement> Store::load(int64_t id, bool with_timelines) {
  auto st = Stmt::prepare(impl_->db, "SELECT result_json FROM runs WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, id);
  const int rc = st->step();
  if (rc == SQLITE_DONE) return make_error(Errc::not_found, "no run " + std::to_string(id) + " in " + impl_->path);
  if (rc != SQLITE_ROW) return impl_->err("reading run " + std::to_string(id));
  auto m = measurement_from_json(st->text(0));
  if (!m) return make_error(m.error().code, impl_->path + ": run " + std::to_string(id) + ": " + m.error().message);
  if (with_timelines) JP_TRY(impl_->load_timelines(id, *m));
  return m;
}

Result<std::vector<RunSummary>> Store::Impl::list(const RunFilter& f, std::optional<int64_t> only) {
  std::string sql =
      "SELECT id, recorded_at_ns, origin_realtime_ns, command_json, host, status, source, simulated, duration_s,"
      " measured_runs, gpu_energy_j, gpu_energy_ci95_j, run_duration_s FROM runs WHERE 1";
  if (only) sql += " AND id = ?";
  for (const auto& tv : f.tags) {
    sql += tv.second == "*" ? " AND EXISTS (SELECT 1 FROM tags WHERE run_id = runs.id AND key = ?)"
                            : " AND EXISTS (SELECT 1 FROM tags WHERE run_id = runs.id AND key = ? AND value = ?)";
  }
  if (!f.command_contains.empty()) sql += " AND instr(command_text, ?) > 0";
  if (!f.gpu_contains.empty()) {
    sql += " AND EXISTS (SELECT 1 FROM devices d WHERE d.run_id = runs.id AND (instr(lower(d.name), lower(?)) > 0"
           " OR instr(lower(d.uuid), lower(?)) > 0 OR instr(lower(d.pci_bus_id), lower(?)) > 0))";
  }
  if (f.since_ns) sql += " AND origin_realtime_ns >= ?";
  if (f.until_ns) sql += " AND origin_realtime_ns < ?";
  sql += " ORDER BY id DESC";
  if (f.limit > 0) sql += " LIMIT " + std::to_string(f.limit);
  auto st = Stmt::prepare(db, sql);
  if (!st) return st.error();
  int i = 1;
  if (only) st->bind(i++, *only);
  for (const auto& [k, v] : f.tags) {
    st->bind(i++, k);
    if (v != "*") st->bind(i++, v);
  }
  if (!f.command_contains.empty()) st->bind(i++, f.command_contains);
  if (!f.gpu_contains.empty()) {
    for (int k = 0; k < 3; ++k) st->bind(i++, f.gpu_contains);
  }
  if (f.since_ns) st->bind(i++, *f.since_ns);
  if (f.until_ns) st->bind(i++, *f.until_ns);

  auto tags = Stmt::prepare(db, "SELECT key, value FROM tags WHERE run_id = ? ORDER BY key");
  auto gpus = Stmt::prepare(db, "SELECT name FROM devices WHERE run_id = ? ORDER BY position");
  if (!tags) return tags.error();
  if (!gpus) return gpus.error();
  std::vector<RunSummary> out;
  int rc = 0;
  while ((rc = st->step()) == SQLITE_ROW) {
    RunSummary r;
    r.id = st->i64(0);
    r.recorded_at_utc = iso_utc(st->i64(1));
    r.origin_realtime_ns = st->i64(2);
    r.started_at_utc = iso_utc(r.origin_realtime_ns);
    try {
      r.command = nlohmann::json::parse(st->text(3)).get<std::vector<std::string>>();
    } catch (const std::exception&) {
      return make_error(Errc::parse, path + ": run " + std::to_string(r.id) + ": malformed command");
    }
    r.host = st->text(4);
    r.status = st->text(5);
    r.source = st->text(6);
    r.simulated = st->i64(7) != 0;
    r.duration_s = st->f64(8);
    r.measured_runs = st->i32(9);
    r.gpu_energy_j = st->opt_f64(10);
    r.gpu_energy_ci95_j = st->opt_f64(11);
    r.run_duration_s = st->opt_f64(12);
    tags->reset();
    tags->bind(1, r.id);
    while (tags->step() == SQLITE_ROW) r.tags[tags->text(0)] = tags->text(1);
    gpus->reset();
    gpus->bind(1, r.id);
    while (gpus->step() == SQLITE_ROW) r.gpu_names.push_back(gpus->text(0));
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return err("listing runs");
  std::reverse(out.begin(), out.end());
  return out;
}

Result<std::vector<RunSummary>> Store::list(const RunFilter& f) { return impl_->list(f, std::nullopt); }

Result<RunSummary> Store::summary(int64_t id) {
  auto l = impl_->list({}, id);
  if (!l) return l.error();
  if (l->empty()) return make_error(Errc::not_found, "no run " + std::to_string(id) + " in " + impl_->path);
  return l->front();
}

Result<void> Store::remove(const std::vector<int64_t>& ids) {
  JP_TRY(impl_->begin());
  auto body = [&]() -> Result<void> {
    auto del = Stmt::prepare(impl_->db, "DELETE FROM runs WHERE id = ?");
    if (!del) return del.error();
    for (int64_t id : ids) {
      del->reset();
      del->bind(1, id);
      if (del->step() != SQLITE_DONE) return impl_->err("removing run " + std::to_string(id));
      if (sqlite3_changes(impl_->db) == 0) return make_error(Errc::not_found, "no run " + std::to_string(id) + " in " + impl_->path);
    }
    return {};
  };
  if (auto r = body(); !r) {
    impl_->rollback();
    return r;
  }
  JP_TRY(impl_->commit());
  // Give the freed pages back to the file system (best effort).
  sqlite3_exec(impl_->db, "PRAGMA incremental_vacuum", nullptr, nullptr, nullptr);
  return {};
}

Result<int64_t> Store::latest_id() {
  auto st = Stmt::prepare(impl_->db, "SELECT max(id) FROM runs");
  if (!st) return st.error();
  if (st->step() != SQLITE_ROW) return impl_->err("reading runs");
  if (st->is_null(0)) return make_error(Errc::not_found, "no runs in " + impl_->path);
  return st->i64(0);
}

Result<int64_t> resolve_run_ref(Store& store, const std::string& ref) {
  std::size_t back = 0;
  if (ref == "last" || ref.rfind("last~", 0) == 0) {
    if (ref != "last") {
      // "last~" alone would otherwise mean the newest run: a command that deletes must not guess.
      const std::string n = ref.substr(5);
      if (n.empty() || n.size() > 9 || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return make_error(Errc::invalid_argument, "bad run reference '" + ref + "' (want ID, last or last~N with N a number)");
      }
      back = std::stoul(n);
    }
    auto l = store.list({});
    if (!l) return l.error();
    if (back >= l->size()) return make_error(Errc::not_found, "no run " + ref + " in " + store.path());
    return (*l)[l->size() - 1 - back].id;
  }
  if (ref.empty() || ref.size() > 18 || !std::all_of(ref.begin(), ref.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return make_error(Errc::invalid_argument, "bad run reference '" + ref + "' (want ID, last or last~N)");
  }
  const int64_t id = std::stoll(ref);
  auto s = store.summary(id);
  if (!s) return s.error();
  return id;
}

Result<int64_t> parse_time_filter(const std::string& text, int64_t now_ns) {
  auto bad = [&] {
    return make_error(Errc::invalid_argument,
                      "bad time '" + text + "' (want YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] in UTC, or an age like 30m, 12h, 7d)");
  };
  if (text.size() >= 2 && std::all_of(text.begin(), text.end() - 1, [](char c) { return c >= '0' && c <= '9'; })) {
    if (text.size() > 12) return bad();
    const char unit = text.back();
    const int64_t n = std::stoll(text.substr(0, text.size() - 1));
    int64_t s = 0;
    if (unit == 's') s = 1;
    if (unit == 'm') s = 60;
    if (unit == 'h') s = 3600;
    if (unit == 'd') s = 86400;
    if (s == 0) return bad();
    int64_t ns = 0;
    if (__builtin_mul_overflow(n, s * 1000000000, &ns) || __builtin_sub_overflow(now_ns, ns, &ns)) return bad();
    return ns;
  }
  std::tm tm{};
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  char tail = 0;
  const int got = std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &sec, &tail);
  if (!(got == 3 && text.size() == 10) && got != 5 && got != 6) return bad();
  if (got == 7 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return bad();
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return static_cast<int64_t>(timegm(&tm)) * 1000000000;
}

Result<int64_t> record_measurement(const Measurement& m, const StoreOptions& o) {
  auto store = Store::open(resolve_db_path(o.db_path), Store::Mode::write, o.busy_timeout_ms);
  if (!store) return store.error();
  return store->insert(m, o);
}

Result<int64_t> record_run(const Measurement& m, const std::vector<StoredActivity>& activities, const StoreOptions& o) {
  auto store = Store::open(resolve_db_path(o.db_path), Store::Mode::write, o.busy_timeout_ms);
  if (!store) return store.error();
  return store->record(m, activities, o);
}

}  // namespace jouleprof
