// The real GPU backend: the CUDA driver reached through dlopen("libcuda.so.1") (backend.h).
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "plugin/gpu/backend.h"
#include "plugin/gpu/cuda_api.h"
#include "plugin/gpu/fp_job.h"

// The fatbin of plugin/gpu/*.cu embedded by the Makefile (section .nv_fatbin; empty without nvcc).
extern "C" {
extern const unsigned char scout_fatbin_begin[];
extern const unsigned char scout_fatbin_end[];
}

namespace scout::fp::gpu {

namespace cu {

bool load_driver(Api* api, const char** why) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    *why = "libcuda.so.1 not found (no NVIDIA driver)";
    return false;
  }
  struct Entry {
    void** slot;
    const char* name;
  };
  const Entry entries[] = {
      {reinterpret_cast<void**>(&api->Init), "cuInit"},
      {reinterpret_cast<void**>(&api->DriverGetVersion), "cuDriverGetVersion"},
      {reinterpret_cast<void**>(&api->GetErrorString), "cuGetErrorString"},
      {reinterpret_cast<void**>(&api->DeviceGet), "cuDeviceGet"},
      {reinterpret_cast<void**>(&api->DeviceGetCount), "cuDeviceGetCount"},
      {reinterpret_cast<void**>(&api->DeviceGetAttribute), "cuDeviceGetAttribute"},
      {reinterpret_cast<void**>(&api->DeviceGetUuid), "cuDeviceGetUuid_v2"},
      {reinterpret_cast<void**>(&api->DevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain"},
      {reinterpret_cast<void**>(&api->CtxGetCurrent), "cuCtxGetCurrent"},
      {reinterpret_cast<void**>(&api->CtxSetCurrent), "cuCtxSetCurrent"},
      {reinterpret_cast<void**>(&api->CtxGetDevice), "cuCtxGetDevice"},
      {reinterpret_cast<void**>(&api->CtxSynchronize), "cuCtxSynchronize"},
      {reinterpret_cast<void**>(&api->ModuleLoadData), "cuModuleLoadData"},
      {reinterpret_cast<void**>(&api->ModuleGetFunction), "cuModuleGetFunction"},
      {reinterpret_cast<void**>(&api->LaunchKernel), "cuLaunchKernel"},
      {reinterpret_cast<void**>(&api->MemHostAlloc), "cuMemHostAlloc"},
      {reinterpret_cast<void**>(&api->MemHostGetDevicePointer), "cuMemHostGetDevicePointer_v2"},
      {reinterpret_cast<void**>(&api->MemFreeHost), "cuMemFreeHost"},
      {reinterpret_cast<void**>(&api->MemAlloc), "cuMemAlloc_v2"},
      {reinterpret_cast<void**>(&api->MemFree), "cuMemFree_v2"},
      {reinterpret_cast<void**>(&api->MemsetD8), "cuMemsetD8_v2"},
      {reinterpret_cast<void**>(&api->MemcpyHtoD), "cuMemcpyHtoD_v2"},
      {reinterpret_cast<void**>(&api->MemcpyDtoH), "cuMemcpyDtoH_v2"},
      {reinterpret_cast<void**>(&api->MemcpyDtoDAsync), "cuMemcpyDtoDAsync_v2"},
      {reinterpret_cast<void**>(&api->StreamIsCapturing), "cuStreamIsCapturing"},
      {reinterpret_cast<void**>(&api->ThreadExchangeStreamCaptureMode), "cuThreadExchangeStreamCaptureMode"},
      {reinterpret_cast<void**>(&api->StreamCreate), "cuStreamCreate"},
      {reinterpret_cast<void**>(&api->StreamSynchronize), "cuStreamSynchronize"},
      {reinterpret_cast<void**>(&api->EventCreate), "cuEventCreate"},
      {reinterpret_cast<void**>(&api->EventRecord), "cuEventRecord"},
      {reinterpret_cast<void**>(&api->EventSynchronize), "cuEventSynchronize"},
      {reinterpret_cast<void**>(&api->EventElapsedTime), "cuEventElapsedTime"},
      {reinterpret_cast<void**>(&api->EventDestroy), "cuEventDestroy_v2"},
  };
  for (const Entry& e : entries) {
    *e.slot = dlsym(lib, e.name);
    if (!*e.slot) {
      *why = "libcuda.so.1 lacks a driver entry point scout needs (driver too old?)";
      dlclose(lib);
      return false;
    }
  }
  if (api->Init(0) != kSuccess) {
    *why = "cuInit failed (no usable GPU)";
    return false;  // keep the library loaded: NCCL's own use of the driver is unaffected
  }
  return true;
}

const char* error_text(const Api& api, Result r) {
  const char* s = nullptr;
  if (api.GetErrorString && api.GetErrorString(r, &s) == kSuccess && s) return s;
  return "unknown CUDA error";
}

}  // namespace cu

namespace {

constexpr int kMaxContexts = 32;

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const cu::Api& api) : api_(api) {}

  void* current_context() override {
    Relaxed r(api_);
    cu::Context ctx = nullptr;
    return api_.CtxGetCurrent(&ctx) == cu::kSuccess ? ctx : nullptr;
  }

