#include "observer/store/sqlite.h"

#include "common/utf8.h"

namespace scout::store {

Db::Db(const std::string& path, int flags, const std::string& uri) : path_(path) {
  int rc = sqlite3_open_v2(uri.empty() ? path.c_str() : uri.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw Error("cannot open store " + path + ": " + msg, rc & 0xff);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() { sqlite3_close_v2(db_); }

void Db::check(int rc, std::string_view what) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  throw Error("store " + path_ + ": " + std::string(what) + ": " + sqlite3_errmsg(db_), rc & 0xff);
}

void Db::exec(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw Error("store " + path_ + ": " + msg, rc & 0xff);
  }
}

int64_t Db::query_int(std::string_view sql, int64_t fallback) {
  Stmt st(*this, sql);
  return st.step() ? st.i64(0) : fallback;
}

Stmt::Stmt(Db& db, std::string_view sql) : db_(db) {
  db_.check(sqlite3_prepare_v2(db.raw(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr), "prepare");
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::bind(int i, int64_t v) {
  db_.check(sqlite3_bind_int64(stmt_, i, v), "bind");
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  db_.check(sqlite3_bind_double(stmt_, i, v), "bind");
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  db_.check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT), "bind");
  return *this;
}

Stmt& Stmt::bind_null(int i) {
  db_.check(sqlite3_bind_null(stmt_, i), "bind");
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.check(rc, "step");
  return false;
}

void Stmt::run() {
  while (step()) {}
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Stmt::is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }
int64_t Stmt::i64(int c) const { return sqlite3_column_int64(stmt_, c); }
double Stmt::f64(int c) const { return sqlite3_column_double(stmt_, c); }

std::string Stmt::str(int c) const {
  const unsigned char* p = sqlite3_column_text(stmt_, c);
  if (!p) return std::string();
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, c)));
}

std::string Stmt::text(int c) const {
  const unsigned char* p = sqlite3_column_text(stmt_, c);
  if (!p) return std::string();
  std::string_view v(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, c)));
  return text_clean(v, /*keep_lines=*/true);
}

}  // namespace scout::store
