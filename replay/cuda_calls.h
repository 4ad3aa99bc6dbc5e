// How the CUDA replay backend (cuda_backend.h) calls the libraries of cuda_libs.h: every call's
// result is checked, and the first failure of a recipe run, with the call's name and the
// library's error text, becomes the sample's reason with status "failed" (docs/replay.md,
// "Backends"): a broken measurement never reaches a verdict. Device memory, events, cuBLASLt
// objects and NCCL communicators are owned by the small RAII types below, so every path releases
// them: the normal path explicitly (those calls are checked too), an early return in the
// destructor (the sample is already failed; NCCL communicators are aborted there, as a kernel
// waiting for a peer that is gone never ends by itself).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "replay/cuda_libs.h"

namespace scout::replay::cudalib {

// The first failed call of one recipe run.
class Calls {
 public:
  explicit Calls(const Libs* libs) : L_(libs) {}
  // Each is true when the call succeeded; a failure is kept (the first one) as
  // "<call> failed: <error text> (<library> <code>)".
  bool cu(cu::Result r, const char* call);
  bool blas(int status, const char* call);
  bool nccl(int result, const char* call);
  bool cupti(int result, const char* call);
  // A failure that is not one call's result ("CUPTI: no kernel record of device 1 ..."); false.
  bool fail(const std::string& what);
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  const Libs* L_;
  std::string error_;
};

// Device memory allocated in context `ctx`.
class DeviceBuf {
 public:
  DeviceBuf(const Libs* libs, cu::Context ctx) : L_(libs), ctx_(ctx) {}
  DeviceBuf(DeviceBuf&& o) noexcept : L_(o.L_), ctx_(o.ctx_), p_(o.p_) { o.p_ = 0; }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
  ~DeviceBuf();
  // cuCtxSetCurrent + cuMemAlloc of `bytes`.
  bool alloc(size_t bytes, Calls& c);
  // Copies to / from the device (context made current first).
  bool put(const void* host, size_t bytes, Calls& c);
  bool get(void* host, size_t bytes, Calls& c);
  // cuMemFree now (with its context current); true when there was nothing to free.
  bool free(Calls& c);
  // Forgets the allocation without freeing it: a kernel abandoned at its deadline may still use
  // it, and cuMemFree would wait for that kernel (docs/replay.md, "Deadlines").
  void release() { p_ = 0; }
  cu::DevicePtr ptr() const { return p_; }
  void* addr() const { return reinterpret_cast<void*>(p_); }

 private:
  const Libs* L_;
  cu::Context ctx_;
  cu::DevicePtr p_ = 0;
};

// A CUDA event of the current context.
class Event {
 public:
  explicit Event(const Libs* libs) : L_(libs) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();
  bool create(Calls& c);
  bool destroy(Calls& c);
  cu::Event get() const { return e_; }

 private:
  const Libs* L_;
  cu::Event e_ = nullptr;
};

// The cuBLASLt objects of one GEMM: handle, operation, layouts of A, B and D, preference.
class LtObjects {
 public:
  explicit LtObjects(const Libs* libs) : L_(libs) {}
  LtObjects(const LtObjects&) = delete;
  LtObjects& operator=(const LtObjects&) = delete;
  ~LtObjects();
  // D(m x n) = A(m x k) B(k x n), column-major, elements of `dtype`, fp32 compute; a workspace
  // limit of `ws_bytes` in the preference.
  bool create(int dtype, uint64_t m, uint64_t n, uint64_t k, uint64_t ws_bytes, Calls& c);
  bool destroy(Calls& c);
  LtHandle handle = nullptr;
  LtDesc op = nullptr;
  LtLayout a = nullptr, b = nullptr, d = nullptr;
  LtPref pref = nullptr;

 private:
  const Libs* L_;
};

// NCCL communicators: destroyed explicitly once their work is done, aborted otherwise.
class Comms {
 public:
  Comms(const Libs* libs, size_t n) : L_(libs), c_(n, nullptr) {}
  Comms(const Comms&) = delete;
  Comms& operator=(const Comms&) = delete;
  ~Comms();
  NcclComm* data() { return c_.data(); }
  NcclComm operator[](size_t i) const { return c_[i]; }
  // ncclCommDestroy of every communicator (each is called even after a failure).
  bool destroy(Calls& c);
  // ncclCommAbort of every communicator (a peer may be gone).
  void abort();

 private:
  const Libs* L_;
  std::vector<NcclComm> c_;
};

}  // namespace scout::replay::cudalib
