// Test helper: the plugin side of N training processes, emulated inside one test process.
//
// Each emulated process gets its own segment (SegmentWriter, then renamed to carry a fake pid so
// N segments can coexist), one ring per communicator it belongs to, and records written with the
// ring protocol exactly as the plugin writes them: claimed and published, then updated in place
// (Enqueued -> Running -> Complete, GPU times, fingerprint words). Every time is chosen by the
// test, so observer passes over these segments are deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/segment_writer.h"

namespace scout::testing {

// Base of the synthetic clock used by observer tests (2023-11-14 in CLOCK_REALTIME ns).
constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;

// One operation's identity fields on one rank.
struct OpSpec {
  uint8_t kind = shm::kKindColl;
  uint8_t func = shm::kFuncAllReduce;
  uint64_t key = 0;  // seqNumber (coll) or p2p counter
  uint8_t datatype = shm::kTypeFloat32;
  uint64_t count = 1024;
  int32_t peer = -1;       // root (coll) or peer comm rank (p2p)
  int64_t enqueue_ns = 0;  // also api_ns
  uint8_t n_channels = 2;
  uint32_t flags = 0;
};

// A record being written by an emulated rank.
struct FakeRec {
  shm::OpRecord* rec = nullptr;
  uint64_t index = 0;
};

// A whole collective on every rank of a communicator.
struct FakeColl {
  uint8_t func = shm::kFuncAllReduce;
  uint64_t seq = 0;
  uint64_t count = 1024;
  uint8_t datatype = shm::kTypeFloat32;
  int32_t root = -1;
  int64_t t0 = kT0;                // enqueue time on every rank
  std::vector<int64_t> start;      // GPU start per comm rank; empty: t0 + 10 us on all
  int64_t duration_ns = 100'000;   // GPU end = latest start + duration
  std::vector<uint64_t> fp_recv;   // receive fingerprint per comm rank; empty: none
  std::vector<uint64_t> counts;    // per comm rank API count overriding `count`; empty: none
  std::vector<uint32_t> send_nan;  // send-buffer NaN count per comm rank (sets a send fp)
};

class FakeJob {
 public:
  // Creates `nprocs` segments in `dir` for job `job` on `host` (process p has global rank p,
  // GPU "GPU-p" and fake pid kPidBase + p).
  // `first_rank` offsets global ranks and fake pids (a second FakeJob in the same directory can
  // emulate processes that start later).
  FakeJob(const std::string& dir, const std::string& job, int nprocs, const std::string& host = "node0",
          uint32_t ring_capacity = 256, uint32_t max_comms = 8, int first_rank = 0);
  ~FakeJob();

  static constexpr int kPidBase = 3'000'000;
  int pid(int proc) const { return kPidBase + first_rank_ + proc; }
  int nprocs() const { return int(segs_.size()); }
  const std::string& path(int proc) const { return paths_[proc]; }
  shm::SegmentHeader* header(int proc) const { return segs_[proc]->header(); }

  // Adds a communicator: comm rank i is process members[i]. Returns its index. For a communicator
  // with ranks elsewhere (other nodes), give `nranks` (> members.size()), the comm ranks of the
  // local members and NCCL's `nnodes`; records are then written per member index.
  int add_comm(uint64_t hash, const std::vector<int>& members, const std::string& name, int nranks = 0,
               const std::vector<int>& comm_ranks = {}, int nnodes = 1);
  uint64_t hash(int comm) const { return comms_[comm].hash; }
  int nranks(int comm) const { return int(comms_[comm].members.size()); }
  shm::RingWriter* ring(int comm, int rank) const { return comms_[comm].rings[rank]; }

  // Claims and publishes a record (state Enqueued) on comm rank `rank` of `comm`.
  FakeRec enqueue(int comm, int rank, const OpSpec& spec);
  // The GPU started it (state Running).
  static void start(const FakeRec& r, int64_t gpu_start_ns);
  // Every channel stopped (state Complete).
  static void complete(const FakeRec& r, int64_t gpu_end_ns);
  // Fingerprints: value written first, status word last (release), as the plugin does.
  static void fp_recv(const FakeRec& r, uint64_t value, uint32_t nan = 0, uint32_t inf = 0);
  static void fp_send(const FakeRec& r, uint64_t value, uint32_t nan = 0, uint32_t inf = 0);
  static void fp_pending(const FakeRec& r);

  // Writes a complete collective on every rank of `comm`.
  void collective(int comm, const FakeColl& c);
  // A matched send (comm rank src -> dst, counter k) and recv pair, complete.
  void p2p(int comm, int src, int dst, uint64_t k, int64_t t0, int64_t start, int64_t duration_ns,
           uint64_t bytes = 4096);

  // Emulated process death: the liveness function reports it gone. `finalized` also marks its
  // segment closed (a clean exit).
  void kill(int proc, bool finalized = false);
  bool alive(int pid) const;
  // Liveness function for ObserverOptions / IngestOptions.
  std::function<bool(int, uint64_t)> liveness() const;

 private:
  struct CommInfo {
    uint64_t hash;
    std::vector<int> members;
    std::vector<shm::RingWriter*> rings;
  };
  std::vector<std::unique_ptr<shm::SegmentWriter>> segs_;
  std::vector<std::string> paths_;
  std::vector<CommInfo> comms_;
  std::shared_ptr<std::set<int>> dead_;
  int first_rank_ = 0;
};

// Completes AllReduce #0..n-1 on every rank of `comm`, 10 ms apart from t (a communicator's
// progress history).
void history(FakeJob& job, int comm, int n, int64_t t = kT0);

// AllReduce #seq at kT0 + seq x 10 ms whose ranks (in comm rank order) receive the fingerprints
// `fp`, for FakeJob::collective.
FakeColl allreduce_with(uint64_t seq, std::vector<uint64_t> fp);

// Enqueues collective `func` #seq (OpSpec's defaults otherwise) on comm rank `rank` at time t and,
// unless `started` is false, starts it 10 us later. Returns the record, still running.
FakeRec op(FakeJob& job, int comm, int rank, uint8_t func, uint64_t seq, int64_t t, bool started = true);

}  // namespace scout::testing
