#include "test/support/fake_cuda_libs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace scout::testing::fakecuda {

FakeState F;
FakeNccl N;
Faults X;

namespace {

using replay::KernelSpan;

constexpr cu::Result kCuFault = 999;  // CUDA_ERROR_UNKNOWN
constexpr int kBlasFault = 14;        // CUBLAS_STATUS_INTERNAL_ERROR
constexpr int kNcclFault = 1;         // ncclUnhandledCudaError
constexpr int kCuptiFault = 999;      // CUPTI_ERROR_UNKNOWN
constexpr size_t kRec = 216;          // sizeof(CUpti_ActivityKernel10)

// Counts the call; true when it is the one to fail.
bool fault(const char* name) {
  if (X.calls++ != X.fail_at) return false;
  X.failed = name;
  return true;
}

uint64_t wall_now() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// A kernel of `ns` on `device`, stamped on CUPTI's clock (CLOCK_REALTIME), after the previous one.
void kernel(int device, uint64_t ns) {
  F.clock = std::max(F.clock, wall_now());
  F.pending.push_back({device, F.clock, F.clock + ns});
  F.clock += ns + 10;
}

int device_of(cu::Stream s) { return int(reinterpret_cast<uintptr_t>(s)) - 0x100; }

struct Layout {
  int type;
  uint64_t rows, cols;
};

// ---- driver
cu::Result GetErrorString(cu::Result r, const char** s) {
  *s = r == kCuFault ? "CUDA_ERROR_UNKNOWN (injected)" : r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : nullptr;
  return *s ? 0 : 1;
}
cu::Result DriverGetVersion(int* v) {
  if (fault("cuDriverGetVersion")) return kCuFault;
  *v = 13000;
  return 0;
}
cu::Result DeviceGetCount(int* n) {
  if (fault("cuDeviceGetCount")) return kCuFault;
  *n = 3;
  return 0;
}
cu::Result DeviceGet(cu::Device* d, int i) {
  if (fault("cuDeviceGet")) return kCuFault;
  *d = i;
  return 0;
}
cu::Result DeviceGetUuid(cu::Uuid* u, cu::Device d) {
  if (fault("cuDeviceGetUuid")) return kCuFault;
  std::memset(u->bytes, d + 1, 16);
  return 0;
}
cu::Result DeviceGetAttribute(int* v, int attr, cu::Device) {
  if (fault("cuDeviceGetAttribute")) return kCuFault;
  *v = attr == cu::kAttrMultiprocessorCount ? 132 : 0;
  return 0;
}
cu::Result PrimaryCtxRetain(cu::Context* c, cu::Device d) {
  if (fault("cuDevicePrimaryCtxRetain")) return kCuFault;
  *c = reinterpret_cast<void*>(uintptr_t(d + 1));
  X.live["ctx"]++;
  return 0;
}
cu::Result PrimaryCtxRelease(cu::Device) {
  X.live["ctx"]--;
  return fault("cuDevicePrimaryCtxRelease") ? kCuFault : 0;
}
cu::Result CtxSetCurrent(cu::Context c) {
  if (fault("cuCtxSetCurrent")) return kCuFault;
  F.current = int(reinterpret_cast<uintptr_t>(c)) - 1;
  return 0;
}
cu::Result MemAlloc(cu::DevicePtr* p, size_t n) {
  if (fault("cuMemAlloc")) return kCuFault;
  if (F.fail_alloc) return 2;
  void* m = std::malloc(n);
  if (!m) return 2;
  *p = reinterpret_cast<uintptr_t>(m);
  F.sizes[*p] = n;
  F.allocated += int64_t(n);
  F.peak = std::max(F.peak, F.allocated);
  X.live["mem"]++;
  return 0;
}
cu::Result MemFree(cu::DevicePtr p) {
  X.live["mem"]--;
  F.allocated -= int64_t(F.sizes[p]);
  F.sizes.erase(p);
  std::free(reinterpret_cast<void*>(p));
  return fault("cuMemFree") ? kCuFault : 0;
}
cu::Result HtoD(cu::DevicePtr d, const void* s, size_t n) {
  if (fault("cuMemcpyHtoD")) return kCuFault;
  std::memcpy(reinterpret_cast<void*>(d), s, n);
  return 0;
}
cu::Result DtoH(void* d, cu::DevicePtr s, size_t n) {
  if (fault("cuMemcpyDtoH")) return kCuFault;
  std::memcpy(d, reinterpret_cast<void*>(s), n);
  return 0;
}
cu::Result StreamSync(cu::Stream) { return fault("cuStreamSynchronize") ? kCuFault : 0; }
cu::Result EventCreate(cu::Event* e, unsigned) {
  if (fault("cuEventCreate")) return kCuFault;
  *e = new int(0);
  X.live["event"]++;
  return 0;
}
cu::Result EventDestroy(cu::Event e) {
  X.live["event"]--;
  delete static_cast<int*>(e);
  return fault("cuEventDestroy") ? kCuFault : 0;
}
cu::Result EventRecord(cu::Event, cu::Stream) { return fault("cuEventRecord") ? kCuFault : 0; }
cu::Result EventElapsedTime(float* ms, cu::Event, cu::Event) {
  if (fault("cuEventElapsedTime")) return kCuFault;
  *ms = 3.0f;
  return 0;
}
cu::Result MemGetInfo(size_t* f, size_t* t) {
  if (fault("cuMemGetInfo")) return kCuFault;
  *f = F.free_bytes;
  *t = size_t(141) << 30;
  return 0;
}
cu::Result DeviceGetName(char* n, int len, cu::Device) {
  if (fault("cuDeviceGetName")) return kCuFault;
  std::snprintf(n, size_t(len), "Fake GPU");
  return 0;
}
cu::Result PriorityRange(int* least, int* greatest) {
  if (fault("cuCtxGetStreamPriorityRange")) return kCuFault;
  *least = 0;
  *greatest = -5;
  return 0;
}
cu::Result StreamCreateWithPriority(cu::Stream* s, unsigned, int prio) {
  if (fault("cuStreamCreateWithPriority")) return kCuFault;
  F.stream_priority = prio;
  *s = reinterpret_cast<void*>(uintptr_t(0x100 + F.current));
  X.live["stream"]++;
  return 0;
}
cu::Result StreamDestroy(cu::Stream) {
  X.live["stream"]--;
  return fault("cuStreamDestroy") ? kCuFault : 0;
}
cu::Result StreamQuery(cu::Stream) {
  if (fault("cuStreamQuery")) return kCuFault;
  if (N.not_ready > 0) {
    N.not_ready--;
    return cudalib::kNotReady;
  }
  return 0;
}

// ---- cuBLASLt
const char* LtStatusString(int st) { return st == kBlasFault ? "CUBLAS_STATUS_INTERNAL_ERROR (injected)" : nullptr; }
int LtCreate(cudalib::LtHandle* h) {
  if (fault("cublasLtCreate")) return kBlasFault;
  *h = new int(0);
  X.live["lt.handle"]++;
  return 0;
}
int LtDestroy(cudalib::LtHandle h) {
  X.live["lt.handle"]--;
  delete static_cast<int*>(h);
  return fault("cublasLtDestroy") ? kBlasFault : 0;
}
size_t LtVersion() { return 130100; }
int DescCreate(cudalib::LtDesc* d, int, int) {
  if (fault("cublasLtMatmulDescCreate")) return kBlasFault;
  *d = new int(0);
  X.live["lt.desc"]++;
  return 0;
}
int DescDestroy(cudalib::LtDesc d) {
  X.live["lt.desc"]--;
  delete static_cast<int*>(d);
  return fault("cublasLtMatmulDescDestroy") ? kBlasFault : 0;
}
int LayoutCreate(cudalib::LtLayout* l, int type, uint64_t rows, uint64_t cols, int64_t) {
  if (fault("cublasLtMatrixLayoutCreate")) return kBlasFault;
  *l = new Layout{type, rows, cols};
  X.live["lt.layout"]++;
  return 0;
}
int LayoutDestroy(cudalib::LtLayout l) {
  X.live["lt.layout"]--;
  delete static_cast<Layout*>(l);
  return fault("cublasLtMatrixLayoutDestroy") ? kBlasFault : 0;
}
int PrefCreate(cudalib::LtPref* p) {
  if (fault("cublasLtMatmulPreferenceCreate")) return kBlasFault;
  *p = new int(0);
  X.live["lt.pref"]++;
  return 0;
}
int PrefDestroy(cudalib::LtPref p) {
  X.live["lt.pref"]--;
  delete static_cast<int*>(p);
  return fault("cublasLtMatmulPreferenceDestroy") ? kBlasFault : 0;
}
int PrefSet(cudalib::LtPref, int, const void*, size_t) {
  return fault("cublasLtMatmulPreferenceSetAttribute") ? kBlasFault : 0;
}
int Heuristic(cudalib::LtHandle, cudalib::LtDesc, cudalib::LtLayout, cudalib::LtLayout, cudalib::LtLayout,
              cudalib::LtLayout, cudalib::LtPref, int, cudalib::LtHeuristic* r, int* got) {
  if (fault("cublasLtMatmulAlgoGetHeuristic")) return kBlasFault;
  F.heuristic++;
  std::memset(r, 0, sizeof(*r));
  r->algo.data[0] = 42;
  *got = 1;
  return 0;
}
int Matmul(cudalib::LtHandle, cudalib::LtDesc, const void* alpha, const void* a, cudalib::LtLayout al, const void* b,
           cudalib::LtLayout bl, const void*, const void*, cudalib::LtLayout, void* d, cudalib::LtLayout,
           const cudalib::LtAlgo* algo, void*, size_t, cu::Stream s) {
  if (fault("cublasLtMatmul")) return kBlasFault;
  if (algo->data[0] != 42) return 7;
  const Layout& A = *static_cast<Layout*>(al);
  const Layout& B = *static_cast<Layout*>(bl);
  const uint64_t m = A.rows, k = A.cols, n = B.cols;
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  std::vector<float> out(m * n, 0.0f);
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t kk = 0; kk < k; ++kk)
      for (uint64_t i = 0; i < m; ++i) out[i + j * m] += x[i + kk * m] * y[kk + j * k] * *static_cast<const float*>(alpha);
  std::memcpy(d, out.data(), out.size() * 4);
  F.matmuls++;
  const int dev = device_of(s);
  kernel(dev, 1'000'000ull * uint64_t(F.equal_speed ? 1 : dev + 1));
  return 0;
}

