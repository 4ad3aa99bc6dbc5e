// One rank of the emulated training job: creates its communicators the way a 3-D parallel job
// does (world from the root unique id, then TP, DP, PP and EP by ncclCommSplit of world), runs
// the training steps of workload.h through NcclApi, and destroys the communicators. Usable in a
// worker process (rank_main) or on a thread of an in-process test.
#pragma once

#include <memory>
#include <vector>

#include "test/sim/communicator.h"
#include "test/sim/nccl_api.h"
#include "test/sim/rank_context.h"

namespace scout::sim {

class RankJob {
 public:
  explicit RankJob(RankContext* rc);
  ~RankJob();

  // ncclCommInitRank(world) then ncclCommSplit per kind, in Layout::comms() order. Each init
  // waits for the communicator's other members.
  void init_comms(abi::Logger logger);
  // Runs step `step` (workload.h) and waits for its kernels (the optimizer's synchronization).
  void run_step(int64_t step);
  // All --steps steps, with --step-ms of compute after each.
  void run_steps();
  // ncclCommDestroy of every communicator (reverse creation order).
  void destroy_comms();

  // This rank's communicator of `kind`, or nullptr (group of one rank).
  Communicator* comm(CommKind kind) const;
  NcclApi& api() { return api_; }

 private:
  // Writes this rank's emulated device state and the ground truth of hardware faults that start
  // at `step` (docs/scout-sim.md, "Hardware faults").
  void start_hardware_faults(int64_t step);
  float* buffer(std::vector<std::vector<float>>& pool, size_t index, uint64_t elems);

  RankContext* rc_;
  NcclApi api_;
  std::vector<std::unique_ptr<Communicator>> comms_;
  Communicator* by_kind_[kNumCommKinds] = {};
  std::vector<std::vector<float>> send_bufs_, recv_bufs_;
};

// Entry point of a worker process (scout-sim --worker-rank R): returns the exit status.
int rank_main(const SimOptions& o);

}  // namespace scout::sim
