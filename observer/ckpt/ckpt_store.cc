#include "observer/ckpt/ckpt_store.h"

#include <nlohmann/json.hpp>

#include "observer/store/schema.h"
#include "observer/store/sqlite.h"

namespace scout::ckpt {

namespace {

constexpr const char* kTables = R"sql(
CREATE TABLE IF NOT EXISTS ckpt_checkpoints (
  id            INTEGER PRIMARY KEY,
  path          TEXT NOT NULL UNIQUE,
  framework     TEXT NOT NULL,
  step          INTEGER NOT NULL,
  completed_ns  INTEGER NOT NULL,
  discovered_ns INTEGER NOT NULL,
  state         TEXT NOT NULL,
  reason        TEXT NOT NULL,
  finding_ids   TEXT NOT NULL,
  cycles        TEXT NOT NULL,
  decided_ns    INTEGER NOT NULL,
  manifest      TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS ckpt_cycles (
  idx      INTEGER PRIMARY KEY,
  status   TEXT NOT NULL,
  verdict  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ckpt_findings (
  id           INTEGER PRIMARY KEY,
  kind         TEXT NOT NULL,
  verdict      TEXT NOT NULL,
  event_ns     INTEGER NOT NULL,
  open         INTEGER NOT NULL,
  last_seen_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ckpt_certificates (
  seq           INTEGER PRIMARY KEY,
  checkpoint_id INTEGER NOT NULL,
  sha256        TEXT NOT NULL,
  prev_sha256   TEXT NOT NULL,
  file          TEXT NOT NULL,
  json          TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ckpt_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
)sql";

std::string ids_json(const std::vector<int64_t>& v) { return nlohmann::json(v).dump(); }
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }
std::vector<int64_t> ids_from(const std::string& s) {
  nlohmann::json j = nlohmann::json::parse(s, nullptr, false);
  if (!j.is_array()) return {};
  return j.get<std::vector<int64_t>>();
}

// The finding events of the rows of `s` (columns: id, kind, verdict, event time in ns, open as
// non-zero, last seen in ns), kind and verdict as clean text (store::Stmt::text).
std::vector<FindingEvent> read_events(store::Stmt& s) {
  std::vector<FindingEvent> out;
  while (s.step()) {
    FindingEvent e;
    e.id = s.i64(0);
    e.kind = s.text(1);
    e.verdict = s.text(2);
    e.event_ns = s.i64(3);
    e.open = s.i64(4) != 0;
    e.last_seen_ns = s.i64(5);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

CkptStore::CkptStore(std::unique_ptr<store::Db> db, bool tables)
    : db_(std::move(db)),
      tables_(tables),
      manifests_(tables_ && store::has_column(*db_, "ckpt_checkpoints", "manifest")) {}
CkptStore::~CkptStore() = default;

std::unique_ptr<CkptStore> CkptStore::open_writer(const std::string& path) {
  auto db = store::open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db->exec("PRAGMA journal_mode=WAL");
  db->exec(kTables);
  // Tables created by a scout before manifests: the column is added (old rows: none recorded).
  if (!store::has_column(*db, "ckpt_checkpoints", "manifest"))
    db->exec("ALTER TABLE ckpt_checkpoints ADD COLUMN manifest TEXT NOT NULL DEFAULT ''");
  return std::unique_ptr<CkptStore>(new CkptStore(std::move(db), true));
}

std::unique_ptr<CkptStore> CkptStore::open_reader(const std::string& path) {
  auto db = store::open_reader_db(path);
  const bool tables = db->query_int("SELECT count(*) FROM sqlite_master WHERE name='ckpt_checkpoints'") > 0;
  return std::unique_ptr<CkptStore>(new CkptStore(std::move(db), tables));
}

std::vector<Checkpoint> CkptStore::checkpoints() const {
  std::vector<Checkpoint> out;
  if (!tables_) return out;
  store::Stmt s(
      *db_, std::string("SELECT id, path, framework, step, completed_ns, discovered_ns, state, reason, finding_ids, "
                        "cycles, decided_ns, ") +
                (manifests_ ? "manifest" : "''") + " FROM ckpt_checkpoints ORDER BY id");
  while (s.step()) {
    Checkpoint c;
    c.id = s.i64(0);
    c.path = s.str(1);
    c.framework = s.str(2);
    c.step = s.i64(3);
    c.completed_ns = s.i64(4);
    c.discovered_ns = s.i64(5);
    c.state = state_from_string(s.str(6)).value_or(State::kCandidate);
    c.reason = s.str(7);
    c.finding_ids = ids_from(s.str(8));
    c.cycles = ids_from(s.str(9));
    c.decided_ns = s.i64(10);
    const std::string m = s.str(11);
    if (!m.empty()) c.manifest = manifest_from_json(nlohmann::json::parse(m, nullptr, false));
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CycleVerdict> CkptStore::cycles() const {
  std::vector<CycleVerdict> out;
  if (!tables_) return out;
  store::Stmt s(*db_, "SELECT verdict FROM ckpt_cycles ORDER BY idx");
  while (s.step()) out.push_back(cycle_from_json(nlohmann::json::parse(s.str(0), nullptr, false)));
  return out;
}

std::vector<FindingEvent> CkptStore::finding_events() const {
  if (!tables_) return {};
  store::Stmt s(*db_, "SELECT id, kind, verdict, event_ns, open, last_seen_ns FROM ckpt_findings ORDER BY id");
  return read_events(s);
}

std::vector<FindingEvent> CkptStore::store_finding_events() const {
  if (!store::has_table(*db_, "findings")) return {};
  store::Stmt s(*db_,
                "SELECT id, kind, verdict, first_seen_ns, status = 'open', last_seen_ns FROM findings "
                "WHERE kind IN ('sdc', 'nan', 'desync') ORDER BY id");
  return read_events(s);
}

std::vector<CertificateRow> CkptStore::certificates() const {
  std::vector<CertificateRow> out;
  if (!tables_) return out;
  store::Stmt s(*db_, "SELECT seq, checkpoint_id, sha256, prev_sha256, file, json FROM ckpt_certificates ORDER BY seq");
  while (s.step()) {
    CertificateRow r;
    r.seq = s.i64(0);
    r.checkpoint_id = s.i64(1);
    r.sha256 = s.str(2);
    r.prev_sha256 = s.str(3);
    r.file = s.str(4);
    r.json = s.str(5);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<std::string> CkptStore::meta(const std::string& key) const {
  if (!tables_) return std::nullopt;
  store::Stmt s(*db_, "SELECT value FROM ckpt_meta WHERE key = ?");
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  return s.str(0);
}

void CkptStore::begin() { db_->exec("BEGIN IMMEDIATE"); }
void CkptStore::commit() { db_->exec("COMMIT"); }
void CkptStore::rollback() { db_->exec("ROLLBACK"); }

void CkptStore::put_checkpoint(Checkpoint* c) {
  store::Stmt s(*db_,
                c->id == 0
                    ? "INSERT INTO ckpt_checkpoints (path, framework, step, completed_ns, discovered_ns, state, "
                      "reason, finding_ids, cycles, decided_ns, manifest) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?12)"
                    : "UPDATE ckpt_checkpoints SET path=?1, framework=?2, step=?3, completed_ns=?4, "
                      "discovered_ns=?5, state=?6, reason=?7, finding_ids=?8, cycles=?9, decided_ns=?10, "
                      "manifest=?12 WHERE id=?11");
  s.bind(1, c->path).bind(2, c->framework).bind(3, c->step).bind(4, c->completed_ns).bind(5, c->discovered_ns);
  s.bind(6, to_string(c->state)).bind(7, c->reason).bind(8, ids_json(c->finding_ids)).bind(9, ids_json(c->cycles));
  s.bind(10, c->decided_ns);
  if (c->id != 0) s.bind(11, c->id);
  s.bind(12, c->manifest.present ? dump(to_json(c->manifest)) : std::string());
  s.run();
  if (c->id == 0) c->id = db_->last_insert_rowid();
}

void CkptStore::put_cycle(const CycleVerdict& v) {
  store::Stmt s(*db_, "INSERT OR REPLACE INTO ckpt_cycles (idx, status, verdict) VALUES (?1, ?2, ?3)");
  s.bind(1, v.index).bind(2, to_string(v.status)).bind(3, dump(to_json(v)));
  s.run();
}

void CkptStore::put_finding_event(const FindingEvent& e) {
  store::Stmt s(*db_,
                "INSERT OR REPLACE INTO ckpt_findings (id, kind, verdict, event_ns, open, last_seen_ns) "
                "VALUES (?1,?2,?3,?4,?5,?6)");
  s.bind(1, e.id)
      .bind(2, e.kind)
      .bind(3, e.verdict)
      .bind(4, e.event_ns)
      .bind(5, int64_t(e.open))
      .bind(6, e.last_seen_ns);
  s.run();
}

void CkptStore::put_certificate(const CertificateRow& r) {
  store::Stmt s(*db_,
                "INSERT INTO ckpt_certificates (seq, checkpoint_id, sha256, prev_sha256, file, json) "
                "VALUES (?1,?2,?3,?4,?5,?6)");
  s.bind(1, r.seq).bind(2, r.checkpoint_id).bind(3, r.sha256).bind(4, r.prev_sha256).bind(5, r.file).bind(6, r.json);
  s.run();
}

void CkptStore::put_meta(const std::string& key, const std::string& value) {
  store::Stmt s(*db_, "INSERT OR REPLACE INTO ckpt_meta (key, value) VALUES (?1, ?2)");
  s.bind(1, key).bind(2, value);
  s.run();
}

}  // namespace scout::ckpt
