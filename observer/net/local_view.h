// What the network layer needs from the node-local core (observer/ingest, observer/detect): the
// communicators with ranks on more than one node, per (communicator, function) stream, the
// per-rank detail of single operations for digests and drill-downs, and, for hang drill-downs,
// a snapshot of what every local rank is waiting in. The core implements LocalView
// (observer/cluster/node_view.h); tests implement it over synthetic data.
// All times are this node's CLOCK_REALTIME ns (the network layer converts them to the leader's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/segment_reader.h"

namespace scout::net {

// One local rank's part of one collective.
struct RankOpView {
  int comm_rank = -1;
  int global_rank = -1;
  // Hash of what every rank of the communicator must agree on for this key: func, datatype,
  // count, root, reduction op where known (docs/observer.md#consensus). Equal inputs, equal hash.
  uint64_t meta = 0;
  // Receive-buffer fingerprint when the function's output must agree on every rank (AllReduce,
  // AllGather, Broadcast) and it was computed; 0 otherwise (not sampled, skipped, not compared).
  uint64_t fp_recv = 0;
  int64_t arrival_ns = 0;  // GPU start; 0 if unknown
  int64_t end_ns = 0;      // GPU end; 0 if unknown
  // Time since this rank's previous GPU operation (on any communicator) ended, at arrival: its
  // own compute and input time (observer.md, "Stragglers"); -1 if unknown.
  int64_t gap_ns = -1;
  // The record itself, for drill-downs: the leader judges it with the core's detectors.
  shm::RecordSnapshot rec;
};

// One local rank's progress in one stream.
struct RankProgressView {
  int comm_rank = -1;
  int global_rank = -1;
  uint64_t enqueued = 0;   // ops of this stream enqueued (highest seqNumber + 1)
  uint64_t started = 0;    // ops started on the GPU
  uint64_t completed = 0;  // ops complete (KernelCh stopped on every channel)
  int64_t last_event_ns = 0;
};

// One stream: the collectives of one function on one communicator, numbered by NCCL's
// seqNumber (matching key (commHash, func, seqNumber), docs/record-format.md).
struct StreamView {
  uint64_t comm_hash = 0;
  uint8_t func = 0;  // scout::shm::Func, 0..4
  int nranks = 0;
  std::string comm_name;
  uint64_t completed = 0;               // ops with seq < completed are complete (and settled) on every local rank
  uint64_t enqueued = 0;                // max over the local ranks of ops enqueued
  std::vector<RankProgressView> ranks;  // the local ranks of the communicator
};

// Who a global rank is (for suspects).
struct RankIdentity {
  int global_rank = -1;
  std::string host;
  int pid = 0;
  std::string gpu;
};

// ---- hang drill-down: what the local ranks wait in (docs/observer.md#hangs) ----

// A training process as the node's observer knows it.
struct ProcView {
  int global_rank = -1;
  int local_rank = -1;
  std::string host;
  int pid = 0;
  std::string gpu;
  int cuda_dev = -1;
  uint8_t state = 0;          // obs::ProcState: 0 running, 1 exited, 2 dead
  int64_t last_event_ns = 0;  // latest plugin callback
  int64_t gone_ns = 0;        // when the observer saw it gone; 0 while alive
};

// An operation mark (obs::OpMark): class (0 coll, 1 p2p), func, seq, p2p ends, time.
struct MarkView {
  bool valid = false;
  uint8_t cls = 0, func = 0;
  uint64_t seq = 0;
  int32_t src = -1, dst = -1;
  int64_t ns = 0;
};

// One local member of a communicator: its progress and the records of the operations that are
// in flight on some local rank of the communicator (its own slot of each, if it has one).
struct MemberView {
  int comm_rank = -1;
  int proc = -1;  // index into WaitSnapshot::procs
  int64_t init_ns = 0;
  bool finalized = false;
  // Per numbered function (shm::Func, NCCL order): highest seqNumber issued / started /
  // completed + 1.
  uint64_t issued[shm::kNumNumberedFuncs] = {}, started[shm::kNumNumberedFuncs] = {},
           completed[shm::kNumNumberedFuncs] = {};
  MarkView last_enqueued, last_started, last_completed;
  std::vector<shm::RecordSnapshot> records;
};

struct CommWaitView {
  uint64_t comm_hash = 0;
  int nranks = 0;
  std::string name;
  int nnodes = 0;
  int64_t last_progress_ns = 0;     // latest progress this node saw in the communicator
  std::vector<MemberView> members;  // the local members
  // This node's stall rule for the communicator (docs/observer.md, "Stalls"): its threshold (ns; 0:
  // none known), and the number of gaps and their p99 (ns) it was computed from. The leader judges
  // a stall by the largest threshold any node has (docs/observer-network.md, "Hangs across nodes").
  int64_t stall_threshold_ns = 0;
  uint32_t stall_gaps = 0;
  int64_t stall_p99_ns = 0;
};

// Every communicator with a local member that is not finalized, with the local members' waits.
struct WaitSnapshot {
  std::vector<ProcView> procs;
  std::vector<CommWaitView> comms;
  bool empty() const { return comms.empty(); }
};

class LocalView {
 public:
  virtual ~LocalView() = default;
  // Streams of communicators with ranks on more than one node (node-local ones are decided
  // locally and never travel).
  virtual std::vector<StreamView> streams() = 0;
  // Per-local-rank detail of operation `seq` of a stream, in any order. False if the operation
  // is no longer retained (or never seen) on this node.
  virtual bool op(uint64_t comm_hash, uint8_t func, uint64_t seq, std::vector<RankOpView>* out) = 0;
  // Identity of a local global rank.
  virtual RankIdentity identity(int global_rank) = 0;
  // What the local ranks wait in now (hang drill-down). Default: nothing.
  virtual WaitSnapshot wait_snapshot() { return {}; }
  // True while a communicator on this node has waited without progress for longer than the
  // hang timeout (the node-local hang detector's "hung" state): asks for a hang drill-down.
  virtual bool locally_stalled() { return false; }
  // Stalls of communicators with ranks on other nodes past their stall threshold (docs/observer-
  // network.md, "Hangs across nodes"): `episodes` counts the stall episodes begun so far (each new
  // one asks for a hang drill-down), `now` is true while one lasts.
  struct Stalls {
    uint64_t episodes = 0;
    bool now = false;
  };
  virtual Stalls stalls() { return {}; }
};

}  // namespace scout::net
