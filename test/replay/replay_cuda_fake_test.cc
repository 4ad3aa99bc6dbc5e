// The CUDA replay backend (replay/cuda_backend.h) against a fake function table: device memory
// is host memory, the fake cuBLASLt computes fp32 GEMMs on the host, the fake CUPTI delivers
// CONCURRENT_KERNEL records (1 ms per matmul on device 0, 2 ms on device 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "replay/cuda_backend.h"
#include "scout/fingerprint.h"
#include "scout/shm_format.h"

namespace {

using namespace scout::replay;
namespace cu = scout::fp::gpu::cu;

struct Layout {
  int type;
  uint64_t rows, cols;
};

struct FakeState {
  int current = -1;
  size_t free_bytes = size_t(80) << 30;
  int heuristic = 0;
  int matmuls = 0;
  int stream_priority = 99;
  int64_t allocated = 0, peak = 0;
  std::map<uint64_t, size_t> sizes;
  std::vector<KernelSpan> pending;
  cudalib::BufferRequested req = nullptr;
  cudalib::BufferCompleted done = nullptr;
  uint64_t clock = 1'000'000'000;
  bool fail_alloc = false;  // cuMemAlloc answers CUDA_ERROR_OUT_OF_MEMORY
} F;

constexpr size_t kRec = 216;  // sizeof(CUpti_ActivityKernel10)

cu::Result Init(unsigned) { return 0; }
cu::Result DriverGetVersion(int* v) {
  *v = 13000;
  return 0;
}
cu::Result DeviceGetCount(int* n) {
  *n = 2;
  return 0;
}
cu::Result DeviceGet(cu::Device* d, int i) {
  *d = i;
  return 0;
}
cu::Result DeviceGetUuid(cu::Uuid* u, cu::Device d) {
  std::memset(u->bytes, d + 1, 16);
  return 0;
}
cu::Result DeviceGetAttribute(int* v, int attr, cu::Device) {
  *v = attr == cu::kAttrMultiprocessorCount ? 132 : 0;
  return 0;
}
cu::Result PrimaryCtxRetain(cu::Context* c, cu::Device d) {
  *c = reinterpret_cast<void*>(uintptr_t(d + 1));
  return 0;
}
cu::Result CtxSetCurrent(cu::Context c) {
  F.current = int(reinterpret_cast<uintptr_t>(c)) - 1;
  return 0;
}
cu::Result MemAlloc(cu::DevicePtr* p, size_t n) {
  if (F.fail_alloc) {
    *p = 0;
    return 2;
  }
  void* m = std::malloc(n);
  *p = reinterpret_cast<uintptr_t>(m);
  F.sizes[*p] = n;
  F.allocated += int64_t(n);
  F.peak = std::max(F.peak, F.allocated);
  return m ? 0 : 2;
}
cu::Result MemFree(cu::DevicePtr p) {
  F.allocated -= int64_t(F.sizes[p]);
  std::free(reinterpret_cast<void*>(p));
  return 0;
}
cu::Result HtoD(cu::DevicePtr d, const void* s, size_t n) {
  std::memcpy(reinterpret_cast<void*>(d), s, n);
  return 0;
}
cu::Result DtoH(void* d, cu::DevicePtr s, size_t n) {
  std::memcpy(d, reinterpret_cast<void*>(s), n);
  return 0;
}
cu::Result StreamSync(cu::Stream) { return 0; }
cu::Result EventCreate(cu::Event* e, unsigned) {
  *e = nullptr;
  return 0;
}
cu::Result EventRecord(cu::Event, cu::Stream) { return 0; }
cu::Result MemGetInfo(size_t* f, size_t* t) {
  *f = F.free_bytes;
  *t = size_t(141) << 30;
  return 0;
}
cu::Result DeviceGetName(char* n, int len, cu::Device) {
  std::snprintf(n, size_t(len), "Fake GPU");
  return 0;
}
cu::Result PriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -5;
  return 0;
}
cu::Result StreamCreateWithPriority(cu::Stream* s, unsigned, int prio) {
  F.stream_priority = prio;
  *s = reinterpret_cast<void*>(uintptr_t(0x100 + F.current));
  return 0;
}
cu::Result StreamDestroy(cu::Stream) { return 0; }

