// Where the observer puts what it knows. The SQLite store (observer/store) implements this for
// the real observer; tests use an in-memory implementation. Contract between the observer's
// analysis (producer) and the store (consumer). Calls come from one thread; flush() ends a batch
// (the store writes each batch in one transaction).
#pragma once

#include <vector>

#include "observer/model/finding.h"
#include "observer/model/job.h"
#include "observer/model/replay_cycle.h"

namespace scout::obs {

class Sink {
 public:
  virtual ~Sink() = default;
  // Job header (replaces the previous one).
  virtual void put_job(const JobInfo& job) = 0;
  // Rank identities and states, keyed by (host, pid); replaces rows with the same key.
  virtual void put_ranks(const std::vector<RankInfo>& ranks) = 0;
  // Communicators, keyed by (comm_hash, nranks); replaces rows with the same key (a CommInfo
  // with members false updates only the progress fields of the stored row).
  virtual void put_comms(const std::vector<CommInfo>& comms) = 0;
  // Per-collective summaries and per-rank timings of operations that finished (or were judged);
  // keyed by (comm_hash, kind, func, seq) / plus global_rank; replaces rows with the same key.
  // The store keeps a bounded history (oldest dropped first).
  virtual void put_ops(const std::vector<OpSummary>& ops, const std::vector<OpRankTiming>& timings) = 0;
  // Point-to-point pairs that changed since the last call (their totals so far); replaces the
  // stored rows of those pairs (keyed by comm_hash, nranks, src_rank, dst_rank). Default: ignored.
  virtual void put_p2p(const std::vector<P2pPairInfo>& pairs) {}
  // GEMM capture state and shape classes of the processes whose capture changed since the last
  // call; replaces the rows of those processes (keyed by host, pid). Default: ignored (sinks
  // that do not keep GEMM shapes).
  virtual void put_gemm(const std::vector<GemmCaptureInfo>& capture, const std::vector<GemmShapeInfo>& shapes) {}
  // Inserts a finding or, when a stored finding has the same dedup_key, updates it (suspects,
  // last_seen_ns, status, evidence, summary; first_seen_ns and id are kept). Sets f->id.
  virtual void upsert_finding(Finding* f) = 0;
  // Stores one finished replay cycle (docs/replay.md); sets c->id. Sinks without a place for
  // replay cycles ignore them.
  virtual void put_replay_cycle(ReplayCycleRecord* c) { (void)c; }
  // Ends a batch. False when it could not be stored (the store rolled it back): the caller puts
  // again, at its next batch, what it had put in this one.
  virtual bool flush() = 0;
};

}  // namespace scout::obs
