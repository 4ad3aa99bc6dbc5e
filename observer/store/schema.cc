#include "observer/store/schema.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/safe_file.h"
#include "scout/version.h"

namespace scout::store {

namespace {

// The directory of `path` ("." for a bare name).
std::filesystem::path dir_of(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? std::filesystem::path(".") : dir;
}

// SQLite's multi-line messages (quick_check starts with "*** in database main ***") on one line.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::string out;
  for (char c : s) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::unique_ptr<Db> open_db(const std::string& path, int flags) {
  constexpr int kBusyTimeoutMs = 5000;
  // A store to be created in a directory this process cannot write: name the directory (SQLite
  // would only say "unable to open database file").
  if ((flags & SQLITE_OPEN_CREATE) && ::access(path.c_str(), F_OK) != 0) {
    const std::filesystem::path dir = dir_of(path);
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      throw Error("cannot open store " + path + ": directory " + dir.string() + " is not writable (" +
                      std::strerror(errno) + ")",
                  SQLITE_CANTOPEN);
    }
  }
  auto db = std::make_unique<Db>(path, flags);
  sqlite3_busy_timeout(db->raw(), kBusyTimeoutMs);
  // The first read opens the file for real: name what went wrong, not always "not a database".
  int rc = sqlite3_exec(db->raw(), "PRAGMA user_version", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    int primary = rc & 0xff;
    if (primary == SQLITE_NOTADB) throw Error(path + " is not a scout store (not an SQLite database)", primary);
    std::string why = sqlite3_errmsg(db->raw());
    if (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_PERM || primary == SQLITE_IOERR) {
      int e = sqlite3_system_errno(db->raw());
      if (e != 0) why += std::string(" (") + std::strerror(e) + ")";
      const std::filesystem::path dir = dir_of(path);
      if ((flags & SQLITE_OPEN_CREATE) && ::access(path.c_str(), F_OK) != 0 &&
          ::access(dir.c_str(), W_OK | X_OK) != 0) {
        why = "directory " + dir.string() + " is not writable (" + std::strerror(errno) + ")";
      }
    }
    throw Error("cannot open store " + path + ": " + why, primary);
  }
  return db;
}

namespace {

// "file:" URI of `path` with the characters a URI gives meaning to escaped (RFC 3986), and
// immutable=1.
std::string immutable_uri(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string u = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      u += char(c);
    } else {
      u += '%';
      u += hex[c >> 4];
      u += hex[c & 15];
    }
  }
  return u + "?immutable=1";
}

// Whether a file can be written at `path` now: not on a read-only mount, not on a full one (no
// block left for this user: the -shm file a WAL store needs cannot be made), and permitted.
bool writable(const std::string& path) {
  struct statvfs vfs;
  if (::statvfs(path.c_str(), &vfs) == 0 && ((vfs.f_flag & ST_RDONLY) || vfs.f_bavail == 0)) return false;
  return ::access(path.c_str(), W_OK) == 0;
}

std::string cache_file() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/scout/checked";
  const char* home = std::getenv("HOME");
  if (home && *home == '/') return std::string(home) + "/.cache/scout/checked";
  return "";
}

}  // namespace

std::unique_ptr<Db> open_reader_db(const std::string& path) {
  try {
    return open_db(path, SQLITE_OPEN_READONLY);
  } catch (const Error& e) {
    const int c = e.code();
    const bool ro_cause = c == SQLITE_CANTOPEN || c == SQLITE_READONLY || c == SQLITE_IOERR || c == SQLITE_PERM;
    if (!ro_cause || (writable(dir_of(path).string()) && writable(path))) throw;
    auto db = std::make_unique<Db>(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, immutable_uri(path));
    const int rc = sqlite3_exec(db->raw(), "PRAGMA user_version", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) throw;
    return db;
  }
}

void check_integrity_once(Db& db) {
  struct stat st;
  const std::string cache = cache_file();
  if (cache.empty() || ::stat(db.path().c_str(), &st) != 0) {
    check_integrity(db);
    return;
  }
  const std::string key = std::to_string(uint64_t(st.st_dev)) + " " + std::to_string(uint64_t(st.st_ino)) + " " +
                          std::to_string(uint64_t(st.st_size));
  std::string text, err;
  safe::read_regular(cache, 64 * 1024, &text, &err);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == key) return;  // this file at this size was found intact before
    if (!l.empty()) lines.push_back(l);
  }
  check_integrity(db);
  lines.push_back(key);
  constexpr size_t kKeep = 256;
  if (lines.size() > kKeep) lines.erase(lines.begin(), lines.end() - kKeep);
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache).parent_path(), ec);
  const std::string tmp = cache + "." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool ok = ::write(fd, out.data(), out.size()) == ssize_t(out.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), cache.c_str()) != 0) ::unlink(tmp.c_str());
}

void check_integrity(Db& db) {
  Stmt st(db, "PRAGMA quick_check(1)");
  std::string first = st.step() ? st.str(0) : std::string("no answer");
  if (first != "ok") throw Error("store " + db.path() + " is damaged (SQLite quick_check: " + one_line(first) + ")");
}