int LtCreate(cudalib::LtHandle* h) {
  *h = &F;
  return 0;
}
int LtDestroy(cudalib::LtHandle) { return 0; }
size_t LtVersion() { return 130100; }
int DescCreate(cudalib::LtDesc* d, int, int) {
  *d = &F;
  return 0;
}
int DescDestroy(cudalib::LtDesc) { return 0; }
int LayoutCreate(cudalib::LtLayout* l, int type, uint64_t rows, uint64_t cols, int64_t) {
  *l = new Layout{type, rows, cols};
  return 0;
}
int LayoutDestroy(cudalib::LtLayout l) {
  delete static_cast<Layout*>(l);
  return 0;
}
int PrefCreate(cudalib::LtPref* p) {
  *p = &F;
  return 0;
}
int PrefDestroy(cudalib::LtPref) { return 0; }
int PrefSet(cudalib::LtPref, int, const void*, size_t) { return 0; }
int Heuristic(cudalib::LtHandle, cudalib::LtDesc, cudalib::LtLayout, cudalib::LtLayout, cudalib::LtLayout,
              cudalib::LtLayout, cudalib::LtPref, int, cudalib::LtHeuristic* r, int* got) {
  F.heuristic++;
  std::memset(r, 0, sizeof(*r));
  r->algo.data[0] = 42;
  *got = 1;
  return 0;
}
int Matmul(cudalib::LtHandle, cudalib::LtDesc, const void* alpha, const void* a, cudalib::LtLayout al, const void* b,
           cudalib::LtLayout bl, const void*, const void*, cudalib::LtLayout, void* d, cudalib::LtLayout,
           const cudalib::LtAlgo* algo, void*, size_t, cu::Stream) {
  if (algo->data[0] != 42) return 7;
  const Layout& A = *static_cast<Layout*>(al);
  const Layout& B = *static_cast<Layout*>(bl);
  const uint64_t m = A.rows, k = A.cols, n = B.cols;
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  std::vector<float> out(m * n, 0.0f);
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t kk = 0; kk < k; ++kk)
      for (uint64_t i = 0; i < m; ++i)
        out[i + j * m] += x[i + kk * m] * y[kk + j * k] * *static_cast<const float*>(alpha);
  std::memcpy(d, out.data(), out.size() * 4);
  F.matmuls++;
  KernelSpan s{F.current, 0, 0};
  const uint64_t wall =
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count());
  F.clock = std::max(F.clock, wall);  // CUPTI stamps are CLOCK_REALTIME
  s.start_ns = F.clock;
  s.end_ns = F.clock + 1'000'000ull * uint64_t(F.current + 1);
  F.clock = s.end_ns + 10;
  F.pending.push_back(s);
  return 0;
}

int CuptiVersion(uint32_t* v) {
  *v = 130001;
  return 0;
}
int CuptiEnable(int kind) { return kind == cudalib::kActivityConcurrentKernel ? 0 : 1; }
int CuptiDisable(int) { return 0; }
int CuptiRegister(cudalib::BufferRequested r, cudalib::BufferCompleted d) {
  F.req = r;
  F.done = d;
  return 0;
}
int CuptiFlush(uint32_t) {
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
  uint8_t* next = *rec ? static_cast<uint8_t*>(*rec) + kRec : buf;
  if (next + kRec > buf + valid) return cudalib::kCuptiMaxLimitReached;
  *rec = next;
  return 0;
}

// The fake NCCL of a replay communicator across nodes: one end at a time (the sender's Send
// leaves the payload on the "wire", the receiver's Recv takes it); the communicator's state
// stays ncclInProgress for `pending` polls, then is `settled`.
struct FakeNccl {
  int inits = 0, nranks = -1, rank = -1;
  cudalib::NcclConfig config;
  unsigned char id[128] = {};
  int pending = 0;
  int settled = cudalib::kNcclSuccess;
  int polls = 0;
  int not_ready = 0;  // StreamQuery answers kNotReady this many times
  int aborts = 0, destroys = 0;
  int send_peer = -1, recv_peer = -1;
  std::vector<unsigned char> wire;
} N;

