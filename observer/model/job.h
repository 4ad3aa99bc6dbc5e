// What the observer knows about a job, in the shape the store keeps and the CLI shows.
//
// Contract between the observer (producer: observer/ingest, observer/detect), the store
// (observer/store) and the CLI (observer/cli). All times are CLOCK_REALTIME ns of the observer's
// clock (cross-node values are already corrected by the estimated clock offset).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/gemm_key.h"

namespace scout::obs {

// One training process (one segment).
struct RankInfo {
  int global_rank = -1;
  int local_rank = -1;
  std::string host;
  int pid = 0;
  std::string gpu;  // GPU UUID or SCOUT_GPU, "" if unknown
  int cuda_dev = -1;
  int node_rank = 0;    // observer node that owns the segment
  std::string segment;  // segment path on that node
  std::string state;    // "running", "exited" (owner gone, segment closed), "dead"
  int64_t first_seen_ns = 0;
  int64_t last_event_ns = 0;  // latest callback of any kind
  bool operator==(const RankInfo&) const = default;
};

// GEMM capture of one process (its segment's GEMM shape table header, docs/record-format.md).
struct GemmCaptureInfo {
  int global_rank = -1;
  std::string host;
  int pid = 0;
  uint32_t state = 0;  // shm::GemmCaptureState
  uint32_t capacity = 0, n_entries = 0;
  uint64_t windows = 0, lines = 0, captured = 0, ignored = 0, malformed = 0;
  uint64_t dropped_full = 0, dropped_busy = 0, window_ns = 0;
};

// One GEMM shape class one process ran, with its count.
struct GemmShapeInfo {
  int global_rank = -1;
  std::string host;
  int pid = 0;
  shm::GemmKey key;
  uint64_t count = 0;
};

// One communicator (identified by commHash and nranks; names may repeat).
struct CommInfo {
  uint64_t comm_hash = 0;
  std::string name;
  int nranks = 0;
  int nnodes = 0;
  // true: name, nnodes and global_ranks are given. false: only the progress fields below changed
  // since the communicator was last put; the Sink keeps its stored name, nnodes and global_ranks
  // (a communicator of 16,384 ranks is not rewritten each pass for a new last_progress_ns).
  bool members = true;
  std::vector<int> global_ranks;           // index = comm rank; -1 where not known yet
  uint64_t ops_complete = 0;               // operations complete on every rank (collectives and p2p)
  uint64_t p2p_complete = 0;               // of which point-to-point (a send and its receive)
  uint64_t last_seq[5] = {0, 0, 0, 0, 0};  // highest completed seqNumber+1 per func (NCCL order)
  int64_t last_progress_ns = 0;            // last time any rank completed an operation
  std::string state;                       // "active", "stalled", "hung", "finalized"
};

// The point-to-point operations of one directed pair of a communicator, summed (table p2p_pairs,
// docs/store.md): a send and its matching receive, both complete, count once.
struct P2pPairInfo {
  uint64_t comm_hash = 0;
  int nranks = 0;
  std::string comm_name;
  int src_rank = -1, dst_rank = -1;      // comm ranks
  int src_global = -1, dst_global = -1;  // global ranks, -1 unknown
  uint64_t ops = 0;
  uint64_t bytes = 0;         // message bytes, summed
  uint64_t last_seq = 0;      // scout's p2p counter of the latest (docs/record-format.md)
  int64_t last_end_ns = 0;    // receive end of the latest
  int64_t total_ns = 0;       // transfer time summed: receive end - the later of the two starts
  int64_t max_ns = 0;         // the longest transfer
};

// One collective (or p2p pair) as the per-collective report shows it (key, func,
// datatype, bytes, algo/proto, per-rank arrival spread, duration, bus bandwidth, verdict).
struct OpSummary {
  uint64_t comm_hash = 0;
  std::string comm_name;
  int nranks = 0;
  std::string kind;      // "coll", "send", "recv", "unmatched"
  std::string func;      // "AllReduce", ...
  uint64_t seq = 0;      // NCCL seqNumber (coll) / scout p2p counter
  std::string datatype;  // "float32", ...
  uint64_t count = 0;    // elements as given to the API
  uint64_t bytes = 0;    // message bytes
  std::string algo;      // "RING", ...
  std::string proto;     // "SIMPLE", ...
  int n_channels = 0;
  int ranks_reported = 0;  // ranks whose record was seen
  int ranks_complete = 0;
  int64_t first_arrival_ns = 0;  // earliest GPU start across ranks
  int64_t last_arrival_ns = 0;   // latest GPU start across ranks
  int last_rank = -1;            // global rank that arrived last
  int64_t end_ns = 0;            // latest GPU end across ranks
  int64_t duration_ns = 0;       // end_ns - last_arrival_ns (the transfer once all arrived)
  double busbw_gbps = 0;         // bus bandwidth, GB/s, nccl-tests convention (docs/nccl-notes.md §5.1)
  std::string fp_verdict;        // "agree", "attributed", "inconclusive", "partial",
                                 // "not-sampled", "n/a" (function not compared)
  std::string meta_verdict;      // "agree", "attributed", "inconclusive", "partial"
};

// One rank's part of one operation (Chrome trace slices, `scout report --rank`).
struct OpRankTiming {
  uint64_t comm_hash = 0;
  std::string func;
  uint64_t seq = 0;
  int global_rank = -1;
  int comm_rank = -1;
  int64_t api_ns = 0;
  int64_t start_ns = 0;   // GPU start (wall clock)
  int64_t end_ns = 0;     // GPU end (0 if not complete)
  uint64_t fp_recv = 0;   // 0 if none
  std::string fp_status;  // "done", "none", "skipped-device", ...
};

// The observers' network as one observer last saw it, for `scout status` (docs/observer-network.md,
// "State in scout status"). Times are the observer's CLOCK_REALTIME ns.
struct NetState {
  bool present = false;       // written by an observer of a multi-node job (--nodes > 1)
  bool connected = false;     // a channel is formed now
  int peers = 0;              // other observers on it (nodes - 1 when connected)
  uint64_t epoch = 0;         // formation attempt of the current (or last) channel
  uint64_t rounds = 0;        // digest rounds completed, all channels
  uint64_t formed = 0;        // channels formed; re-forms = formed - 1
  uint64_t failures = 0;      // channels lost or not formed
  int64_t since_ns = 0;       // when `connected` last changed (0: never connected)
  int64_t last_round_ns = 0;  // when the last round completed (0: none yet)
  std::string rendezvous;     // file:DIR or redis:HOST:PORT
  std::string last_error;     // the most recent channel error, one line, "" if none
};

// Whether the observer could write its store (docs/store.md, "When writes fail"). Written into
// the store once writes succeed again, and into the health file beside it meanwhile (the store
// itself cannot say that it cannot be written).
struct StoreHealth {
  uint64_t failed_batches = 0;     // passes whose writes failed (each retried at the next), cumulative
  uint64_t unstored_findings = 0;  // findings held in memory not stored yet (0 once a batch commits)
  uint64_t ops_unstored = 0;       // operation summaries of failed batches (not retried), cumulative
  int64_t failing_since_ns = 0;    // first failure of the current run of failures; 0 when writing works
  std::string last_error;          // the latest failure, one line
  int64_t updated_ns = 0;          // when this was last written
};

// Whole-job header (`scout status`).
struct JobInfo {
  std::string job;
  int nodes = 0;           // observers in the job
  int node_rank = 0;       // node that wrote this store
  int64_t started_ns = 0;  // observer start
  int64_t updated_ns = 0;  // last store update
  std::string observer_version;
  // Ingestion health (docs/observer.md, "Lost records"), cumulative since the observer started.
  uint64_t records_read = 0;      // records read from the segments
  uint64_t records_lost = 0;      // overwritten before this observer read them (also before it
                                  // attached) or before they were final: a finding may be missing
  uint64_t records_invalid = 0;   // rejected by validation or abandoned half-written
  uint64_t segments_refused = 0;  // files named like the job's segments that were not read now
  std::string warning;            // one line on what keeps the observer from seeing the job, or ""
  NetState net;                   // the observer network (multi-node jobs)
  StoreHealth store;              // store writes (filled by the store: the writer and readers)
  uint64_t rings_refused = 0;     // communicator rings refused: impossible headers or claims beyond
                                  // the rank-slot bounds (observer/model/limits.h)
};

}  // namespace scout::obs
