// Host replay of the fingerprint kernel's thread mapping (plugin/gpu/fp_kernel.cu): the same
// FpPlan/FpJob descriptors, the same work items of 16 leaves x 2 threads, the same per-thread
// calls into fp_warp.h / fp_hash.h, the same scratch protocol (leaf digests, per-tile item
// counters, the level-1 node by the tile's last warp, the job's last warp finishing, resets).
// Used by the fake GPU backend in tests and by tests that compare the decomposition with the
// CPU reference. Device addresses are host addresses here.
#pragma once

#include <cstdint>

#include "plugin/gpu/fp_job.h"

namespace scout::fp::gpu {

// Outcome of emulate_launch.
enum class EmuOutcome {
  kRan,       // the plan was ready: every job hashed, results written
  kWaiting,   // the plan has wait=1 and is not ready: a real launch would still be spinning
  kTimedOut,  // the plan was not ready and `timed_out` was passed: abandoned like the kernel does
};

// Runs one launch of `grid` CTAs over `plan` with launch scratch `ps`. Work items complete warp
// by warp (each warp's grid-stride items in order) when `order_seed` is 0, else in an order
// shuffled with that seed (any order a real launch could finish them in). With `timed_out` a
// not-ready waiting plan is abandoned (the kernel's timeout path). `gpu_ns_per_job` is written
// as each job's FpResult::gpu_ns (tests drive the budget with it).
EmuOutcome emulate_launch(FpPlan* plan, FpPlanScratch* ps, uint32_t grid, bool timed_out, uint64_t gpu_ns_per_job,
                          uint64_t order_seed = 0);

}  // namespace scout::fp::gpu
