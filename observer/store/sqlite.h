// A thin RAII layer over libsqlite3 for the store (observer/store): one connection, prepared
// statements with typed bind/column helpers. Every failure throws store::Error carrying
// SQLite's message; the store's public entry points catch it (writer) or document it (reader).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace scout::store {

// Any store failure: SQLite errors, a file that is not a scout store, a schema mismatch.
class Error : public std::runtime_error {
 public:
  // `code`: SQLite's primary result code (rc & 0xff) when SQLite reported it; 0 for scout's own
  // checks (not a scout store, another job's store, a newer schema, damage).
  explicit Error(const std::string& what, int code = 0) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }
  // True when the same operation may succeed later without anyone touching the file: a lock
  // held by another connection (SQLITE_BUSY, SQLITE_LOCKED), a full disk (SQLITE_FULL), a
  // read-only or failing file system or directory (SQLITE_READONLY, SQLITE_IOERR,
  // SQLITE_CANTOPEN, SQLITE_PERM). What the observer retries (docs/store.md, "When writes fail").
  bool transient() const {
    return code_ == SQLITE_BUSY || code_ == SQLITE_LOCKED || code_ == SQLITE_FULL || code_ == SQLITE_READONLY ||
           code_ == SQLITE_IOERR || code_ == SQLITE_CANTOPEN || code_ == SQLITE_PERM;
  }

 private:
  int code_ = 0;
};

// SQLite stores signed 64-bit integers: commHash and fingerprints (uint64) are stored as the
// int64 with the same bits (docs/store.md, "Integers").
inline int64_t to_sql(uint64_t v) { return static_cast<int64_t>(v); }
inline uint64_t from_sql(int64_t v) { return static_cast<uint64_t>(v); }

class Db;

// One prepared statement. bind_* take 1-based parameter indices (SQLite's convention); col_*
// take 0-based column indices. step() returns true while a row is available.
class Stmt {
 public:
  Stmt(Db& db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, uint64_t v) { return bind(i, to_sql(v)); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind_null(int i);

  bool step();
  // Runs to completion (for statements without result rows).
  void run();
  // Clears bindings and rewinds, ready for reuse.
  void reset();

  bool is_null(int c) const;
  int64_t i64(int c) const;
  uint64_t u64(int c) const { return from_sql(i64(c)); }
  int i32(int c) const { return static_cast<int>(i64(c)); }
  double f64(int c) const;
  // Column c as stored (bytes unchanged; "" for NULL).
  std::string str(int c) const;
  // Column c as valid UTF-8 without control characters other than newline and tab: every byte
  // that is not part of a well-formed sequence, and every other control character (ESC of a
  // terminal sequence), becomes U+FFFD (common/utf8.h text_clean). What readers hand to output,
  // so a hostile or damaged store can never make a renderer print bytes that are not text.
  std::string text(int c) const;

 private:
  Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class Db {
 public:
  // Opens `path` with sqlite3_open_v2 `flags` (SQLITE_OPEN_*). Throws Error naming the path.
  // With `uri` (and SQLITE_OPEN_URI in flags), opens that URI instead; messages still name `path`.
  Db(const std::string& path, int flags, const std::string& uri = "");
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs one or more statements without results.
  void exec(std::string_view sql);
  // The single integer result of `sql` (e.g. a PRAGMA); `fallback` when it returns no row.
  int64_t query_int(std::string_view sql, int64_t fallback = 0);
  int64_t changes() const { return sqlite3_changes64(db_); }
  int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  // Throws Error("<what>: <sqlite message>") when rc is not OK/ROW/DONE.
  void check(int rc, std::string_view what) const;
  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace scout::store
