// The ground-truth file: one JSON line per injected fault, appended by the rank that injects it
// (docs/scout-sim.md, "Ground truth"). Lines are written with one write() on an O_APPEND file,
// so lines of different ranks never interleave.
#pragma once

#include <cstdint>
#include <string>

#include "test/sim/nccl_types.h"
#include "test/sim/options.h"

namespace scout::sim {

// One injected fault. `comm_name`/`comm_hash`/`func`/`key` name the operation it hit, with the
// key the plugin records: NCCL's seqNumber for collectives, the per-(communicator, peer,
// direction) counter for Send/Recv (key_peer = the peer's comm rank).
struct TruthEvent {
  FaultKind kind = FaultKind::kSdc;
  int global_rank = -1;
  int peer = -1;  // slowlink: the other global rank
  std::string comm_name;
  uint64_t comm_hash = 0;
  int comm_nranks = 0;
  int comm_rank = -1;
  Func func = Func::kAllReduce;
  uint64_t key = 0;
  int key_peer = -1;  // Send/Recv: peer comm rank of the key
  int64_t step = -1;
  int64_t op = -1;      // rank-local operation index
  int64_t ms = 0;       // straggler / slowlink delay
  int64_t time_ns = 0;  // CLOCK_REALTIME of the injection
  std::string detail;   // extra JSON object members, e.g. "\"element\":5,\"bit\":22"
};

// JSON line (no trailing newline) of an event.
std::string truth_json(const TruthEvent& e);

class TruthWriter {
 public:
  // Appends to `path` (created if missing). An empty path writes nothing.
  explicit TruthWriter(const std::string& path);
  ~TruthWriter();
  TruthWriter(const TruthWriter&) = delete;
  TruthWriter& operator=(const TruthWriter&) = delete;
  // Appends one line; thread-safe; false if the write failed.
  bool write(const TruthEvent& e);
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace scout::sim
