// The seam between the fingerprint engine and the GPU: everything the engine needs from CUDA,
// as one small interface. The real implementation (cuda_backend.cc) reaches the driver only
// through dlopen("libcuda.so.1"); tests use a fake that runs the kernel's host replay
// (fp_emulate.h) on host memory and emulates stream order (test/support/fake_gpu.h).
//
// Pointers named `ctx` and `stream` are opaque CUDA handles (CUcontext, CUstream), never
// dereferenced by scout. Device addresses are uint64_t. Every call may be made while another
// thread captures a CUDA graph: the real backend switches the calling thread to relaxed capture
// mode around each driver call (as NCCL does) and restores it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/uuid.h"

namespace scout::fp::gpu {

class Backend {
 public:
  virtual ~Backend() = default;

  // The CUDA context current on the calling thread; nullptr if none.
  virtual void* current_context() = 0;

  // Prepares `ctx` (current on this thread) for fingerprint launches: loads the kernel.
  // *sm_count = multiprocessors of its device. False with *why set if the kernel cannot run
  // there (no kernel image for the architecture, no fatbin in this build, ...).
  virtual bool prepare(void* ctx, int* sm_count, std::string* why) = 0;

  // 1 if `stream` is being captured into a CUDA graph (or its capture was invalidated), 0 if
  // not, -1 on error.
  virtual int capturing(void* stream) = 0;

  // Pinned host memory mapped into the device address space (current context), zeroed:
  // *host for the CPU, *dev for kernels. False on failure.
  virtual bool alloc_host(uint64_t bytes, void** host, uint64_t* dev) = 0;
  // Device memory in the current context, zeroed.
  virtual bool alloc_device(uint64_t bytes, uint64_t* dev) = 0;
  virtual void free_host(void* host) = 0;
  virtual void free_device(uint64_t dev) = 0;

  // Enqueues the fingerprint kernel scout_fp_plan(plan, plan_scratch) with `grid` CTAs of
  // kThreadsPerCta threads on `stream` of `ctx` (current on this thread). Asynchronous.
  virtual bool launch(void* ctx, void* stream, uint64_t plan, uint64_t plan_scratch, uint32_t grid) = 0;

  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" of CUDA device ordinal `cuda_dev`; < 0: the
  // device of the calling thread's current context.
  virtual bool uuid(int cuda_dev, char* out, unsigned cap) = 0;
};

// The real backend: dlopen("libcuda.so.1"), resolve the driver entry points, cuInit(0).
// nullptr with *why set when there is no usable driver (no library, missing symbol, cuInit
// failed, no device). Never throws.
std::unique_ptr<Backend> open_cuda_backend(std::string* why);

// Formats 16 UUID bytes as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into out[0..cap): the one
// formatter every part uses (common/uuid.h).
using shm::format_gpu_uuid;

}  // namespace scout::fp::gpu