namespace {

// Version 1 (docs/store.md). Integers are SQLite INTEGER (signed 64-bit); times are ns of
// CLOCK_REALTIME; commHash and fingerprints are uint64 stored with the same bits.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE job (
  id               INTEGER PRIMARY KEY CHECK (id = 1),
  job              TEXT NOT NULL,
  nodes            INTEGER NOT NULL,
  node_rank        INTEGER NOT NULL,
  started_ns       INTEGER NOT NULL,
  updated_ns       INTEGER NOT NULL,
  observer_version TEXT NOT NULL
);
CREATE TABLE ranks (
  host          TEXT NOT NULL,
  pid           INTEGER NOT NULL,
  global_rank   INTEGER NOT NULL,
  local_rank    INTEGER NOT NULL,
  gpu           TEXT NOT NULL,
  cuda_dev      INTEGER NOT NULL,
  node_rank     INTEGER NOT NULL,
  segment       TEXT NOT NULL,
  state         TEXT NOT NULL,
  first_seen_ns INTEGER NOT NULL,
  last_event_ns INTEGER NOT NULL,
  PRIMARY KEY (host, pid)
);
CREATE TABLE comms (
  comm_hash              INTEGER NOT NULL,
  nranks                 INTEGER NOT NULL,
  name                   TEXT NOT NULL,
  nnodes                 INTEGER NOT NULL,
  global_ranks           TEXT NOT NULL,
  ops_complete           INTEGER NOT NULL,
  last_seq_broadcast     INTEGER NOT NULL,
  last_seq_reduce        INTEGER NOT NULL,
  last_seq_allgather     INTEGER NOT NULL,
  last_seq_reducescatter INTEGER NOT NULL,
  last_seq_allreduce     INTEGER NOT NULL,
  last_progress_ns       INTEGER NOT NULL,
  state                  TEXT NOT NULL,
  p2p_complete           INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (comm_hash, nranks)
);
CREATE TABLE ops (
  op_id            INTEGER PRIMARY KEY,
  comm_hash        INTEGER NOT NULL,
  kind             TEXT NOT NULL,
  func             TEXT NOT NULL,
  seq              INTEGER NOT NULL,
  comm_name        TEXT NOT NULL,
  nranks           INTEGER NOT NULL,
  datatype         TEXT NOT NULL,
  count            INTEGER NOT NULL,
  bytes            INTEGER NOT NULL,
  algo             TEXT NOT NULL,
  proto            TEXT NOT NULL,
  n_channels       INTEGER NOT NULL,
  ranks_reported   INTEGER NOT NULL,
  ranks_complete   INTEGER NOT NULL,
  first_arrival_ns INTEGER NOT NULL,
  last_arrival_ns  INTEGER NOT NULL,
  last_rank        INTEGER NOT NULL,
  end_ns           INTEGER NOT NULL,
  duration_ns      INTEGER NOT NULL,
  busbw_gbps       REAL NOT NULL,
  fp_verdict       TEXT NOT NULL,
  meta_verdict     TEXT NOT NULL,
  UNIQUE (comm_hash, func, seq, kind)
);
CREATE INDEX ops_by_arrival ON ops (first_arrival_ns);
CREATE TABLE op_timings (
  op_id       INTEGER NOT NULL,
  global_rank INTEGER NOT NULL,
  comm_rank   INTEGER NOT NULL,
  api_ns      INTEGER NOT NULL,
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  fp_recv     INTEGER NOT NULL,
  fp_status   TEXT NOT NULL,
  PRIMARY KEY (op_id, global_rank)
) WITHOUT ROWID;
CREATE INDEX op_timings_by_rank ON op_timings (global_rank, op_id);
CREATE TABLE findings (
  id            INTEGER PRIMARY KEY,
  dedup_key     TEXT UNIQUE,
  kind          TEXT NOT NULL,
  verdict       TEXT NOT NULL,
  status        TEXT NOT NULL,
  comm_hash     INTEGER NOT NULL,
  comm_name     TEXT NOT NULL,
  comm_nranks   INTEGER NOT NULL,
  key_func      TEXT,
  key_seq       INTEGER,
  first_seen_ns INTEGER NOT NULL,
  last_seen_ns  INTEGER NOT NULL,
  summary       TEXT NOT NULL,
  evidence      TEXT NOT NULL,
  evidence_version INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE finding_suspects (
  finding_id  INTEGER NOT NULL,
  role        TEXT NOT NULL,
  idx         INTEGER NOT NULL,
  global_rank INTEGER NOT NULL,
  host        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  gpu         TEXT NOT NULL,
  comm_rank   INTEGER NOT NULL,
  PRIMARY KEY (finding_id, role, idx)
) WITHOUT ROWID;
CREATE INDEX finding_suspects_by_rank ON finding_suspects (global_rank);
)sql";

constexpr const char* kFormat = "scout-store";

}  // namespace

