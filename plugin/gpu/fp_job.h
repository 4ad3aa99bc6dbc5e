// Descriptors shared by the fingerprint engine (host) and the GPU kernel (device): a plan of up
// to kMaxJobs buffers hashed by one kernel launch, its results and its scratch. Plain structs,
// host and device agree on their layout (static_asserts below; both sides are LP64).
//
// Memory: FpPlan and FpResult live in pinned, device-mapped host memory (the host writes plans
// and reads results without any CUDA call); FpPlanScratch and FpJobScratch live in device memory
// and are reset by the kernel itself after use, so a pool slot can be reused without a memset.
#pragma once

#include <cstdint>

namespace scout::fp::gpu {

constexpr uint32_t kMaxJobs = 8;          // buffers per plan (collectives of one NCCL kernel plan)
constexpr uint32_t kThreadsPerCta = 256;  // 64 leaf groups x 4 XXH64 lanes
constexpr uint32_t kLeafGroups = 64;      // = kFanout: one CTA tile builds one level-1 node

// FpPlan::ready values (host -> GPU).
constexpr uint32_t kPlanNotReady = 0;
constexpr uint32_t kPlanReady = 1;  // jobs[0..njobs) are final
// FpPlan::abandoned (GPU -> host): the kernel stopped waiting before the plan was ready.
constexpr uint32_t kPlanAbandoned = 1;
// FpPlanScratch::decision: what every CTA of the launch does.
constexpr uint32_t kDecisionNone = 0;
constexpr uint32_t kDecisionRun = 1;
constexpr uint32_t kDecisionTimeout = 2;
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
  uint32_t kind;       // FloatKind for NaN/Inf counting
  uint32_t seq;        // echoed into FpResult::seq (the host checks it)
};
static_assert(sizeof(FpJob) == 56);

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
static_assert(sizeof(FpPlan) == 32 + 56 * kMaxJobs);

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

// Device scratch of one launch: the CTAs' common decision and exit count.
struct FpPlanScratch {
  uint32_t decision;
  uint32_t exited;
};

// Device scratch of one job: counters, then the level-1 digests and the levels above them.
struct FpJobScratch {
  uint32_t tiles_done;
  uint32_t pad;
  uint64_t nan;
  uint64_t inf;
  uint64_t bytes;
  uint64_t t_start_inv;  // ~(earliest tile start, %globaltimer); 0 when idle (atomicMax)
  uint64_t digests[1];   // [level-1 count + levels above], see scratch_words()
};

// 64-bit words of FpJobScratch::digests for a buffer of up to `max_leaves` hashed leaves:
// level 1 has ceil(max_leaves / 64) nodes, each level above 1/64 of the one below.
inline constexpr uint64_t scratch_words(uint64_t max_leaves) {
  uint64_t total = 0;
  uint64_t n = (max_leaves + kLeafGroups - 1) / kLeafGroups;
  while (n > 1) {
    total += n;
    n = (n + kLeafGroups - 1) / kLeafGroups;
  }
  return total + 1;
}

// Bytes of one FpJobScratch slot (rounded to 256 for alignment).
inline constexpr uint64_t scratch_bytes(uint64_t max_leaves) {
  uint64_t b = 40 + 8 * scratch_words(max_leaves);
  return (b + 255) / 256 * 256;
}

}  // namespace scout::fp::gpu