// ---- CUPTI
int CuptiResultString(int r, const char** s) {
  *s = r == kCuptiFault ? "CUPTI_ERROR_UNKNOWN (injected)" : nullptr;
  return *s ? 0 : 1;
}
int CuptiVersion(uint32_t* v) {
  if (fault("cuptiGetVersion")) return kCuptiFault;
  *v = 130001;
  return 0;
}
int CuptiEnable(int kind) {
  if (fault("cuptiActivityEnable")) return kCuptiFault;
  return kind == cudalib::kActivityConcurrentKernel ? 0 : 1;
}
int CuptiDisable(int) { return fault("cuptiActivityDisable") ? kCuptiFault : 0; }
int CuptiRegister(cudalib::BufferRequested r, cudalib::BufferCompleted d) {
  if (fault("cuptiActivityRegisterCallbacks")) return kCuptiFault;
  F.req = r;
  F.done = d;
  return 0;
}
int CuptiFlush(uint32_t) {
  if (fault("cuptiActivityFlushAll")) return kCuptiFault;
  if (F.pending.empty()) return 0;
  uint8_t* buf = nullptr;
  size_t size = 0, max = 0;
  F.req(&buf, &size, &max);
  size_t used = 0;
  for (const KernelSpan& s : F.pending) {
    std::memset(buf + used, 0, kRec);
    uint32_t kind = cudalib::kActivityConcurrentKernel, dev = uint32_t(s.device);
    std::memcpy(buf + used, &kind, 4);
    std::memcpy(buf + used + 16, &s.start_ns, 8);
    std::memcpy(buf + used + 24, &s.end_ns, 8);
    std::memcpy(buf + used + 40, &dev, 4);
    used += kRec;
  }
  F.pending.clear();
  F.done(nullptr, 0, buf, size, used);
  return 0;
}
int CuptiNext(uint8_t* buf, size_t valid, void** rec) {
  if (fault("cuptiActivityGetNextRecord")) return kCuptiFault;
  uint8_t* next = *rec ? static_cast<uint8_t*>(*rec) + kRec : buf;
  if (next + kRec > buf + valid) return cudalib::kCuptiMaxLimitReached;
  *rec = next;
  return 0;
}

