// The store's schema (docs/store.md describes every table and column): creation for a new file
// and the version check every opener runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "observer/store/sqlite.h"

namespace scout::store {

// Schema version, stored in PRAGMA user_version and in meta('schema_version'). Raise it with
// every incompatible change and document the change in docs/store.md ("Versions").
constexpr int kSchemaVersion = 1;

// PRAGMA application_id of every scout store: "SCOT" in ASCII.
constexpr int32_t kApplicationId = 0x53434f54;

// Creates the schema in an empty database (inside the caller's transaction) and stamps
// user_version, application_id and the meta rows (format, schema_version, created_ns,
// created_by).
void create_schema(Db& db, int64_t now_ns);

// Creates the GEMM capture tables (gemm_capture, gemm_shapes; docs/store.md) if missing: an
// additive part of schema version 1, so a store written before them gains them when an observer
// opens it, and readers treat a missing table as empty.
void ensure_gemm_tables(Db& db);
// True if `db` has a table named `name`.
bool has_table(Db& db, const std::string& name);

// Opens the SQLite file at `path` with `flags` (SQLITE_OPEN_*), waiting up to 5 s for another
// connection's lock, and checks that it is an SQLite database at all. Throws Error with one line:
// "<path> is not a scout store (not an SQLite database)" only when SQLite says so; otherwise
// "cannot open store <path>: <reason>", the reason naming an unwritable directory or the
// system error (a read-only directory is not a damaged file).
// Used by every opener (StoreReader, StoreWriter); check_schema() is the next step.
std::unique_ptr<Db> open_db(const std::string& path, int flags);

// Opens the store at `path` for reading: read-only, waiting up to 5 s for a lock (open_db). When
// that fails because the file or its directory cannot be written (a read-only mount, or a full
// one: a WAL store needs its -shm file), opens it again as an immutable database (URI
// immutable=1: no locks, no -shm; nothing can change it there). Throws Error as open_db.
std::unique_ptr<Db> open_reader_db(const std::string& path);

// check_integrity at most once per file identity (device, inode) and size: files already found
// intact are remembered in the user's cache ($XDG_CACHE_HOME/scout/checked, else
// $HOME/.cache/scout/checked; the last 256), so a CLI call on a large store does not read all of
// it every time. Without a cache it checks every time.
void check_integrity_once(Db& db);

// Runs SQLite's quick_check (every page and index entry well-formed). Throws Error
// "store PATH is damaged (SQLite quick_check: <first problem, on one line>)" otherwise. Cost: one
// read of the file.
void check_integrity(Db& db);
// Adds the tables that later scout versions added to version 1 without changing what older
// readers see (replay_cycles, docs/store.md); idempotent; the writer calls it at every open.
void add_optional_tables(Db& db);

// Returns true when `db` has a table named `name`.
bool has_table(Db& db, const std::string& name);

// Returns true when `db` holds no table at all (a new file).
bool is_empty(Db& db);

// Checks that `db` is a scout store this build can read: application_id and meta.format match,
// and user_version is between 1 and kSchemaVersion. Throws Error with one line otherwise, e.g.
//   "store /x.db has schema version 2; this scout reads up to version 1 (use a newer scout)".
void check_schema(Db& db);

// True when `table` has a column named `column`.
bool has_column(Db& db, const std::string& table, const std::string& column);

// Adds what a store of the same schema version written by an older scout lacks (columns added
// compatibly, each with the default old rows mean): findings.evidence_version (1). Needs a
// writable connection; readers of such a store use the same defaults instead (docs/store.md,
// "Versions").
void upgrade_schema(Db& db);

}  // namespace scout::store
