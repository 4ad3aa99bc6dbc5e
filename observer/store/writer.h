// The observer's SQLite store: implements obs::Sink (observer/model/sink.h). One file per node
// (default path: common/paths.h), WAL mode so `scout` reads while the observer writes,
// one transaction per flush(). Schema and units: docs/store.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "observer/model/job.h"
#include "observer/model/sink.h"

namespace scout::store {

class Db;
class Stmt;
class HealthFile;

struct WriterOptions {
  // Operations kept (OpSummary rows, each with its per-rank timings); when a flush leaves more,
  // the oldest (first stored) are deleted and counted in meta('ops_dropped').
  // 0: SCOUT_STORE_MAX_OPS from the environment (config registry default when unset).
  int64_t max_ops = 0;
  // Receives the lines about failed writes: the first failure of a run of failures in full,
  // then at most one line a minute while they go on, and one line when writes succeed again
  // (the batch in progress is rolled back; what earlier flushes committed stays). Default: stderr.
  std::function<void(const std::string&)> on_error;
  // The job the writer writes. When not empty, an existing store whose job header names another
  // job is refused at open (never rewritten).
  std::string job;
};

// What the writer has done since it was opened.
struct WriterStats {
  uint64_t batches = 0;          // flush() calls that committed
  uint64_t failed_batches = 0;   // batches rolled back after an error
  uint64_t errors = 0;           // failed store operations (each reported through on_error)
  uint64_t ops_dropped = 0;      // operations deleted by the history bound
  uint64_t placeholder_ops = 0;  // timings that arrived without their summary (see put_ops)
};

class StoreWriter : public obs::Sink {
 public:
  // Opens or creates the store at `path` (its directory is created, mode 0700, if missing).
  // Returns nullptr with *error (one line) when the file is not a scout store, was written by a
  // newer schema, is damaged (check_integrity), belongs to another job (WriterOptions::job), or
  // cannot be opened/created.
  // *transient (when given): the failure may pass without anyone touching the file (a lock
  // held, a full disk, a read-only file system: store::Error::transient()).
  static std::unique_ptr<StoreWriter> open(const std::string& path, const WriterOptions& options, std::string* error,
                                           bool* transient = nullptr);
  ~StoreWriter() override;  // commits a pending batch

  void put_job(const obs::JobInfo& job) override;
  void put_ranks(const std::vector<obs::RankInfo>& ranks) override;
  // Upserts by (comm_hash, func, seq, kind); the row keeps its place in the history (first
  // store). A timing is attached to the operation with the same (comm_hash, func, seq); when
  // none is stored, a placeholder operation row is created (kind from func: "send", "recv" or
  // "coll"; other fields empty) so no timing is lost, and counted in placeholder_ops.
  void put_ops(const std::vector<obs::OpSummary>& ops, const std::vector<obs::OpRankTiming>& timings) override;
  // Sink semantics: same non-empty dedup_key -> update verdict, status, suspects, peer,
  // last_seen_ns, summary and evidence of the stored row (id, kind, comm, key and
  // first_seen_ns kept; f->id and f->first_seen_ns are set from the stored row). Empty
  // dedup_key and f->id naming a stored finding -> update that row the same way. Otherwise
  // insert. Sets f->id.
  void upsert_finding(obs::Finding* f) override;
  void put_replay_cycle(obs::ReplayCycleRecord* c) override;
  // Replaces the rows of these pairs (table p2p_pairs).
  void put_p2p(const std::vector<obs::P2pPairInfo>& pairs) override;
  void put_gemm(const std::vector<obs::GemmCaptureInfo>& capture,
                const std::vector<obs::GemmShapeInfo>& shapes) override;
  // A CommInfo with members false updates ops_complete, last_seq_*, last_progress_ns and state of
  // the stored row only (none is added if there is no row).
  void put_comms(const std::vector<obs::CommInfo>& comms) override;
  // Applies the history bound and commits the batch (one transaction); false when the batch, or
  // one of its calls, was rolled back (reported through on_error; the caller puts its findings
  // again at the next batch, obs::Sink). Keeps health() and the health file beside the store
  // (observer/store/health.h) current, and stores the failure counters in meta once a batch
  // commits again (docs/store.md, "When writes fail").
  bool flush() override;

  const WriterStats& stats() const { return stats_; }
  // Failures so far and now (unstored_findings: the findings of the last batch when it failed).
  const obs::StoreHealth& health() const { return health_; }
  // Adds the failures of the time before this writer could open (RetryingStore): counted in its
  // health and in meta at the next commit.
  void carry(const obs::StoreHealth& before);
  const std::string& path() const;

 private:
  StoreWriter(std::unique_ptr<Db> db, const WriterOptions& options);
  void begin();
  void fail(const std::string& what);
  // After a batch that failed / committed: health, health file, the lines said.
  void batch_failed(int64_t now_ns);
  void batch_stored(int64_t now_ns);
  void write_suspects(int64_t finding_id, const obs::Finding& f);

  std::unique_ptr<Db> db_;
  WriterOptions options_;
  WriterStats stats_;
  bool in_batch_ = false;
  bool batch_failed_ = false;  // a call since the last flush failed
  std::unique_ptr<HealthFile> health_file_;
  obs::StoreHealth health_;
  uint64_t findings_in_batch_ = 0, ops_in_batch_ = 0;
  uint64_t failed_stored_ = 0;  // health_.failed_batches as last committed to meta
  int64_t said_ns_ = 0;         // when the last "still failing" line was said
  std::string first_error_;     // the first failure of the current batch
  std::string begin_error_;     // this batch could not begin (not tried again until flush)
  int begin_code_ = 0;
};

}  // namespace scout::store
