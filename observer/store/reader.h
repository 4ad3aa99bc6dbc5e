// Read side of the store, for the scout CLI and tests. Opens read-only; the observer may keep
// writing (WAL mode). All reads see one snapshot: the state committed when the reader was
// opened or last refresh()ed. Schema and units: docs/store.md. Every string it returns is valid
// UTF-8 (bytes that are not become U+FFFD, Stmt::text), whatever the file holds, so every output
// of the CLI is text.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "observer/model/job.h"
#include "observer/model/replay_cycle.h"

namespace scout::store {

class Db;

// One stored operation: its row id (history order: first stored first) and its summary.
struct OpRow {
  int64_t op_id = 0;
  obs::OpSummary op;
};

// One per-rank timing with the row id of its operation.
struct TimingRow {
  int64_t op_id = 0;
  obs::OpRankTiming t;
};

// Filters of `scout report` (every set field must match).
struct OpFilter {
  std::optional<uint64_t> comm_hash;     // --comm 0x... (exact commHash)
  std::optional<std::string> comm_name;  // --comm NAME (exact name)
  std::optional<int> global_rank;        // --rank R: operations with a timing of rank R
  std::optional<std::string> func;       // --func F, case-insensitive ("allreduce" = "AllReduce")
  int64_t last = 0;                      // --last N: only the N latest after filtering (0 = all)
};

struct FindingFilter {
  bool open_only = false;
};

// Store-wide facts from the meta table.
struct StoreMeta {
  int schema_version = 0;
  std::string created_by;  // "scout <version>" of the writer that created the file
  int64_t created_ns = 0;
  uint64_t ops_dropped = 0;  // operations deleted by the history bound so far
};

class StoreReader {
 public:
  // Opens `path` read-only and checks its schema. Throws store::Error with one line: "no store
  // at PATH" (missing file), "PATH is not a scout store", or "store PATH has schema version N;
  // this scout reads up to version M (use a newer scout)".
  static std::unique_ptr<StoreReader> open(const std::string& path);
  ~StoreReader();

  // Starts a new snapshot (sees everything committed so far).
  void refresh();

  // Everything below throws store::Error on an SQLite failure.
  StoreMeta meta();
  std::optional<obs::JobInfo> job();
  // Ordered by global_rank, then host, pid.
  std::vector<obs::RankInfo> ranks();
  // Ordered by name, then comm_hash, nranks.
  std::vector<obs::CommInfo> comms();
  // Point-to-point pairs (table p2p_pairs; empty for a store written before it), by communicator
  // name, hash, then (src_rank, dst_rank).
  std::vector<obs::P2pPairInfo> p2p_pairs();
  // GEMM capture state per process and the shape classes each ran (empty when the store has no
  // GEMM tables: written before them, or capture never on). Ordered by global rank, then shape.
  std::vector<obs::GemmCaptureInfo> gemm_capture();
  std::vector<obs::GemmShapeInfo> gemm_shapes();
  // Ordered by id. Findings carry their dedup_key.
  std::vector<obs::Finding> findings(const FindingFilter& filter = {});
  std::optional<obs::Finding> finding(int64_t id);
  // Ordered by time: first_arrival_ns, then comm_hash, func, seq, kind (operations that no rank
  // started sort first). With filter.last = N, the N latest of that order.
  std::vector<OpRow> ops(const OpFilter& filter = {});
  // Timings of the given operations, ordered by op_id then global_rank; all when op_ids empty.
  std::vector<TimingRow> timings(const std::vector<int64_t>& op_ids = {});
  uint64_t op_count();

  // Replay cycles (docs/replay.md, "Cycles in the store") that started in [from_ns, to_ns],
  // ordered by started_ns then id. A store written before replay existed has none.
  std::vector<obs::ReplayCycleRecord> replay_cycles(int64_t from_ns = 0, int64_t to_ns = INT64_MAX);
  // The replay cycle that covers time `t_ns`, for checkpoint certification: the cycle running at
  // t_ns (started_ns <= t_ns <= ended_ns; the latest such), else the first cycle that started
  // after t_ns; nullopt when there is none yet. "Did the replay cycle covering T pass" is
  // `c && c->outcome == "pass"`.
  std::optional<obs::ReplayCycleRecord> replay_cycle_covering(int64_t t_ns);

  const std::string& path() const;

 private:
  explicit StoreReader(std::unique_ptr<Db> db);
  // only_id != 0: just that finding.
  std::vector<obs::Finding> select_findings(bool open_only, int64_t only_id);
  std::vector<obs::ReplayCycleRecord> select_cycles(const std::string& where, int64_t a, int64_t b);
  std::unique_ptr<Db> db_;
  // findings.evidence_version exists (stores written before it have evidence version 1).
  bool has_evidence_version_ = true;
};

}  // namespace scout::store