int NcclGetVersion(int* v) {
  *v = 22809;
  return 0;
}
int NcclGetUniqueId(cudalib::NcclUniqueId* id) {
  for (int i = 0; i < 128; ++i) id->internal[i] = char((i * 37 + 11) & 0xff);
  return 0;
}
int NcclCommInitRankConfig(cudalib::NcclComm* c, int nranks, cudalib::NcclUniqueId id, int rank,
                           cudalib::NcclConfig* config) {
  N.inits++;
  N.nranks = nranks;
  N.rank = rank;
  N.config = *config;
  std::memcpy(N.id, id.internal, sizeof(N.id));
  *c = &N;
  return cudalib::kNcclInProgress;
}
int NcclCommGetAsyncError(cudalib::NcclComm, int* st) {
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
  N.aborts++;
  return 0;
}
int NcclCommDestroy(cudalib::NcclComm) {
  N.destroys++;
  return 0;
}
int NcclSend(const void* buf, size_t count, int, int peer, cudalib::NcclComm, cu::Stream) {
  N.send_peer = peer;
  const auto* b = static_cast<const unsigned char*>(buf);
  N.wire.assign(b, b + count * 4);
  return 0;
}
int NcclRecv(void* buf, size_t count, int, int peer, cudalib::NcclComm, cu::Stream) {
  N.recv_peer = peer;
  std::memcpy(buf, N.wire.data(), std::min(N.wire.size(), count * 4));
  const uint64_t wall =
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count());
  F.clock = std::max(F.clock, wall);
  F.pending.push_back({F.current, F.clock, F.clock + 5'000'000});  // a 5 ms receive kernel
  F.clock += 5'000'010;
  return cudalib::kNcclInProgress;
}
cu::Result StreamQuery(cu::Stream) {
  if (N.not_ready > 0) {
    N.not_ready--;
    return cudalib::kNotReady;
  }
  return 0;
}

cudalib::Libs fake_libs(bool with_blas = true) {
  cudalib::Libs L;
  L.have_cu = true;
  L.cu.Init = Init;
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
  L.drv = {MemGetInfo, DeviceGetName, PriorityRange, StreamCreateWithPriority, StreamDestroy, StreamQuery};
  if (with_blas) {
    L.have_blas = true;
    L.blas = {LtCreate,      LtDestroy,  LtVersion,   DescCreate, DescDestroy, LayoutCreate,
              LayoutDestroy, PrefCreate, PrefDestroy, PrefSet,    Heuristic,   Matmul};
  } else {
    L.missing = "libcublasLt.so.13 not found";
  }
  L.missing += std::string(L.missing.empty() ? "" : "; ") + "libnccl.so.2 not found";
  L.have_cupti = true;
  L.cupti = {CuptiVersion, CuptiEnable, CuptiDisable, CuptiRegister, CuptiFlush, CuptiNext};
  return L;
}

Recipe gemm(int64_t m, int64_t n, int64_t k) {
  RecipePlan p;
  p.gemms = {{m, n, k, "fp32"}};
  p.gemm_iters = 3;
  return build_recipes(p)[0];
}

TEST(ReplayCudaFake, DescribesTheGpuAndItsLibraries) {
  F = FakeState{};
  cudalib::Libs L = fake_libs();
  CudaBackend b(&L, BackendLimits{});
  GpuInfo g = b.describe({4, "GPU-02020202-0202-0202-0202-020202020202", -1});
  EXPECT_TRUE(g.ready) << g.reason;
  EXPECT_EQ(g.model, "Fake GPU");
  EXPECT_EQ(g.sm_count, 132);
  EXPECT_EQ(g.libs, "cuda 13000; cublasLt 130100");
  EXPECT_EQ(F.current, 1);          // found by UUID, not by the (unknown) ordinal
  EXPECT_EQ(F.stream_priority, 0);  // the lowest priority
  GpuInfo none = b.describe({5, "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff", 7});
  EXPECT_FALSE(none.ready);
  EXPECT_EQ(none.reason, "GPU GPU-ffffffff-ffff-ffff-ffff-ffffffffffff is not on this host");
}

