// What every part of one emulated rank shares: options, layout, fabric, the profiler driver,
// NCCL's process-wide activation mask, the fault plan and the ground-truth writer. One per rank
// process (or per rank thread in the in-process tests).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>

#include "test/sim/fabric.h"
#include "test/sim/faults.h"
#include "test/sim/layout.h"
#include "test/sim/net_driver.h"
#include "test/sim/options.h"
#include "test/sim/profiler_driver.h"
#include "test/sim/truth.h"

namespace scout::sim {

struct RankContext {
  const SimOptions* opts = nullptr;
  const Layout* layout = nullptr;
  int global_rank = 0;
  Fabric* fabric = nullptr;
  const ProfilerDriver* prof = nullptr;
  const LoadedNet* net = nullptr;  // the net plugin (NCCL_NET_PLUGIN), or null: fabric only
  FaultPlan faults;
  TruthWriter* truth = nullptr;  // may be null (no ground truth)
  RankStatus* status = nullptr;  // may be null (in-process tests)
  // ncclProfilerEventMask: one int per process, its address passed to every init; the plugin
  // may change it at any time; NCCL reads it (relaxed) at every API call (docs/nccl-notes.md §0.6).
  int mask = 0;

  // True the first time it is called for `f` (one ground-truth line per timed fault).
  bool first_time(const FaultSpec* f) {
    std::lock_guard<std::mutex> lock(once_mu_);
    return once_.insert(f).second;
  }
  // Writes a ground-truth line if there is a writer.
  void write_truth(const TruthEvent& e) {
    if (truth) truth->write(e);
  }
  uint64_t load_mask() const { return static_cast<uint32_t>(__atomic_load_n(&mask, __ATOMIC_RELAXED)); }
  // The GPU id scout-sim gives global rank `g` ("GPU-sim-node<i>-<local rank>", docs/scout-sim.md).
  std::string gpu_of(int g) const;
  // Writes this rank's emulated device state (replay/emu_device.h) to
  // <SCOUT_SHM_DIR>/scout-emugpu.<job>.<gpu>.json; a failure is one line on stderr.
  void write_device(const replay::EmuDeviceState& s) const;

  // The rank's GPU runs its kernels one at a time in launch order, whatever their communicator
  // (one CUDA stream per rank, as when every collective follows the compute it depends on):
  // a proxy thread waits for its plan's turn before the kernel starts.
  uint64_t next_kernel() { return kernels_launched_++; }  // launching (user) thread only
  void kernel_turn(uint64_t seq) {
    std::unique_lock<std::mutex> lock(gpu_mu_);
    gpu_cv_.wait(lock, [&] { return kernels_done_ == seq; });
  }
  void kernel_done() {
    {
      std::lock_guard<std::mutex> lock(gpu_mu_);
      ++kernels_done_;
    }
    gpu_cv_.notify_all();
  }

 private:
  std::mutex once_mu_;
  std::set<const FaultSpec*> once_;
  uint64_t kernels_launched_ = 0;
  std::mutex gpu_mu_;
  std::condition_variable gpu_cv_;
  uint64_t kernels_done_ = 0;
};

}  // namespace scout::sim