// ---- NCCL
const char* NcclErrorString(int r) { return r == kNcclFault ? "unhandled cuda error (injected)" : nullptr; }
int NcclGetVersion(int* v) {
  if (fault("ncclGetVersion")) return kNcclFault;
  *v = 22809;
  return 0;
}
int NcclGetUniqueId(cudalib::NcclUniqueId* id) {
  if (fault("ncclGetUniqueId")) return kNcclFault;
  for (int i = 0; i < 128; ++i) id->internal[i] = char((i * 37 + 11) & 0xff);
  return 0;
}
int NcclCommInitAll(cudalib::NcclComm* comms, int ndev, const int*) {
  if (fault("ncclCommInitAll")) return kNcclFault;
  for (int i = 0; i < ndev; ++i) comms[i] = reinterpret_cast<void*>(uintptr_t(0x1000 + i));
  X.live["comm"] += ndev;
  return 0;
}
int NcclCommInitRankConfig(cudalib::NcclComm* c, int nranks, cudalib::NcclUniqueId id, int rank,
                           cudalib::NcclConfig* config) {
  if (fault("ncclCommInitRankConfig")) return kNcclFault;
  N.inits++;
  N.init_devices.push_back(F.current);
  N.nranks = nranks;
  N.rank = rank;
  N.config = *config;
  std::memcpy(N.id, id.internal, sizeof(N.id));
  *c = &N;
  X.live["comm"]++;
  return cudalib::kNcclInProgress;
}
int NcclCommGetAsyncError(cudalib::NcclComm, int* st) {
  if (fault("ncclCommGetAsyncError")) return kNcclFault;
  N.polls++;
  if (N.pending > 0) {
    N.pending--;
    *st = cudalib::kNcclInProgress;
  } else {
    *st = N.settled;
  }
  return 0;
}
int NcclCommAbort(cudalib::NcclComm) {
  X.live["comm"]--;
  N.aborts++;
  return fault("ncclCommAbort") ? kNcclFault : 0;
}
int NcclCommDestroy(cudalib::NcclComm) {
  X.live["comm"]--;
  N.destroys++;
  return fault("ncclCommDestroy") ? kNcclFault : 0;
}
int NcclGroupStart() { return fault("ncclGroupStart") ? kNcclFault : 0; }
int NcclGroupEnd() {
  if (fault("ncclGroupEnd")) {
    N.group.clear();
    return kNcclFault;
  }
  if (!N.group.empty()) {
    std::vector<float> sum(N.group[0].count, 0.0f);
    for (const auto& g : N.group)
      for (uint64_t e = 0; e < g.count && e < sum.size(); ++e) sum[e] += g.buf[e];
    for (const auto& g : N.group) {
      std::memcpy(g.buf, sum.data(), std::min<uint64_t>(g.count, sum.size()) * 4);
      kernel(g.device, 1'000'000);
    }
  }
  N.group.clear();
  return 0;
}
int NcclAllReduce(const void* send, void* recv, size_t count, int, int, cudalib::NcclComm, cu::Stream s) {
  if (fault("ncclAllReduce")) return kNcclFault;
  if (send != recv) std::memcpy(recv, send, count * 4);
  N.group.push_back({static_cast<float*>(recv), count, device_of(s)});
  return 0;
}
int NcclSend(const void* buf, size_t count, int, int peer, cudalib::NcclComm comm, cu::Stream) {
  if (fault("ncclSend")) return kNcclFault;
  N.send_peer = peer;
  const auto* b = static_cast<const unsigned char*>(buf);
  (comm == &N ? N.wire : N.local_wire).assign(b, b + count * 4);
  return 0;
}
int NcclRecv(void* buf, size_t count, int, int peer, cudalib::NcclComm comm, cu::Stream s) {
  if (fault("ncclRecv")) return kNcclFault;
  N.recv_peer = peer;
  const std::vector<unsigned char>& wire = comm == &N ? N.wire : N.local_wire;
  if (wire.empty()) {  // nothing was sent: the receive never completes (until aborted)
    N.not_ready = 1 << 30;
    return cudalib::kNcclInProgress;
  }
  std::memcpy(buf, wire.data(), std::min(wire.size(), count * 4));
  kernel(device_of(s), 5'000'000);  // a 5 ms receive kernel
  // A non-blocking communicator (the link ends' ncclCommInitRankConfig) answers in progress; the
  // blocking ones of ncclCommInitAll answer success.
  return comm == &N ? cudalib::kNcclInProgress : cudalib::kNcclSuccess;
}

}  // namespace