  bool prepare(void* ctx, int* sm_count, std::string* why) override {
    std::lock_guard<std::mutex> lock(mu_);
    Relaxed r(api_);
    cu::Device dev = 0;
    if (api_.CtxGetDevice(&dev) != cu::kSuccess ||
        api_.DeviceGetAttribute(sm_count, cu::kAttrMultiprocessorCount, dev) != cu::kSuccess) {
      *why = "cannot query the current device";
      return false;
    }
    if (find(ctx)) return true;
    if (n_ >= kMaxContexts) {
      *why = "too many CUDA contexts in one process";
      return false;
    }
    if (reinterpret_cast<uintptr_t>(scout_fatbin_end) <= reinterpret_cast<uintptr_t>(scout_fatbin_begin)) {
      *why = "this build has no GPU kernel (nvcc was absent)";
      return false;
    }
    cu::Module mod = nullptr;
    cu::Result rc = api_.ModuleLoadData(&mod, scout_fatbin_begin);
    if (rc != cu::kSuccess) {
      *why = std::string("cannot load the fingerprint kernel for this GPU: ") + cu::error_text(api_, rc);
      return false;
    }
    cu::Function fn = nullptr;
    rc = api_.ModuleGetFunction(&fn, mod, "scout_fp_plan");
    if (rc != cu::kSuccess) {
      *why = std::string("fingerprint kernel missing from the module: ") + cu::error_text(api_, rc);
      return false;
    }
    ctxs_[n_] = ctx;
    fns_[n_] = fn;
    n_published_.store(++n_, std::memory_order_release);
    return true;
  }

  int capturing(void* stream) override {
    Relaxed r(api_);
    int status = 0;
    if (api_.StreamIsCapturing(stream, &status) != cu::kSuccess) return -1;
    return status == cu::kCaptureStatusNone ? 0 : 1;
  }

  bool alloc_host(uint64_t bytes, void** host, uint64_t* dev) override {
    Relaxed r(api_);
    void* p = nullptr;
    if (api_.MemHostAlloc(&p, bytes, cu::kMemHostAllocPortable | cu::kMemHostAllocDeviceMap) != cu::kSuccess)
      return false;
    std::memset(p, 0, bytes);
    cu::DevicePtr d = 0;
    if (api_.MemHostGetDevicePointer(&d, p, 0) != cu::kSuccess) {
      api_.MemFreeHost(p);
      return false;
    }
    *host = p;
    *dev = d;
    return true;
  }

  bool alloc_device(uint64_t bytes, uint64_t* dev) override {
    Relaxed r(api_);
    cu::DevicePtr d = 0;
    if (api_.MemAlloc(&d, bytes) != cu::kSuccess) return false;
    if (api_.MemsetD8(d, 0, bytes) != cu::kSuccess) {
      api_.MemFree(d);
      return false;
    }
    *dev = d;
    return true;
  }

  void free_host(void* host) override {
    Relaxed r(api_);
    if (host) api_.MemFreeHost(host);
  }

  void free_device(uint64_t dev) override {
    Relaxed r(api_);
    if (dev) api_.MemFree(dev);
  }

  bool launch(void* ctx, void* stream, uint64_t plan, uint64_t plan_scratch, uint32_t grid) override {
    cu::Function fn = find(ctx);
    if (!fn) return false;
    Relaxed r(api_);
    void* params[] = {&plan, &plan_scratch};
    return api_.LaunchKernel(fn, grid, 1, 1, kThreadsPerCta, 1, 1, 0, stream, params, nullptr) == cu::kSuccess;
  }

  bool uuid(int cuda_dev, char* out, unsigned cap) override {
    if (out && cap) out[0] = 0;
    Relaxed r(api_);
    cu::Device dev = 0;
    cu::Uuid u;
    const cu::Result got = cuda_dev < 0 ? api_.CtxGetDevice(&dev) : api_.DeviceGet(&dev, cuda_dev);
    if (got != cu::kSuccess || api_.DeviceGetUuid(&u, dev) != cu::kSuccess) return false;
    format_gpu_uuid(u.bytes, out, cap);
    return true;
  }

 private:
  // Relaxed stream-capture mode for the calling thread while a driver call runs, so that a
  // graph being captured on another thread is not invalidated (as NCCL does).
  struct Relaxed {
    const cu::Api& api;
    int mode = cu::kCaptureModeRelaxed;
    bool ok;
    explicit Relaxed(const cu::Api& a) : api(a), ok(a.ThreadExchangeStreamCaptureMode(&mode) == cu::kSuccess) {}
    ~Relaxed() {
      if (ok) api.ThreadExchangeStreamCaptureMode(&mode);
    }
  };

  cu::Function find(void* ctx) const {
    const int n = n_published_.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i)
      if (ctxs_[i] == ctx) return fns_[i];
    return nullptr;
  }

  cu::Api api_;
  std::mutex mu_;  // prepare() only (communicator init), never on the launch path
  int n_ = 0;
  std::atomic<int> n_published_{0};
  void* ctxs_[kMaxContexts] = {};
  cu::Function fns_[kMaxContexts] = {};
};

}  // namespace

std::unique_ptr<Backend> open_cuda_backend(std::string* why) {
  cu::Api api{};
  const char* reason = nullptr;
  if (!cu::load_driver(&api, &reason)) {
    if (why) *why = reason;
    return nullptr;
  }
  int count = 0;
  if (api.DeviceGetCount(&count) != cu::kSuccess || count <= 0) {
    if (why) *why = "no CUDA device";
    return nullptr;
  }
  return std::unique_ptr<Backend>(new (std::nothrow) CudaBackend(api));
}

}  // namespace scout::fp::gpu
