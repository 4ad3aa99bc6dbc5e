// A synthetic 3-D parallel training job for the leader's scaling benchmark
// (test/bench/scale_bench.cc) and its test (test/observer/scale_test.cc).
//
// `nodes` nodes of 8 ranks (a multiple of 4 nodes). Megatron's rank order:
// global rank = (d * 4 + stage) * 8 + t, node = global rank / 8, with t the tensor-parallel index
// (TP 8, inside the node), stage the pipeline stage (PP 4, across 4 consecutive nodes) and d the
// data-parallel index (DP = nodes / 4, across nodes). Communicators:
//   tp<node>        the 8 ranks of one node (AllReduce);
//   pp<d*8+t>       the 4 stages of one pipeline (Send/Recv, comm rank = stage);
//   dp<stage*8+t>   one rank per model replica, DP ranks on DP nodes (AllReduce, AllGather; comm
//                   rank = d);
//   mp<d>           the 32 ranks of one model replica on 4 nodes (AllReduce, the gradient norm);
//   world           every rank (one Broadcast in step 0).
// One training step per `step_ns`; each rank runs its step in program order: the Broadcast (step 0
// only), tp_ops AllReduce, per microbatch forward Recv (stage > 0) and Send (stage < 3), per
// microbatch backward Recv (stage < 3) and Send (stage > 0), dp_ops AllReduce then dp_ops AllGather,
// mp_ops AllReduce. Every operation has a fixed place in the step (the same time on every rank that
// runs it), lasts 40 us on the GPU and completes.
//
// Faults: hang(g, S) makes rank g stop before its first DP AllReduce of step S; the job then
// blocks behind it (each rank stops in the first operation of step S some participant never
// reaches: a fixed point over the programs of step S, hang_positions()). corrupt(g, seq) makes
// rank g receive different bytes (receive fingerprint) in DP AllReduce #seq of its dp communicator.
//
// Records are generated on demand from (rank, operation), never stored: the leader's node writes
// them to shared memory (FakeJob, test/support/fake_job.h), the other nodes answer net::LocalView
// from them (Node).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/segment_reader.h"
#include "observer/net/local_view.h"
#include "test/support/fake_job.h"

namespace scout::testing {

struct ScaleShape {
  int tp_ops = 128;        // TP AllReduce per step
  int microbatches = 4;    // pipeline Send/Recv pairs per direction per step
  int dp_ops = 4;          // DP AllReduce per step, and as many AllGather
  int mp_ops = 1;          // model-parallel AllReduce per step
  int64_t step_ns = kSec;  // one training step
};

class ScaleJob {
 public:
  static constexpr int kTp = 8;  // ranks per node
  static constexpr int kPp = 4;  // pipeline stages
  enum class Kind : uint8_t { kTp, kPp, kDp, kMp, kWorld };
  struct CommDef {
    Kind kind;
    int index;  // node (tp), d*8+t (pp), stage*8+t (dp), d (mp), 0 (world)
    uint64_t hash;
    int nranks;
    int nnodes;
    std::string name;
  };
  // One operation of a rank's program: what the plugin records, where and when.
  struct JobOp {
    int comm = -1;  // index into comms()
    OpSpec spec;    // kind, func, key (seqNumber or p2p counter), datatype, count, peer, enqueue time
    int64_t gpu_start_ns = 0, gpu_end_ns = 0;
  };

  explicit ScaleJob(int nodes, ScaleShape shape = {});

  int nodes() const { return nodes_; }
  int ranks() const { return nodes_ * kTp; }
  int dp() const { return nodes_ / kPp; }
  const ScaleShape& shape() const { return shape_; }
  const std::vector<CommDef>& comms() const { return comms_; }
  // Communicator index by hash, -1 if none.
  int comm_by_hash(uint64_t hash) const;
  // The communicators of global rank g, each with g's comm rank, in the order tp, pp, dp, mp, world.
  std::vector<std::pair<int, int>> comms_of(int g) const;
  int comm_rank(int comm, int g) const;
  int global_rank(int comm, int comm_rank) const;
  std::string host(int node) const { return "node" + std::to_string(node); }
  int pid(int g) const { return FakeJob::kPidBase + g; }
  std::string gpu(int g) const { return "GPU-" + std::to_string(g); }

