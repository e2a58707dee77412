#include "jouleprof/store/activities.hpp"

#include <memory>

#include "sqlite_util.hpp"

namespace jouleprof {

namespace {

struct Db {
  sqlite3* db = nullptr;
  ~Db() { sqlite3_close_v2(db); }
};

struct Statement {
  sqlite3_stmt* s = nullptr;
  ~Statement() { sqlite3_finalize(s); }
  sqlite3_stmt* get() const { return s; }
};

Result<std::unique_ptr<Statement>> prepare(sqlite3* db, const char* sql) {
  auto st = std::make_unique<Statement>();
  if (sqlite3_prepare_v2(db, sql, -1, &st->s, nullptr) != SQLITE_OK) return detail::sqlite_error(db, "preparing statement");
  return st;
}

Result<void> exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return detail::sqlite_error(db, sql);
  return {};
}

}  // namespace

Result<std::size_t> store_activities(const std::string& db_path, int64_t run_id, const std::vector<StoredActivity>& rows) {
  Db d;
  if (sqlite3_open_v2(db_path.c_str(), &d.db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    return detail::sqlite_error(d.db, "cannot open run store " + db_path);
  }
  sqlite3_busy_timeout(d.db, 30000);
  if (auto r = exec(d.db, "BEGIN IMMEDIATE"); !r) return r.error();
  auto st = prepare(d.db,
                                  "INSERT INTO activities(run_id, device, kind, name, t0_s, t1_s, stream, correlation_id, attrs_json) "
                                  "VALUES (?,?,?,?,?,?,?,?,?)");
  if (!st) {
    (void)exec(d.db, "ROLLBACK");
    return st.error();
  }
  for (const StoredActivity& a : rows) {
    sqlite3_stmt* s = (*st)->get();
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int(s, 2, a.device);
    sqlite3_bind_text(s, 3, a.kind.data(), static_cast<int>(a.kind.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, a.name.data(), static_cast<int>(a.name.size()), SQLITE_TRANSIENT);
    sqlite3_bind_double(s, 5, a.t0_s);
    sqlite3_bind_double(s, 6, a.t1_s);
    if (a.stream >= 0) {
      sqlite3_bind_int64(s, 7, a.stream);
    } else {
      sqlite3_bind_null(s, 7);
    }
    if (a.correlation >= 0) {
      sqlite3_bind_int64(s, 8, a.correlation);
    } else {
      sqlite3_bind_null(s, 8);
    }
    sqlite3_bind_text(s, 9, a.attrs_json.data(), static_cast<int>(a.attrs_json.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(s) != SQLITE_DONE) {
      Error e = detail::sqlite_error(d.db, "storing activities");
      (void)exec(d.db, "ROLLBACK");
      return e;
    }
  }
  if (auto r = exec(d.db, "COMMIT"); !r) return r.error();
  return rows.size();
}

Result<std::vector<StoredActivity>> load_activities(const std::string& db_path, int64_t run_id) {
  Db d;
  if (sqlite3_open_v2(db_path.c_str(), &d.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    return detail::sqlite_error(d.db, "cannot open run store " + db_path);
  }
  auto st = prepare(d.db,
                                  "SELECT device, kind, name, t0_s, t1_s, stream, correlation_id, attrs_json FROM activities "
                                  "WHERE run_id = ? ORDER BY rowid");
  if (!st) return st.error();
  sqlite3_stmt* s = (*st)->get();
  sqlite3_bind_int64(s, 1, run_id);
  std::vector<StoredActivity> out;
  auto text = [&](int c) {
    const auto* p = sqlite3_column_text(s, c);
    return p != nullptr ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  };
  while (sqlite3_step(s) == SQLITE_ROW) {
    StoredActivity a;
    a.device = sqlite3_column_int(s, 0);
    a.kind = text(1);
    a.name = text(2);
    a.t0_s = sqlite3_column_double(s, 3);
    a.t1_s = sqlite3_column_double(s, 4);
    a.stream = sqlite3_column_type(s, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 5);
    a.correlation = sqlite3_column_type(s, 6) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 6);
    a.attrs_json = text(7);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace jouleprof