void add_optional_tables(Db& db) {
  db.exec(R"sql(
CREATE TABLE IF NOT EXISTS replay_cycles (
  id         INTEGER PRIMARY KEY,
  cycle      INTEGER NOT NULL,
  trigger    TEXT NOT NULL,
  started_ns INTEGER NOT NULL,
  ended_ns   INTEGER NOT NULL,
  outcome    TEXT NOT NULL,
  backend    TEXT NOT NULL,
  detail     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS replay_cycles_by_start ON replay_cycles (started_ns);
CREATE TABLE IF NOT EXISTS p2p_pairs (
  comm_hash   INTEGER NOT NULL,
  nranks      INTEGER NOT NULL,
  comm_name   TEXT NOT NULL,
  src_rank    INTEGER NOT NULL,
  dst_rank    INTEGER NOT NULL,
  src_global  INTEGER NOT NULL,
  dst_global  INTEGER NOT NULL,
  ops         INTEGER NOT NULL,
  bytes       INTEGER NOT NULL,
  last_seq    INTEGER NOT NULL,
  last_end_ns INTEGER NOT NULL,
  total_ns    INTEGER NOT NULL,
  max_ns      INTEGER NOT NULL,
  PRIMARY KEY (comm_hash, nranks, src_rank, dst_rank)
);
)sql");
}

void ensure_gemm_tables(Db& db) {
  db.exec(R"sql(
CREATE TABLE IF NOT EXISTS gemm_capture (
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  global_rank  INTEGER NOT NULL,
  state        INTEGER NOT NULL,
  capacity     INTEGER NOT NULL,
  n_entries    INTEGER NOT NULL,
  windows      INTEGER NOT NULL,
  lines        INTEGER NOT NULL,
  captured     INTEGER NOT NULL,
  ignored      INTEGER NOT NULL,
  malformed    INTEGER NOT NULL,
  dropped_full INTEGER NOT NULL,
  dropped_busy INTEGER NOT NULL,
  window_ns    INTEGER NOT NULL,
  PRIMARY KEY (host, pid)
);
CREATE TABLE IF NOT EXISTS gemm_shapes (
  host        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  global_rank INTEGER NOT NULL,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, batch INTEGER NOT NULL,
  a_type INTEGER NOT NULL, b_type INTEGER NOT NULL, c_type INTEGER NOT NULL, d_type INTEGER NOT NULL,
  compute INTEGER NOT NULL, scale_type INTEGER NOT NULL, layout INTEGER NOT NULL, algo INTEGER NOT NULL,
  tile_m INTEGER NOT NULL, tile_n INTEGER NOT NULL,
  count       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS gemm_shapes_by_proc ON gemm_shapes (host, pid);
)sql");
}

bool has_table(Db& db, const std::string& name) {
  Stmt s(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?");
  s.bind(1, name);
  return s.step() && s.i64(0) > 0;
}

bool is_empty(Db& db) { return db.query_int("SELECT count(*) FROM sqlite_schema") == 0; }

void create_schema(Db& db, int64_t now_ns) {
  db.exec(kSchemaV1);
  Stmt put(db, "INSERT INTO meta (key, value) VALUES (?, ?)");
  auto row = [&](const char* k, const std::string& v) {
    put.bind(1, k).bind(2, v).run();
    put.reset();
  };
  row("format", kFormat);
  row("schema_version", std::to_string(kSchemaVersion));
  row("created_ns", std::to_string(now_ns));
  row("created_by", std::string("scout ") + kVersion);
  row("ops_dropped", "0");
  db.exec("PRAGMA application_id = " + std::to_string(kApplicationId) +
          "; PRAGMA user_version = " + std::to_string(kSchemaVersion));
}

void check_schema(Db& db) {
  const std::string& path = db.path();
  int64_t version = db.query_int("PRAGMA user_version");
  int64_t app = db.query_int("PRAGMA application_id");
  if (app != kApplicationId || version == 0) { throw Error(path + " is not a scout store"); }
  if (version > kSchemaVersion) {
    throw Error("store " + path + " has schema version " + std::to_string(version) +
                "; this scout reads up to version " + std::to_string(kSchemaVersion) + " (use a newer scout)");
  }
  if (version < 1) throw Error(path + " is not a scout store");
  Stmt fmt(db, "SELECT value FROM meta WHERE key = 'format'");
  if (!fmt.step() || fmt.str(0) != kFormat) throw Error(path + " is not a scout store");
}

bool has_column(Db& db, const std::string& table, const std::string& column) {
  Stmt s(db, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?");
  s.bind(1, table).bind(2, column);
  return s.step() && s.i64(0) > 0;
}

void upgrade_schema(Db& db) {
  // Stores written before findings carried evidence_version: their evidence has the shapes of
  // evidence version 1.
  if (!has_column(db, "findings", "evidence_version")) {
    db.exec("ALTER TABLE findings ADD COLUMN evidence_version INTEGER NOT NULL DEFAULT 1");
  }
  // Stores written before point-to-point operations were counted: none counted.
  if (!has_column(db, "comms", "p2p_complete")) {
    db.exec("ALTER TABLE comms ADD COLUMN p2p_complete INTEGER NOT NULL DEFAULT 0");
  }
}

}  // namespace scout::store
