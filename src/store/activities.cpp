#include "jouleprof/store/activities.hpp"

#include "sqlite_util.hpp"

namespace jouleprof {

using detail::Stmt;

Result<std::vector<StoredActivity>> load_activities(const std::string& db_path, int64_t run_id) {
  sqlite3* db = nullptr;
  struct Close {
    sqlite3*& db;
    ~Close() { sqlite3_close_v2(db); }
  } close{db};
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    return detail::sqlite_error(db, "cannot open run store " + db_path);
  }
  auto st = Stmt::prepare(db,
                          "SELECT device, kind, name, t0_s, t1_s, stream, correlation_id, attrs_json FROM activities "
                          "WHERE run_id = ? ORDER BY rowid");
  if (!st) return st.error();
  st->bind(1, run_id);
  std::vector<StoredActivity> out;
  int rc = 0;
  while ((rc = st->step()) == SQLITE_ROW) {
    StoredActivity a;
    a.device = st->i32(0);
    a.kind = st->text(1);
    a.name = st->text(2);
    a.t0_s = st->f64(3);
    a.t1_s = st->f64(4);
    a.stream = st->is_null(5) ? -1 : st->i64(5);
    a.correlation = st->is_null(6) ? -1 : st->i64(6);
    a.attrs_json = st->text(7);
    out.push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return detail::sqlite_error(db, db_path + ": reading activities of run " + std::to_string(run_id));
  return out;
}

}  // namespace jouleprof