TEST(ReplayCudaFake, GemmIsComputedFingerprintedAndTimedWithCupti) {
  F = FakeState{};
  cudalib::Libs L = fake_libs();
  CudaBackend b(&L, BackendLimits{});
  Recipe r = gemm(32, 16, 8);
  Sample s0 = b.run_gemm(r, {0, "", 0}, 0);
  Sample s1 = b.run_gemm(r, {1, "", 1}, 0);
  ASSERT_EQ(s0.status, SampleStatus::kOk) << s0.reason;
  ASSERT_EQ(s1.status, SampleStatus::kOk) << s1.reason;
  // The reference: D = A x B on the host from the same seeded inputs.
  std::vector<unsigned char> a = gemm_input(r, 'A'), bb = gemm_input(r, 'B');
  const float* x = reinterpret_cast<const float*>(a.data());
  const float* y = reinterpret_cast<const float*>(bb.data());
  std::vector<float> d(32 * 16, 0.0f);
  for (int j = 0; j < 16; ++j)
    for (int kk = 0; kk < 8; ++kk)
      for (int i = 0; i < 32; ++i) d[size_t(i + j * 32)] += x[i + kk * 32] * y[kk + j * 8];
  EXPECT_EQ(s0.fp, scout::fp::fingerprint(d.data(), d.size() * 4, scout::shm::kTypeFloat32, nullptr));
  EXPECT_EQ(s1.fp, s0.fp);
  // 3 timed matmuls after one warm-up; CUPTI kernel time per device.
  EXPECT_EQ(s0.ns, 3'000'000);
  EXPECT_EQ(s1.ns, 6'000'000);
  EXPECT_EQ(F.matmuls, 8);
  EXPECT_EQ(b.heuristic_calls(), 1);  // chosen once, pinned on every GPU
  EXPECT_EQ(F.allocated, 0);          // everything freed
}

TEST(ReplayCudaFake, MemoryLimitSkipsWithTheNumbers) {
  F = FakeState{};
  cudalib::Libs L = fake_libs();
  BackendLimits lim;
  lim.max_mem = 40 << 20;
  CudaBackend b(&L, lim);
  Sample s = b.run_gemm(gemm(2048, 2048, 2048), {0, "", 0}, 0);
  EXPECT_EQ(s.status, SampleStatus::kSkipped);
  EXPECT_EQ(s.reason, "needs 83886080 bytes of device memory, replay may use 41943040");
  F.free_bytes = size_t(1) << 30;  // all but the 1 GiB margin is in use
  Sample t = b.run_gemm(gemm(8, 8, 8), {0, "", 0}, 0);
  EXPECT_EQ(t.status, SampleStatus::kSkipped);
  EXPECT_EQ(t.reason, "needs 33555200 bytes of device memory, replay may use 0");
  EXPECT_EQ(F.peak, 0);  // nothing was allocated
}

TEST(ReplayCudaFake, MissingLibrariesSkipTheirRecipes) {
  F = FakeState{};
  cudalib::Libs L = fake_libs(false);
  CudaBackend b(&L, BackendLimits{});
  Sample s = b.run_gemm(gemm(8, 8, 8), {0, "", 0}, 0);
  EXPECT_EQ(s.status, SampleStatus::kSkipped);
  EXPECT_EQ(s.reason, "libcublasLt.so.13 not found; libnccl.so.2 not found");
  RecipePlan p;
  p.links = {{0, 1}};
  Sample l = b.run_link(build_recipes(p)[0], {0, "", 0}, {1, "", 1}, 0);
  EXPECT_EQ(l.status, SampleStatus::kSkipped);
  EXPECT_EQ(l.peer, 0);
}

TEST(ReplayCudaFake, UuidText) {
  cu::Uuid u;
  for (int i = 0; i < 16; ++i) u.bytes[i] = static_cast<unsigned char>(i * 17);
  EXPECT_EQ(uuid_text(u), "GPU-00112233-4455-6677-8899-aabbccddeeff");
}

