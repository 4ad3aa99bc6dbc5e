// Standalone kernel driver for the benchmark and the GPU check (gpu_harness.h).
#include "plugin/gpu/gpu_harness.h"

#include <cstring>
#include <new>

#include "plugin/gpu/backend.h"
#include "plugin/gpu/cuda_api.h"
#include "plugin/gpu/fp_nonfinite.h"
#include "plugin/gpu/fp_params.h"

namespace scout::fp::gpu {

struct GpuHarness::Impl {
  cu::Api api{};
  std::unique_ptr<Backend> be;
  void* ctx = nullptr;
  void* stream = nullptr;
  cu::Event ev0 = nullptr, ev1 = nullptr;
  FpPlan* plan = nullptr;
  uint64_t plan_dev = 0, plan_scratch = 0;
  FpResult* result = nullptr;
  uint64_t result_dev = 0;
  uint64_t job_scratch = 0;
  uint64_t scratch_capacity_leaves = 0;
};

std::unique_ptr<GpuHarness> GpuHarness::open(std::string* why) {
  std::unique_ptr<GpuHarness> h(new (std::nothrow) GpuHarness());
  if (!h) return nullptr;
  h->impl_ = new (std::nothrow) Impl();
  if (!h->impl_) return nullptr;
  Impl& im = *h->impl_;
  const char* reason = nullptr;
  if (!cu::load_driver(&im.api, &reason)) {
    *why = reason;
    return nullptr;
  }
  im.be = open_cuda_backend(why);
  if (!im.be) return nullptr;
  cu::Device dev = 0;
  cu::Context ctx = nullptr;
  if (im.api.DeviceGet(&dev, 0) != cu::kSuccess || im.api.DevicePrimaryCtxRetain(&ctx, dev) != cu::kSuccess ||
      im.api.CtxSetCurrent(ctx) != cu::kSuccess) {
    *why = "cannot make device 0 current";
    return nullptr;
  }
  im.ctx = ctx;
  if (!im.be->prepare(ctx, &h->sm_count_, why)) return nullptr;
  int major = 0, minor = 0;
  im.api.DeviceGetAttribute(&major, cu::kAttrComputeCapabilityMajor, dev);
  im.api.DeviceGetAttribute(&minor, cu::kAttrComputeCapabilityMinor, dev);
  h->device_ = "sm_" + std::to_string(major * 10 + minor) + ", " + std::to_string(h->sm_count_) + " SMs";
  if (im.api.StreamCreate(&im.stream, cu::kStreamNonBlocking) != cu::kSuccess ||
      im.api.EventCreate(&im.ev0, cu::kEventDefault) != cu::kSuccess ||
      im.api.EventCreate(&im.ev1, cu::kEventDefault) != cu::kSuccess) {
    *why = "cannot create a stream or events";
    return nullptr;
  }
  void* host = nullptr;
  if (!im.be->alloc_host(sizeof(FpPlan), &host, &im.plan_dev) ||
      !im.be->alloc_device(sizeof(FpPlanScratch), &im.plan_scratch)) {
    *why = "cannot allocate the plan";
    return nullptr;
  }
  im.plan = static_cast<FpPlan*>(host);
  if (!im.be->alloc_host(sizeof(FpResult), &host, &im.result_dev)) {
    *why = "cannot allocate the result";
    return nullptr;
  }
  im.result = static_cast<FpResult*>(host);
  return h;
}

GpuHarness::~GpuHarness() {
  if (!impl_) return;
  Impl& im = *impl_;
  if (im.be) {
    if (im.stream) im.api.StreamSynchronize(im.stream);
    im.be->free_host(im.plan);
    im.be->free_host(im.result);
    im.be->free_device(im.plan_scratch);
    im.be->free_device(im.job_scratch);
  }
  delete impl_;
}

bool GpuHarness::alloc(uint64_t n, uint64_t* dev) {
  if (!impl_->be->alloc_device(n + 64, dev)) {
    error_ = "device allocation of " + std::to_string(n) + " bytes failed";
    return false;
  }
  return true;
}

bool GpuHarness::upload(const void* host, uint64_t n, uint64_t* dev) {
  if (!alloc(n, dev)) return false;
  if (n && impl_->api.MemcpyHtoD(*dev, host, n) != cu::kSuccess) {
    error_ = "copy to the device failed";
    return false;
  }
  return true;
}

void GpuHarness::release(uint64_t dev) { impl_->be->free_device(dev); }

bool GpuHarness::hash(uint64_t dev, uint64_t n, uint64_t max_bytes, uint64_t selector, uint8_t dtype, int reps,
                      FpResult* out, float* ms) {
  Impl& im = *impl_;
  const uint64_t leaves = hashed_leaves(n, max_bytes);
  if (leaves > im.scratch_capacity_leaves) {
    im.be->free_device(im.job_scratch);
    im.job_scratch = 0;
    if (!im.be->alloc_device(scratch_bytes(leaves), &im.job_scratch)) {
      error_ = "cannot allocate the job scratch";
      return false;
    }
    im.scratch_capacity_leaves = leaves;
  }
  FpPlan& p = *im.plan;
  std::memset(&p, 0, sizeof(p));
  p.njobs = 1;
  p.ready = kPlanReady;
  FpJob& j = p.jobs[0];
  j.buf = dev;
  j.len = n;
  j.max_bytes = max_bytes;
  j.selector = selector;
  j.result = im.result_dev;
  j.scratch = im.job_scratch;
  j.scratch_leaves = im.scratch_capacity_leaves;
  j.kind = float_kind(dtype);
  j.seq = 1;
  const uint32_t grid = grid_for_items(job_items(leaves), sm_count_);
  std::memset(im.result, 0, sizeof(FpResult));
  if (im.api.EventRecord(im.ev0, im.stream) != cu::kSuccess) return false;
  for (int r = 0; r < reps; ++r) {
    if (!im.be->launch(im.ctx, im.stream, im.plan_dev, im.plan_scratch, grid)) {
      error_ = "kernel launch failed";
      return false;
    }
  }
  float t = 0;
  if (im.api.EventRecord(im.ev1, im.stream) != cu::kSuccess || im.api.EventSynchronize(im.ev1) != cu::kSuccess ||
      im.api.EventElapsedTime(&t, im.ev0, im.ev1) != cu::kSuccess) {
    error_ = "kernel failed or timing failed";
    return false;
  }
  *out = *im.result;
  *ms = t / float(reps);
  if (out->status != kResultDone) {
    error_ = "kernel finished without a result";
    return false;
  }
  return true;
}

bool GpuHarness::copy(uint64_t dst, uint64_t src, uint64_t n, int reps, float* ms) {
  Impl& im = *impl_;
  if (im.api.EventRecord(im.ev0, im.stream) != cu::kSuccess) return false;
  for (int r = 0; r < reps; ++r) {
    if (im.api.MemcpyDtoDAsync(dst, src, n, im.stream) != cu::kSuccess) {
      error_ = "device-to-device copy failed";
      return false;
    }
  }
  float t = 0;
  if (im.api.EventRecord(im.ev1, im.stream) != cu::kSuccess || im.api.EventSynchronize(im.ev1) != cu::kSuccess ||
      im.api.EventElapsedTime(&t, im.ev0, im.ev1) != cu::kSuccess) {
    error_ = "copy timing failed";
    return false;
  }
  *ms = t / float(reps);
  return true;
}

}  // namespace scout::fp::gpu