  // Program of rank g in step s (in order).
  std::vector<JobOp> program(int g, int64_t s) const;
  // The record the plugin writes for `op` of rank g, as the observer reads it from a FakeJob
  // segment (FakeJob::enqueue/start/complete/fp_recv), in `state` (Running or Complete).
  shm::RecordSnapshot record(int g, const JobOp& op, uint32_t state) const;
  // Receive fingerprint rank g gets in `op` (0: none for that function).
  uint64_t fp_recv(int g, const JobOp& op) const;
  // Start time of step s.
  int64_t step_start(int64_t s) const { return kT0 + s * shape_.step_ns; }
  // Operations of (communicator kind, func) per step (world Broadcast: 1 in step 0 only).
  int per_step(Kind k, uint8_t func) const;

  // Faults (before any record is generated).
  void hang(int g, int64_t step);
  void corrupt(int g, uint64_t dp_allreduce_seq) {
    sdc_rank_ = g;
    sdc_seq_ = dp_allreduce_seq;
  }
  int hang_rank() const { return hang_rank_; }
  int64_t hang_step() const { return hang_step_; }
  // Per global rank, how far it gets in the hang step: ops [0, pos) complete, op pos in flight
  // (Running) unless the rank is the stopped one. Computed on first use (every rank's program of
  // the hang step; O(ranks x ops per step) time, transient memory for the arrival counts).
  const std::vector<int>& hang_positions() const;
  // Positions for ranks [first, first + n) without computing them here (the benchmark computes them
  // in one process and hands the leader's to the other).
  void set_hang_positions(std::vector<int> pos) { hang_pos_ = std::move(pos); }

  // The operations rank g has reached by time t, in program order, each with its state: every
  // operation whose enqueue time has passed, up to the hang position in the hang step (Running there).
  struct Reached {
    JobOp op;
    uint32_t state;
  };
  // Ops of step s that rank g has reached by time t.
  void reached(int g, int64_t s, int64_t t, std::vector<Reached>* out) const;
  // The step rank g is in at time t (the hang step once it is stuck there).
  int64_t step_at(int64_t t) const;

  // One node's observer as the network sees it (net::LocalView) at the time set with set_time.
  class Node : public net::LocalView {
   public:
    Node(const ScaleJob* job, int node) : job_(job), node_(node) {}
    void set_time(int64_t t_ns) { t_.store(t_ns); }
    std::vector<net::StreamView> streams() override;
    bool op(uint64_t comm_hash, uint8_t func, uint64_t seq, std::vector<net::RankOpView>* out) override;
    net::RankIdentity identity(int global_rank) override;
    // Built as the node's observer does (capture_waits over a Model of its ranks' records of the
    // current and the previous step).
    net::WaitSnapshot wait_snapshot() override;

   private:
    const ScaleJob* job_;
    int node_;
    std::atomic<int64_t> t_{0};
  };

  // Counters of rank g in (comm, func) at time t: operations issued and completed.
  void counters(int g, int comm, uint8_t func, int64_t t, uint64_t* issued, uint64_t* completed) const;
  // Operation #seq of (comm, func) on rank g (false if g does not run it).
  bool find_op(int g, int comm, uint8_t func, uint64_t seq, JobOp* out) const;

 private:
  uint64_t stage_slot(int64_t s, int slot) const;
  int node_of(int g) const { return g / kTp; }

  int nodes_;
  ScaleShape shape_;
  int slots_ = 0;  // fixed places per step
  std::vector<CommDef> comms_;
  std::unordered_map<uint64_t, int> by_hash_;
  int hang_rank_ = -1;
  int64_t hang_step_ = -1;
  int sdc_rank_ = -1;
  uint64_t sdc_seq_ = 0;
  mutable std::vector<int> hang_pos_;
};

}  // namespace scout::testing