// fake_libs with the fake NCCL and cuStreamQuery.
cudalib::Libs nccl_libs() {
  cudalib::Libs L = fake_libs();
  L.missing = "";
  L.have_nccl = true;
  L.nccl.GetVersion = NcclGetVersion;
  L.nccl.CommDestroy = NcclCommDestroy;
  L.nccl.CommAbort = NcclCommAbort;
  L.nccl.Send = NcclSend;
  L.nccl.Recv = NcclRecv;
  L.nccl.GetUniqueId = NcclGetUniqueId;
  L.nccl.CommInitRankConfig = NcclCommInitRankConfig;
  L.nccl.CommGetAsyncError = NcclCommGetAsyncError;
  return L;
}

int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Recipe link_recipe() {
  RecipePlan p;
  p.links = {{0, 1}};
  p.link_bytes = 4096;
  return build_recipes(p)[0];
}

std::string fake_uid_hex() {
  std::string hex;
  char b[3];
  for (int i = 0; i < 128; ++i) {
    std::snprintf(b, sizeof(b), "%02x", (i * 37 + 11) & 0xff);
    hex += b;
  }
  return hex;
}

TEST(ReplayCudaFake, LinkUniqueIdIsTheHexOfNcclsId) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  std::string err;
  const std::string uid = b.link_unique_id({0, "", 0}, &err);
  EXPECT_EQ(uid, fake_uid_hex());
  EXPECT_EQ(uid.size(), 256u);
  EXPECT_EQ(uid.substr(0, 8), "0b30557a");
  EXPECT_EQ(err, "");

  cudalib::Libs none = fake_libs();
  CudaBackend nb(&none, BackendLimits{});
  EXPECT_EQ(nb.link_unique_id({0, "", 0}, &err), "");
  EXPECT_EQ(err, "libnccl.so.2 not found");
}

TEST(ReplayCudaFake, LinkEndsSendAndReceiveOverANonBlockingCommunicator) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  const Recipe r = link_recipe();
  ASSERT_EQ(r.id, "link:0->1");
  ASSERT_EQ(r.rounds, 2);
  std::string err;
  const std::string uid = b.link_unique_id({0, "", 0}, &err);

  N.pending = 2;  // the communicator settles after two polls
  std::vector<Sample> sent = b.run_link_end(r, {0, "", 0}, {1, "", 1}, true, uid, mono_ns() + 5'000'000'000);
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(N.rank, 0);
  EXPECT_EQ(N.send_peer, 1);
  ASSERT_EQ(N.wire.size(), 4096u);
  const uint64_t payload_fp = scout::fp::fingerprint(N.wire.data(), 4096, scout::shm::kTypeFloat32, nullptr);
  EXPECT_EQ(N.destroys, 1);

  N.pending = 3;
  N.not_ready = 2;  // the receive is still running for two queries
  N.polls = 0;
  std::vector<Sample> got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, uid, mono_ns() + 5'000'000'000);
  ASSERT_EQ(got.size(), 2u);
  for (int round = 0; round < 2; ++round) {
    const Sample& s = got[size_t(round)];
    EXPECT_EQ(s.status, SampleStatus::kOk) << s.reason;
    EXPECT_EQ(s.recipe, "link:0->1");
    EXPECT_EQ(s.global_rank, 1);
    EXPECT_EQ(s.round, round);
    EXPECT_EQ(s.peer, 0);
    EXPECT_TRUE(s.expected_known);
    EXPECT_EQ(s.expected_fp, payload_fp);
    EXPECT_EQ(s.fp, payload_fp);
    EXPECT_EQ(s.ns, 5'000'000);  // CUPTI's receive kernel on device 1
  }
  EXPECT_EQ(N.inits, 2);
  EXPECT_EQ(N.nranks, 2);
  EXPECT_EQ(N.rank, 1);
  EXPECT_EQ(N.recv_peer, 0);
  EXPECT_EQ(N.polls, 4 + 1 + 1);  // init: 3 in progress, then success; each receive: 1
  EXPECT_EQ(N.config.blocking, 0);
  EXPECT_EQ(N.config.size, 80u);  // sizeof(ncclConfig_t) of NCCL 2.28
  EXPECT_EQ(N.config.magic, 0xcafebeefu);
  EXPECT_EQ(N.config.version, 22809u);
  EXPECT_EQ(N.config.cga_cluster_size, cudalib::NcclConfig::kUndefInt);
  EXPECT_EQ(N.config.nvlink_centric_sched, cudalib::NcclConfig::kUndefInt);
  EXPECT_EQ(N.config.net_name, nullptr);
  EXPECT_EQ(bytes_hex(N.id, sizeof(N.id)), uid);
  EXPECT_EQ(N.destroys, 2);
  EXPECT_EQ(N.aborts, 0);
  EXPECT_EQ(F.current, 1);
  EXPECT_EQ(F.allocated, 0);
}

