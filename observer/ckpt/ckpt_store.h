// Certification state in the observer's SQLite store (docs/store.md, "Certification tables"):
// checkpoints, judged check cycles, the findings that matter to certification, and the
// certificates' hashes. The observer writes through its own connection (WAL: the CLI reads
// meanwhile); everything needed to resume after a restart is here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "observer/ckpt/cycle.h"
#include "observer/ckpt/states.h"

namespace scout::store {
class Db;
}

namespace scout::ckpt {

struct CertificateRow {
  int64_t seq = 0;
  int64_t checkpoint_id = 0;
  std::string sha256, prev_sha256;
  std::string file;  // JSON file path
  std::string json;  // the document as issued
};

class CkptStore {
 public:
  // Opens the store at `path` for writing and creates the certification tables if missing.
  // Throws store::Error (one line) when it cannot.
  static std::unique_ptr<CkptStore> open_writer(const std::string& path);
  // Opens it read-only; a store without certification tables reads as empty.
  static std::unique_ptr<CkptStore> open_reader(const std::string& path);
  ~CkptStore();

  std::vector<Checkpoint> checkpoints() const;       // by id
  std::vector<CycleVerdict> cycles() const;          // by index
  std::vector<FindingEvent> finding_events() const;  // by id
  // The sdc, nan and desync findings of the store's findings table as events (event_ns: first
  // seen), whether or not the certifier noted them; empty for a store without that table.
  std::vector<FindingEvent> store_finding_events() const;
  std::vector<CertificateRow> certificates() const;  // by seq
  std::optional<std::string> meta(const std::string& key) const;

  void begin();
  void commit();
  void rollback();
  // Inserts (id 0: sets c->id) or updates by id.
  void put_checkpoint(Checkpoint* c);
  void put_cycle(const CycleVerdict& v);
  void put_finding_event(const FindingEvent& e);
  void put_certificate(const CertificateRow& r);
  void put_meta(const std::string& key, const std::string& value);

 private:
  explicit CkptStore(std::unique_ptr<store::Db> db, bool tables);
  std::unique_ptr<store::Db> db_;
  bool tables_ = true;
  bool manifests_ = true;  // ckpt_checkpoints has the manifest column (readers of older stores)
};

}  // namespace scout::ckpt
