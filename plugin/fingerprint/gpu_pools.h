// Per-CUDA-context resources of the fingerprint engine, allocated once when the first
// communicator of a context is initialised (warm-up) and reused for every operation after:
// plan slots (pinned FpPlan + device FpPlanScratch) and job slots (pinned FpResult + device
// FpJobScratch). Slots are claimed and released with atomics only: no lock, no allocation per
// operation (docs/fingerprint.md, "Engine").
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/gpu/backend.h"
#include "plugin/gpu/fp_job.h"

namespace scout::fp {

class GpuPools {
 public:
  static constexpr uint32_t kPlans = 64;
  static constexpr uint32_t kMaxJobSlots = 256;
  static constexpr uint64_t kMaxScratchBytes = 64ull << 20;  // device memory for job scratch

  // Allocates the pools in `ctx` (current on this thread) for buffers capped at `max_bytes`.
  // nullptr on failure (nothing left allocated).
  static GpuPools* create(gpu::Backend* be, void* ctx, int sm_count, uint64_t max_bytes);
  // Frees the pools if no launch is still running (returns true), else leaks them (false).
  static bool destroy(GpuPools* p);

  void* ctx() const { return ctx_; }
  int sm_count() const { return sm_count_; }
  uint32_t job_slots() const { return n_jobs_; }

  // Claims a plan slot (free, or launched + finished + all its jobs released) and resets it.
  // The claimer holds one reference until release_plan() (or plan_failed()), so a slot whose
  // kernel gave up waiting cannot be reused while its owner may still write into it.
  // -1 if none is available.
  int claim_plan(uint32_t wait, uint64_t timeout_ns);
  gpu::FpPlan* plan(int i) const { return plans_ + i; }
  uint64_t plan_dev(int i) const { return plans_dev_ + uint64_t(i) * sizeof(gpu::FpPlan); }
  uint64_t plan_scratch_dev(int i) const { return plan_scratch_dev_ + uint64_t(i) * sizeof(gpu::FpPlanScratch); }
  // After a successful launch / a failed one.
  void plan_launched(int i) { plan_state_[i].store(kLaunched, std::memory_order_release); }
  void plan_failed(int i) {
    plan_refs_[i].store(0, std::memory_order_relaxed);
    plan_state_[i].store(kFree, std::memory_order_release);
  }
  // Marks the plan ready (release): the kernel may read jobs[0..njobs). Drops the claim reference.
  void release_plan(int i) {
    std::atomic_ref<uint32_t>(plans_[i].ready).store(gpu::kPlanReady, std::memory_order_release);
    plan_refs_[i].fetch_sub(1, std::memory_order_acq_rel);
  }
  bool plan_finished(int i) const {
    return std::atomic_ref<uint32_t>(plans_[i].finished).load(std::memory_order_acquire) == 1;
  }
  bool plan_abandoned(int i) const { return plans_[i].abandoned == gpu::kPlanAbandoned; }

  // Claims a job slot and appends it to plan `p` as job `buf[0..len)`. Returns the job slot or
  // -1 (pools full or plan full). `seq` is echoed in the result.
  int add_job(int p, uint64_t buf, uint64_t len, uint64_t max_bytes, uint64_t selector, uint8_t kind, uint32_t seq);
  const gpu::FpResult* result(int j) const { return results_ + j; }
  bool result_done(int j, uint32_t seq) const {
    return std::atomic_ref<uint32_t>(results_[j].status).load(std::memory_order_acquire) == gpu::kResultDone &&
           results_[j].seq == seq;
  }
  // Releases job slot j (its result has been read or will never come) and its plan reference.
  void release_job(int j, int p);

  // Work items (warp x 16 leaves) of the plan's jobs so far (grid sizing).
  uint64_t plan_items(int p) const;

  // Allocation calls made by create() (tests check nothing is allocated later).
  static std::atomic<uint64_t> allocations;

 private:
  enum : uint8_t { kFree = 0, kClaimed = 1, kLaunched = 2 };
  GpuPools() = default;
  gpu::Backend* be_ = nullptr;
  void* ctx_ = nullptr;
  int sm_count_ = 0;
  uint32_t n_jobs_ = 0;
  uint64_t scratch_stride_ = 0;
  uint64_t scratch_leaves_ = 0;  // leaves a job scratch slot holds
  gpu::FpPlan* plans_ = nullptr;
  uint64_t plans_dev_ = 0;
  uint64_t plan_scratch_dev_ = 0;
  gpu::FpResult* results_ = nullptr;
  uint64_t results_dev_ = 0;
  uint64_t job_scratch_dev_ = 0;
  std::atomic<uint8_t> plan_state_[kPlans] = {};
  std::atomic<uint32_t> plan_refs_[kPlans] = {};  // jobs of the plan not yet released
  std::atomic<uint8_t> job_state_[kMaxJobSlots] = {};
  std::atomic<uint32_t> plan_cursor_{0};
  std::atomic<uint32_t> job_cursor_{0};
};

}  // namespace scout::fp
