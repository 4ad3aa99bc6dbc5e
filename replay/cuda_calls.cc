#include "replay/cuda_calls.h"

namespace scout::replay::cudalib {

bool Calls::fail(const std::string& what) {
  if (error_.empty()) error_ = what;
  return false;
}

bool Calls::cu(cu::Result r, const char* call) {
  if (r == cu::kSuccess) return true;
  return fail(std::string(call) + " failed: " + cu::error_text(L_->cu, r) + " (CUDA error " + std::to_string(r) + ")");
}

bool Calls::blas(int status, const char* call) {
  if (status == 0) return true;
  const char* t = L_->blas.GetStatusString ? L_->blas.GetStatusString(status) : nullptr;
  return fail(std::string(call) + " failed: " + (t ? t : "cuBLAS error") + " (cuBLAS status " + std::to_string(status) +
              ")");
}

bool Calls::nccl(int result, const char* call) {
  if (result == kNcclSuccess) return true;
  const char* t = L_->nccl.GetErrorString ? L_->nccl.GetErrorString(result) : nullptr;
  return fail(std::string(call) + " failed: " + (t ? t : "NCCL error") + " (ncclResult " + std::to_string(result) +
              ")");
}

bool Calls::cupti(int result, const char* call) {
  if (result == 0) return true;
  const char* t = nullptr;
  if (L_->cupti.GetResultString && L_->cupti.GetResultString(result, &t) != 0) t = nullptr;
  return fail(std::string(call) + " failed: " + (t ? t : "CUPTI error") + " (CUptiResult " + std::to_string(result) +
              ")");
}

DeviceBuf::~DeviceBuf() {
  if (!p_) return;
  L_->cu.CtxSetCurrent(ctx_);  // an early return: the sample already failed
  L_->cu.MemFree(p_);
}

bool DeviceBuf::alloc(size_t bytes, Calls& c) {
  if (!c.cu(L_->cu.CtxSetCurrent(ctx_), "cuCtxSetCurrent")) return false;
  cu::DevicePtr p = 0;
  if (!c.cu(L_->cu.MemAlloc(&p, bytes), "cuMemAlloc")) return false;
  p_ = p;
  return true;
}

bool DeviceBuf::put(const void* host, size_t bytes, Calls& c) {
  return c.cu(L_->cu.CtxSetCurrent(ctx_), "cuCtxSetCurrent") &&
         c.cu(L_->cu.MemcpyHtoD(p_, host, bytes), "cuMemcpyHtoD");
}

bool DeviceBuf::get(void* host, size_t bytes, Calls& c) {
  return c.cu(L_->cu.CtxSetCurrent(ctx_), "cuCtxSetCurrent") &&
         c.cu(L_->cu.MemcpyDtoH(host, p_, bytes), "cuMemcpyDtoH");
}

bool DeviceBuf::free(Calls& c) {
  if (!p_) return true;
  const cu::DevicePtr p = p_;
  p_ = 0;
  const bool current = c.cu(L_->cu.CtxSetCurrent(ctx_), "cuCtxSetCurrent");
  return c.cu(L_->cu.MemFree(p), "cuMemFree") && current;
}

Event::~Event() {
  if (e_) L_->cu.EventDestroy(e_);  // an early return: the sample already failed
}

bool Event::create(Calls& c) {
  cu::Event e = nullptr;
  if (!c.cu(L_->cu.EventCreate(&e, cu::kEventDefault), "cuEventCreate")) return false;
  e_ = e;
  return true;
}

bool Event::destroy(Calls& c) {
  if (!e_) return true;
  cu::Event e = e_;
  e_ = nullptr;
  return c.cu(L_->cu.EventDestroy(e), "cuEventDestroy");
}

LtObjects::~LtObjects() {
  // An early return: the sample already failed.
  if (pref) L_->blas.MatmulPreferenceDestroy(pref);
  for (LtLayout l : {a, b, d})
    if (l) L_->blas.MatrixLayoutDestroy(l);
  if (op) L_->blas.MatmulDescDestroy(op);
  if (handle) L_->blas.Destroy(handle);
}

bool LtObjects::create(int dtype, uint64_t m, uint64_t n, uint64_t k, uint64_t ws_bytes, Calls& c) {
  const Blas& B = L_->blas;
  return c.blas(B.Create(&handle), "cublasLtCreate") &&
         c.blas(B.MatmulDescCreate(&op, kComputeType32F, kDataR32F), "cublasLtMatmulDescCreate") &&
         c.blas(B.MatrixLayoutCreate(&a, dtype, m, k, int64_t(m)), "cublasLtMatrixLayoutCreate") &&
         c.blas(B.MatrixLayoutCreate(&b, dtype, k, n, int64_t(k)), "cublasLtMatrixLayoutCreate") &&
         c.blas(B.MatrixLayoutCreate(&d, dtype, m, n, int64_t(m)), "cublasLtMatrixLayoutCreate") &&
         c.blas(B.MatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate") &&
         c.blas(B.MatmulPreferenceSetAttribute(pref, kPrefMaxWorkspaceBytes, &ws_bytes, sizeof(ws_bytes)),
                "cublasLtMatmulPreferenceSetAttribute");
}

bool LtObjects::destroy(Calls& c) {
  const Blas& B = L_->blas;
  bool ok = true;
  if (pref) ok &= c.blas(B.MatmulPreferenceDestroy(pref), "cublasLtMatmulPreferenceDestroy");
  for (LtLayout l : {a, b, d})
    if (l) ok &= c.blas(B.MatrixLayoutDestroy(l), "cublasLtMatrixLayoutDestroy");
  if (op) ok &= c.blas(B.MatmulDescDestroy(op), "cublasLtMatmulDescDestroy");
  if (handle) ok &= c.blas(B.Destroy(handle), "cublasLtDestroy");
  pref = nullptr;
  a = b = d = nullptr;
  op = nullptr;
  handle = nullptr;
  return ok;
}

Comms::~Comms() { abort(); }

bool Comms::destroy(Calls& c) {
  bool ok = true;
  for (NcclComm& x : c_) {
    if (!x) continue;
    ok &= c.nccl(L_->nccl.CommDestroy(x), "ncclCommDestroy");
    x = nullptr;
  }
  return ok;
}

void Comms::abort() {
  for (NcclComm& x : c_) {
    if (x) L_->nccl.CommAbort(x);  // nothing to report: the sample already failed
    x = nullptr;
  }
}

}  // namespace scout::replay::cudalib
