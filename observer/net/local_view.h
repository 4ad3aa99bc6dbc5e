// What the network layer needs from the node-local core (observer/ingest, observer/detect): the
// communicators with ranks on more than one node, per (communicator, function) stream, and the
// per-rank detail of single operations for digests and drill-downs. The core implements
// LocalView over what it read from shared memory; tests implement it over synthetic data.
// All times are this node's CLOCK_REALTIME ns (the network layer converts them to the leader's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scout::net {

// One local rank's part of one collective.
struct RankOpView {
  int comm_rank = -1;
  int global_rank = -1;
  // Hash of what every rank of the communicator must agree on for this key: func, datatype,
  // count, root, reduction op where known (design brief section 4). Equal inputs, equal hash.
  uint64_t meta = 0;
  // Receive-buffer fingerprint when the function's output must agree on every rank (AllReduce,
  // AllGather, Broadcast) and it was computed; 0 otherwise (not sampled, skipped, not compared).
  uint64_t fp_recv = 0;
  int64_t arrival_ns = 0;  // GPU start; 0 if unknown
  int64_t end_ns = 0;      // GPU end; 0 if unknown
};

// One local rank's progress in one stream (for hang drill-downs).
struct RankProgressView {
  int comm_rank = -1;
  int global_rank = -1;
  uint64_t enqueued = 0;    // ops of this stream enqueued (highest seqNumber + 1)
  uint64_t started = 0;     // ops started on the GPU
  uint64_t completed = 0;   // ops complete (KernelCh stopped on every channel)
  int64_t last_event_ns = 0;
};

// One stream: the collectives of one function on one communicator, numbered by NCCL's
// seqNumber (matching key (commHash, func, seqNumber), design brief section 2).
struct StreamView {
  uint64_t comm_hash = 0;
  uint8_t func = 0;           // scout::shm::Func, 0..4
  int nranks = 0;
  std::string comm_name;
  uint64_t completed = 0;     // min over the local ranks: ops with seq < completed are complete
  uint64_t enqueued = 0;      // max over the local ranks of ops enqueued
  std::vector<RankProgressView> ranks;  // the local ranks of the communicator
};

// Who a global rank is (for suspects).
struct RankIdentity {
  int global_rank = -1;
  std::string host;
  int pid = 0;
  std::string gpu;
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
};

}  // namespace scout::net