TEST(ReplayCudaFake, LinkEndWhosePeerNeverJoinsIsAbortedAtTheDeadline) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  const Recipe r = link_recipe();
  N.pending = 1 << 30;  // ncclInProgress for ever
  const int64_t t0 = mono_ns();
  std::vector<Sample> got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, fake_uid_hex(), t0 + 50'000'000);
  const int64_t took = mono_ns() - t0;
  EXPECT_GE(took, 50'000'000);
  EXPECT_LT(took, 500'000'000);
  ASSERT_EQ(got.size(), 2u);
  for (int round = 0; round < 2; ++round) {
    const Sample& s = got[size_t(round)];
    EXPECT_EQ(s.status, SampleStatus::kFailed);
    EXPECT_EQ(s.reason, "the peer did not join the replay communicator by the deadline (aborted)");
    EXPECT_EQ(s.global_rank, 1);
    EXPECT_EQ(s.round, round);
    EXPECT_EQ(s.peer, 0);
  }
  EXPECT_EQ(N.inits, 1);
  EXPECT_EQ(N.aborts, 1);
  EXPECT_EQ(N.destroys, 0);
  EXPECT_EQ(N.recv_peer, -1);  // nothing was posted
  EXPECT_EQ(F.peak, 0);        // nothing was allocated

  // The sender's end answers one sample, its own.
  N = FakeNccl{};
  N.pending = 1 << 30;
  std::vector<Sample> sent = b.run_link_end(r, {0, "", 0}, {1, "", 1}, true, fake_uid_hex(), mono_ns() + 20'000'000);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].global_rank, 0);
  EXPECT_EQ(sent[0].peer, -1);
  EXPECT_EQ(sent[0].status, SampleStatus::kFailed);
  EXPECT_EQ(sent[0].reason, "the peer did not join the replay communicator by the deadline (aborted)");
  EXPECT_EQ(N.aborts, 1);
}

TEST(ReplayCudaFake, LinkEndWithABadIdOrAFailedInit) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  const Recipe r = link_recipe();
  std::vector<Sample> got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, "0123456789", mono_ns() + 1'000'000'000);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, SampleStatus::kFailed);
  EXPECT_EQ(got[0].reason, "bootstrap id is not 128 bytes of hex");
  EXPECT_EQ(N.inits, 0);

  N.settled = 3;  // ncclInternalError
  got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, fake_uid_hex(), mono_ns() + 1'000'000'000);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].status, SampleStatus::kFailed);
  EXPECT_EQ(got[1].reason, "replay communicator init failed (3)");
  EXPECT_EQ(N.aborts, 1);
}

TEST(ReplayCudaFake, LinkEndWithoutDeviceMemoryIsSkippedAndAborted) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  const Recipe r = link_recipe();
  F.fail_alloc = true;
  std::vector<Sample> got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, fake_uid_hex(), mono_ns() + 1'000'000'000);
  ASSERT_EQ(got.size(), 2u);
  for (const Sample& s : got) {
    EXPECT_EQ(s.status, SampleStatus::kSkipped);
    EXPECT_EQ(s.reason, "device memory allocation failed");
    EXPECT_EQ(s.peer, 0);
  }
  EXPECT_EQ(N.recv_peer, -1);  // nothing was posted into no buffer
  EXPECT_EQ(N.aborts, 1);
  EXPECT_EQ(N.destroys, 0);
  std::vector<Sample> sent = b.run_link_end(r, {0, "", 0}, {1, "", 1}, true, fake_uid_hex(), mono_ns() + 1'000'000'000);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].reason, "device memory allocation failed");
  EXPECT_EQ(N.send_peer, -1);
  EXPECT_EQ(N.aborts, 2);
}

}  // namespace
