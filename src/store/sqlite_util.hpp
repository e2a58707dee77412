// Thin RAII helpers over the SQLite C API (internal to the store).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "jouleprof/core/error.hpp"

namespace jouleprof::detail {

/// An error from the connection's last failing call: "what: sqlite message".
inline Error sqlite_error(sqlite3* db, const std::string& what) {
  const int code = db != nullptr ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
  Errc c = Errc::io;
  if ((code & 0xff) == SQLITE_NOTADB || (code & 0xff) == SQLITE_CORRUPT) c = Errc::parse;
  return make_error(c, what + ": " + msg);
}

class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  ~Stmt() { sqlite3_finalize(s_); }

  static Result<Stmt> prepare(sqlite3* db, std::string_view sql) {
    Stmt st;
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &st.s_, nullptr) != SQLITE_OK) {
      return sqlite_error(db, "preparing statement");
    }
    return st;
  }

  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, std::size_t v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, bool v) { return bind(i, static_cast<int64_t>(v ? 1 : 0)); }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, const char* v) { return bind(i, std::string(v)); }
  Stmt& bind(int i, const std::optional<double>& v) {
    if (v) return bind(i, *v);
    sqlite3_bind_null(s_, i);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  /// The blob is not copied: it must live until step().
  Stmt& bind_blob(int i, const void* p, std::size_t n) {
    sqlite3_bind_blob64(s_, i, p, n, SQLITE_STATIC);
    return *this;
  }

  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(s_); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  int i32(int c) const { return sqlite3_column_int(s_, c); }
  double f64(int c) const { return sqlite3_column_double(s_, c); }
  bool is_null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::optional<double> opt_f64(int c) const { return is_null(c) ? std::nullopt : std::optional<double>(f64(c)); }
  std::string text(int c) const {
    const auto* p = sqlite3_column_text(s_, c);
    return p != nullptr ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s_, c))) : std::string();
  }
  const void* blob(int c) const { return sqlite3_column_blob(s_, c); }
  std::size_t bytes(int c) const { return static_cast<std::size_t>(sqlite3_column_bytes(s_, c)); }

 private:
  sqlite3_stmt* s_ = nullptr;
};

/// Runs SQL without results (may hold several statements).
inline Result<void> exec(sqlite3* db, const char* sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    Error e = sqlite_error(db, what);
    e.message = what + ": " + msg;
    return e;
  }
  return {};
}

}  // namespace jouleprof::detail
