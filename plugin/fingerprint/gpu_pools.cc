// Per-context fingerprint pools (gpu_pools.h).
#include "plugin/fingerprint/gpu_pools.h"

#include <new>

#include "plugin/gpu/fp_params.h"

namespace scout::fp {

std::atomic<uint64_t> GpuPools::allocations{0};

GpuPools* GpuPools::create(gpu::Backend* be, void* ctx, int sm_count, uint64_t max_bytes) {
  GpuPools* p = new (std::nothrow) GpuPools();
  if (!p) return nullptr;
  p->be_ = be;
  p->ctx_ = ctx;
  p->sm_count_ = sm_count > 0 ? sm_count : 1;
  const uint64_t max_leaves = num_blocks(max_bytes);  // >= hashed_leaves(len, max_bytes) for any len
  p->scratch_leaves_ = max_leaves;
  p->scratch_stride_ = gpu::scratch_bytes(max_leaves);
  uint64_t n = kMaxScratchBytes / p->scratch_stride_;
  p->n_jobs_ = uint32_t(n > kMaxJobSlots ? kMaxJobSlots : (n < 8 ? 8 : n));
  void* h = nullptr;
  bool ok = be->alloc_host(sizeof(gpu::FpPlan) * kPlans, &h, &p->plans_dev_);
  p->plans_ = static_cast<gpu::FpPlan*>(h);
  ok = ok && be->alloc_device(sizeof(gpu::FpPlanScratch) * kPlans, &p->plan_scratch_dev_);
  ok = ok && be->alloc_host(sizeof(gpu::FpResult) * p->n_jobs_, &h, &p->results_dev_);
  if (ok) p->results_ = static_cast<gpu::FpResult*>(h);
  ok = ok && be->alloc_device(p->scratch_stride_ * p->n_jobs_, &p->job_scratch_dev_);
  allocations.fetch_add(4, std::memory_order_relaxed);
  if (!ok) {
    if (p->plans_) be->free_host(p->plans_);
    if (p->plan_scratch_dev_) be->free_device(p->plan_scratch_dev_);
    if (p->results_) be->free_host(p->results_);
    delete p;
    return nullptr;
  }
  // A never-used plan slot counts as finished so claim_plan() treats it like a reused one.
  for (uint32_t i = 0; i < kPlans; ++i) p->plans_[i].finished = 1;
  return p;
}

bool GpuPools::destroy(GpuPools* p) {
  if (!p) return true;
  for (uint32_t i = 0; i < kPlans; ++i) {
    if (p->plan_state_[i].load(std::memory_order_acquire) == kLaunched && !p->plan_finished(int(i))) {
      return false;  // a kernel may still write into these buffers: keep them
    }
  }
  p->be_->free_host(p->plans_);
  p->be_->free_device(p->plan_scratch_dev_);
  p->be_->free_host(p->results_);
  p->be_->free_device(p->job_scratch_dev_);
  delete p;
  return true;
}

int GpuPools::claim_plan(uint32_t wait, uint64_t timeout_ns) {
  const uint32_t start = plan_cursor_.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t k = 0; k < kPlans; ++k) {
    const uint32_t i = (start + k) % kPlans;
    uint8_t s = plan_state_[i].load(std::memory_order_acquire);
    if (s == kClaimed) continue;
    if (s == kLaunched && (!plan_finished(int(i)) || plan_refs_[i].load(std::memory_order_acquire) != 0)) continue;
    if (!plan_state_[i].compare_exchange_strong(s, kClaimed, std::memory_order_acq_rel)) continue;
    gpu::FpPlan& pl = plans_[i];
    pl.ready = gpu::kPlanNotReady;
    pl.njobs = 0;
    pl.wait = wait;
    pl.abandoned = 0;
    pl.finished = 0;
    pl.timeout_ns = timeout_ns;
    plan_refs_[i].store(1, std::memory_order_release);
    return int(i);
  }
  return -1;
}

int GpuPools::add_job(int p, uint64_t buf, uint64_t len, uint64_t max_bytes, uint64_t selector, uint8_t kind,
                      uint32_t seq) {
  gpu::FpPlan& pl = plans_[p];
  if (pl.njobs >= gpu::kMaxJobs) return -1;
  const uint32_t start = job_cursor_.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t k = 0; k < n_jobs_; ++k) {
    const uint32_t j = (start + k) % n_jobs_;
    uint8_t s = kFree;
    if (!job_state_[j].compare_exchange_strong(s, kClaimed, std::memory_order_acq_rel)) continue;
    gpu::FpResult& r = results_[j];
    r.status = gpu::kResultRunning;
    r.seq = seq;
    gpu::FpJob& job = pl.jobs[pl.njobs];
    job.buf = buf;
    job.len = len;
    job.max_bytes = max_bytes;
    job.selector = selector;
    job.result = results_dev_ + uint64_t(j) * sizeof(gpu::FpResult);
    job.scratch = job_scratch_dev_ + uint64_t(j) * scratch_stride_;
    job.scratch_leaves = scratch_leaves_;
    job.kind = kind;
    job.seq = seq;
    ++pl.njobs;
    plan_refs_[p].fetch_add(1, std::memory_order_acq_rel);
    return int(j);
  }
  return -1;
}

void GpuPools::release_job(int j, int p) {
  job_state_[j].store(kFree, std::memory_order_release);
  plan_refs_[p].fetch_sub(1, std::memory_order_acq_rel);
}

uint64_t GpuPools::plan_items(int p) const {
  uint64_t items = 0;
  const gpu::FpPlan& pl = plans_[p];
  for (uint32_t j = 0; j < pl.njobs; ++j) items += gpu::job_items(hashed_leaves(pl.jobs[j].len, pl.jobs[j].max_bytes));
  return items;
}

}  // namespace scout::fp