bool Faults::none_live(std::string* left) const {
  left->clear();
  for (const auto& [what, n] : live)
    if (n != 0) *left += (left->empty() ? "" : ", ") + what + " " + std::to_string(n);
  return left->empty();
}

void reset() {
  F = FakeState{};
  N = FakeNccl{};
  X = Faults{};
}

cudalib::Libs fake_libs(bool with_blas) {
  cudalib::Libs L;
  L.have_cu = true;
  L.cu.GetErrorString = GetErrorString;
  L.cu.DriverGetVersion = DriverGetVersion;
  L.cu.DeviceGetCount = DeviceGetCount;
  L.cu.DeviceGet = DeviceGet;
  L.cu.DeviceGetUuid = DeviceGetUuid;
  L.cu.DeviceGetAttribute = DeviceGetAttribute;
  L.cu.DevicePrimaryCtxRetain = PrimaryCtxRetain;
  L.cu.CtxSetCurrent = CtxSetCurrent;
  L.cu.MemAlloc = MemAlloc;
  L.cu.MemFree = MemFree;
  L.cu.MemcpyHtoD = HtoD;
  L.cu.MemcpyDtoH = DtoH;
  L.cu.StreamSynchronize = StreamSync;
  L.cu.EventCreate = EventCreate;
  L.cu.EventRecord = EventRecord;
  L.cu.EventElapsedTime = EventElapsedTime;
  L.cu.EventDestroy = EventDestroy;
  L.drv.MemGetInfo = MemGetInfo;
  L.drv.DeviceGetName = DeviceGetName;
  L.drv.CtxGetStreamPriorityRange = PriorityRange;
  L.drv.StreamCreateWithPriority = StreamCreateWithPriority;
  L.drv.StreamDestroy = StreamDestroy;
  L.drv.StreamQuery = StreamQuery;
  L.drv.DevicePrimaryCtxRelease = PrimaryCtxRelease;
  if (with_blas) {
    L.have_blas = true;
    L.blas = {LtCreate,      LtDestroy,  LtVersion,   DescCreate, DescDestroy, LayoutCreate,
              LayoutDestroy, PrefCreate, PrefDestroy, PrefSet,    Heuristic,   Matmul, LtStatusString};
  } else {
    L.missing = "libcublasLt.so.13 not found";
  }
  L.missing += std::string(L.missing.empty() ? "" : "; ") + "libnccl.so.2 not found";
  L.have_cupti = true;
  L.cupti = {CuptiVersion, CuptiEnable, CuptiDisable, CuptiRegister, CuptiFlush, CuptiNext, CuptiResultString};
  return L;
}

cudalib::Libs nccl_libs() {
  cudalib::Libs L = fake_libs();
  L.missing = "";
  L.have_nccl = true;
  L.nccl.GetVersion = NcclGetVersion;
  L.nccl.CommInitAll = NcclCommInitAll;
  L.nccl.CommDestroy = NcclCommDestroy;
  L.nccl.CommAbort = NcclCommAbort;
  L.nccl.GroupStart = NcclGroupStart;
  L.nccl.GroupEnd = NcclGroupEnd;
  L.nccl.AllReduce = NcclAllReduce;
  L.nccl.Send = NcclSend;
  L.nccl.Recv = NcclRecv;
  L.nccl.GetUniqueId = NcclGetUniqueId;
  L.nccl.CommInitRankConfig = NcclCommInitRankConfig;
  L.nccl.CommGetAsyncError = NcclCommGetAsyncError;
  L.nccl.GetErrorString = NcclErrorString;
  return L;
}

}  // namespace scout::testing::fakecuda
