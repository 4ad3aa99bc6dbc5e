// Descriptors shared by the fingerprint engine (host) and the GPU kernel (device): a plan of up
// to kMaxJobs buffers hashed by one kernel launch, its results and its scratch. Plain structs,
// host and device agree on their layout (static_asserts below; both sides are LP64).
//
// Memory: FpPlan and FpResult live in pinned, device-mapped host memory (the host writes plans
// and reads results without any CUDA call); FpPlanScratch and FpJobScratch live in device memory
// and are reset by the kernel itself after use, so a pool slot can be reused without a memset.
#pragma once

#include <cstdint>

#include "plugin/gpu/fp_params.h"

namespace scout::fp::gpu {

constexpr uint32_t kMaxJobs = 8;          // buffers per plan (collectives of one NCCL kernel plan)
constexpr uint32_t kThreadsPerCta = 256;  // 8 warps, each hashing its own work items
constexpr uint32_t kWarpsPerCta = kThreadsPerCta / 32;
constexpr uint32_t kLeafGroups = kFanout;  // leaves of one tile: one level-1 node of the tree
// A warp's work item: 16 consecutive leaves of one job, two threads per leaf (XXH64 lanes 0-1 and
// 2-3), 4 items per tile (docs/fingerprint.md, "GPU kernel").
constexpr uint32_t kWarpLeaves = 16;
constexpr uint32_t kTileItems = kLeafGroups / kWarpLeaves;
// CTAs per SM the kernel is built for (__launch_bounds__): 4 x 256 threads at <= 64 registers.
constexpr uint32_t kCtasPerSm = 4;

// FpPlan::ready values (host -> GPU).
constexpr uint32_t kPlanNotReady = 0;
constexpr uint32_t kPlanReady = 1;  // jobs[0..njobs) are final
// FpPlan::abandoned (GPU -> host): the kernel stopped waiting before the plan was ready.
constexpr uint32_t kPlanAbandoned = 1;
// FpPlanScratch::decision: what every CTA of the launch does. The first CTA to arrive moves it
// from None to Claimed and becomes the launch's leader: it alone reads the plan in host memory,
// copies the jobs into FpPlanScratch and publishes Run (or Timeout).
constexpr uint32_t kDecisionNone = 0;
constexpr uint32_t kDecisionRun = 1;
constexpr uint32_t kDecisionTimeout = 2;
constexpr uint32_t kDecisionClaimed = 3;
// FpResult::status (GPU -> host), written last with a system-scope fence before it.
constexpr uint32_t kResultRunning = 0;
constexpr uint32_t kResultDone = 1;

// One buffer to hash (docs/fingerprint.md, "Definition" and "Capped fingerprints").
struct FpJob {
  uint64_t buf;        // device address of the first byte
  uint64_t len;        // bytes
  uint64_t max_bytes;  // byte cap (SCOUT_FP_MAX_BYTES)
  uint64_t selector;   // op_selector(...) for capped subsets
  uint64_t result;     // device address of this job's FpResult
  uint64_t scratch;    // device address of this job's FpJobScratch
  uint64_t scratch_leaves;  // leaves the scratch slot was sized for (scratch_bytes(); >= the job's)
  uint32_t kind;       // FloatKind for NaN/Inf counting
  uint32_t seq;        // echoed into FpResult::seq (the host checks it)
};
static_assert(sizeof(FpJob) == 64);

struct FpPlan {
  uint32_t ready;      // kPlanNotReady / kPlanReady (host stores with release)
  uint32_t njobs;      // valid when ready
  uint32_t wait;       // 1: the kernel was launched before the plan was ready (send hashes)
  uint32_t abandoned;  // kPlanAbandoned when the kernel timed out waiting
  uint32_t finished;   // 1 once every CTA of the launch has exited (plan slot reusable)
  uint32_t pad;
  uint64_t timeout_ns;  // how long the kernel waits for ready (%globaltimer ns)
  FpJob jobs[kMaxJobs];
};
static_assert(sizeof(FpPlan) == 32 + 64 * kMaxJobs);

struct FpResult {
  uint64_t value;   // the fingerprint
  uint64_t nan;     // NaN elements in the hashed blocks
  uint64_t inf;     // Inf elements
  uint64_t bytes;   // bytes hashed
  uint64_t gpu_ns;  // first tile start to root written (%globaltimer)
  uint32_t status;  // kResultRunning / kResultDone (written last)
  uint32_t seq;     // FpJob::seq
};
static_assert(sizeof(FpResult) == 48);

// Device scratch of one launch: the CTAs' common decision, the exit count, and the leader's
// device copy of the plan's jobs (every other CTA reads them from here, not from host memory).
struct FpPlanScratch {
  uint32_t decision;
  uint32_t exited;
  uint32_t njobs;
  uint32_t pad;
  FpJob jobs[kMaxJobs];
};
static_assert(sizeof(FpPlanScratch) == 16 + 64 * kMaxJobs);

// Device scratch of one job: counters, then `words` laid out by scratch_layout().
struct FpJobScratch {
  uint32_t tiles_done;  // level-1 nodes written
  uint32_t pad;
  uint64_t nan;
  uint64_t inf;
  uint64_t bytes;
  uint64_t t_start_inv;  // ~(earliest item start, %globaltimer); 0 when idle (atomicMax)
  uint64_t words[1];
};
constexpr uint64_t kJobScratchHeaderBytes = 40;

// Where the parts of FpJobScratch::words are, in 64-bit words, for a slot sized for `capacity`
// leaves hashing a job of m <= capacity leaves: first one 32-bit item counter per tile of the
// capacity (a fixed place whatever the job, so a counter never lands on an older job's
// digests; each is back to 0 after its tile), then the m leaf digests, the level-1 nodes and
// the levels above.
struct ScratchLayout {
  uint64_t leaves;  // first leaf digest
  uint64_t level1;  // first level-1 node
  uint64_t end;     // words used
};
SCOUT_HD constexpr uint64_t tiles_of(uint64_t leaves) { return (leaves + kLeafGroups - 1) / kLeafGroups; }
SCOUT_HD constexpr uint64_t counter_words(uint64_t capacity) { return (tiles_of(capacity) + 1) / 2; }
SCOUT_HD constexpr ScratchLayout scratch_layout(uint64_t capacity, uint64_t m) {
  ScratchLayout l{0, 0, 0};
  l.leaves = counter_words(capacity);
  l.level1 = l.leaves + m;
  uint64_t total = 0;
  uint64_t n = tiles_of(m);
  while (n > 1) {
    total += n;
    n = (n + kLeafGroups - 1) / kLeafGroups;
  }
  l.end = l.level1 + total + 1;
  return l;
}

// 64-bit words of FpJobScratch::words for a slot of up to `max_leaves` hashed leaves.
inline constexpr uint64_t scratch_words(uint64_t max_leaves) { return scratch_layout(max_leaves, max_leaves).end; }

// Bytes of one FpJobScratch slot (rounded to 256 for alignment).
inline constexpr uint64_t scratch_bytes(uint64_t max_leaves) {
  uint64_t b = kJobScratchHeaderBytes + 8 * scratch_words(max_leaves);
  return (b + 255) / 256 * 256;
}

// Work items (warp x 16 leaves) of a job of m hashed leaves.
SCOUT_HD constexpr uint64_t job_items(uint64_t m) { return (m + kWarpLeaves - 1) / kWarpLeaves; }

// CTAs for a launch with `items` work items on a GPU of `sm_count` SMs: one warp per item, at
// most kCtasPerSm CTAs per SM (the rest are taken grid-stride), at least 1.
inline uint32_t grid_for_items(uint64_t items, int sm_count) {
  const uint64_t ctas = (items + kWarpsPerCta - 1) / kWarpsPerCta;
  const uint64_t max_grid = uint64_t(sm_count > 0 ? sm_count : 1) * kCtasPerSm;
  return uint32_t(ctas == 0 ? 1 : (ctas < max_grid ? ctas : max_grid));
}

}  // namespace scout::fp::gpu
