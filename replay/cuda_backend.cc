#include "replay/cuda_backend.h"

#include "common/clock.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "scout/fingerprint.h"
#include "scout/shm_format.h"

namespace scout::replay {
namespace {

using shm::mono_ns;

constexpr size_t kCuptiBufBytes = 4 << 20;  // CUPTI recommends 1..10 MB per buffer
constexpr int64_t kWorkspaceBytes = 32 << 20;

// `need` bytes (unsigned: a payload of 2^63 bytes or more never passes) exceed `allowed`.
bool over_budget(uint64_t need, int64_t allowed) { return allowed < 0 || need > uint64_t(allowed); }

std::mutex g_spans_mu;
std::vector<KernelSpan> g_spans;
const cudalib::Cupti* g_cupti = nullptr;

void on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kCuptiBufBytes));
  *size = *buffer ? kCuptiBufBytes : 0;
  *max_records = 0;
}

void on_complete(void*, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (g_cupti && buffer) {
    void* rec = nullptr;
    std::lock_guard<std::mutex> lock(g_spans_mu);
    while (g_cupti->ActivityGetNextRecord(buffer, valid, &rec) == 0 && rec) {
      const auto* b = static_cast<const uint8_t*>(rec);
      uint32_t kind;
      std::memcpy(&kind, b, 4);
      if (int(kind) != cudalib::kActivityConcurrentKernel) continue;
      KernelSpan s;
      uint32_t dev;
      std::memcpy(&s.start_ns, b + cudalib::kKernelRecStart, 8);
      std::memcpy(&s.end_ns, b + cudalib::kKernelRecEnd, 8);
      std::memcpy(&dev, b + cudalib::kKernelRecDevice, 4);
      s.device = int(dev);
      if (s.start_ns && s.end_ns >= s.start_ns) g_spans.push_back(s);  // 0: no timestamp (CUPTI)
    }
  }
  std::free(buffer);
}


void sleep_us(int64_t us) {
  timespec ts{0, long(us * 1000)};
  nanosleep(&ts, nullptr);
}

uint64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

float seeded(uint64_t stream, uint64_t i) {
  uint64_t k[3] = {stream, i, 0x9E3779B97F4A7C15ull};
  uint64_t u = XXH64(k, sizeof(k), 0x5eed);
  return float(u >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

uint16_t to_half_bits(float f, bool bf16) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (bf16) {
    u += 0x7fff + ((u >> 16) & 1);
    return uint16_t(u >> 16);
  }
  // IEEE binary16, round to nearest (inputs are in [-1, 1): no overflow; tiny values flush).
  const uint32_t sign = (u >> 16) & 0x8000;
  const int exp = int((u >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return uint16_t(sign);
  uint32_t mant = u & 0x7fffff;
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  if ((mant >> 12) & 1) h++;
  return uint16_t(h);
}

// The host bytes of a seeded matrix of `n` elements.
std::vector<unsigned char> seeded_matrix(uint64_t stream, uint64_t n, const std::string& dtype) {
  const int eb = gemm_dtype_bytes(dtype);
  std::vector<unsigned char> out(n * uint64_t(eb));
  for (uint64_t i = 0; i < n; ++i) {
    float f = seeded(stream, i);
    if (eb == 4)
      std::memcpy(&out[i * 4], &f, 4);
    else {
      uint16_t h = to_half_bits(f, dtype == "bf16");
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

uint64_t text_hash(const std::string& s) { return XXH64(s.data(), s.size(), 0); }

Sample sample_of(const Recipe& r, const Participant& p, int round) {
  Sample s;
  s.recipe = r.id;
  s.global_rank = p.global_rank;
  s.gpu = p.gpu;
  s.round = round;
  return s;
}

Sample skip(Sample s, SampleStatus st, const std::string& why) {
  s.status = st;
  s.reason = why;
  return s;
}

}  // namespace

std::vector<unsigned char> gemm_input(const Recipe& r, char which) {
  const uint64_t n = which == 'A' ? uint64_t(r.gemm.m * r.gemm.k) : uint64_t(r.gemm.k * r.gemm.n);
  return seeded_matrix(r.seed ^ text_hash(r.id + which), n, r.gemm.dtype);
}

std::string uuid_text(const cu::Uuid& u) {
  char buf[64];
  const unsigned char* b = u.bytes;
  std::snprintf(buf, sizeof(buf), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

bool cupti_start(const cudalib::Cupti& c) {
  g_cupti = &c;
  if (c.ActivityRegisterCallbacks(&on_request, &on_complete) != 0) return false;
  return c.ActivityEnable(cudalib::kActivityConcurrentKernel) == 0;
}

std::vector<KernelSpan> cupti_take(const cudalib::Cupti& c) {
  c.ActivityFlushAll(cudalib::kFlushForced);
  std::lock_guard<std::mutex> lock(g_spans_mu);
  std::vector<KernelSpan> out;
  out.swap(g_spans);
  return out;
}

CudaBackend::CudaBackend(const cudalib::Libs* libs, BackendLimits limits) : L_(libs), limits_(limits) {
  if (L_->have_cupti) cupti_on_ = cupti_start(L_->cupti);
}

CudaBackend::~CudaBackend() {
  if (!L_->have_cu) return;
  for (auto& [dev, s] : streams_) {
    auto c = ctxs_.find(dev);
    if (c != ctxs_.end()) L_->cu.CtxSetCurrent(c->second);
    L_->drv.StreamDestroy(s);
  }
}

std::string CudaBackend::libs_text() const {
  std::string s;
  int v = 0;
  if (L_->have_cu && L_->cu.DriverGetVersion(&v) == 0) s += "cuda " + std::to_string(v);
  if (L_->have_blas) s += "; cublasLt " + std::to_string(L_->blas.GetVersion());
  if (L_->have_nccl && L_->nccl.GetVersion(&v) == 0) s += "; nccl " + std::to_string(v);
  return s;
}

bool CudaBackend::enter(const Participant& p, cu::Device* dev, std::string* why) {
  if (!L_->have_cu) {
    *why = L_->missing;
    return false;
  }
  int count = 0;
  L_->cu.DeviceGetCount(&count);
  int ordinal = -1;
  // The participant's GPU by UUID when the record has one, else by its CUDA ordinal.
  for (int i = 0; i < count && p.gpu.rfind("GPU-", 0) == 0; ++i) {
    cu::Device d;
    cu::Uuid u;
    if (L_->cu.DeviceGet(&d, i) == 0 && L_->cu.DeviceGetUuid(&u, d) == 0 && uuid_text(u) == p.gpu) ordinal = i;
  }
  if (ordinal < 0) ordinal = p.cuda_dev;
  if (ordinal < 0 || ordinal >= count) {
    *why = "GPU " + p.gpu + " is not on this host";
    return false;
  }
  if (L_->cu.DeviceGet(dev, ordinal) != 0) {
    *why = "cuDeviceGet failed";
    return false;
  }
  if (!ctxs_.count(*dev)) {
    cu::Context ctx = nullptr;
    if (L_->cu.DevicePrimaryCtxRetain(&ctx, *dev) != 0) {
      *why = "cannot open a context on GPU " + p.gpu;
      return false;
    }
    ctxs_[*dev] = ctx;
  }
  L_->cu.CtxSetCurrent(ctxs_[*dev]);
  if (!streams_.count(*dev)) {
    int least = 0, greatest = 0;
    L_->drv.CtxGetStreamPriorityRange(&least, &greatest);
    cu::Stream s = nullptr;
    if (L_->drv.StreamCreateWithPriority(&s, cu::kStreamNonBlocking, least) != 0) {
      *why = "cannot create a stream on GPU " + p.gpu;
      return false;
    }
    streams_[*dev] = s;
  }
  return true;
}

int64_t CudaBackend::budget_bytes(std::string* why) {
  size_t free_b = 0, total = 0;
  if (L_->drv.MemGetInfo(&free_b, &total) != 0) {
    *why = "cuMemGetInfo failed";
    return 0;
  }
  return std::max<int64_t>(0, std::min<int64_t>(limits_.max_mem, int64_t(free_b) - limits_.mem_margin));
}

int64_t CudaBackend::kernel_ns_since(uint64_t t0_ns, int device) {
  int64_t sum = 0;
  for (const KernelSpan& s : cupti_take(L_->cupti))
    if (s.device == device && s.start_ns >= t0_ns) sum += int64_t(s.end_ns - s.start_ns);
  return sum;
}

GpuInfo CudaBackend::describe(const Participant& p) {
  GpuInfo g;
  g.global_rank = p.global_rank;
  g.gpu = p.gpu;
  cu::Device dev;
  std::string why;
  if (!enter(p, &dev, &why)) {
    g.reason = why;
    return g;
  }
  char name[128] = {0};
  L_->drv.DeviceGetName(name, sizeof(name) - 1, dev);
  g.model = name;
  L_->cu.DeviceGetAttribute(&g.sm_count, cu::kAttrMultiprocessorCount, dev);
  g.libs = libs_text();
  size_t free_b = 0, total = 0;
  if (L_->drv.MemGetInfo(&free_b, &total) == 0) g.free_bytes = int64_t(free_b);
  g.ready = true;
  return g;
}

Sample CudaBackend::run_gemm(const Recipe& r, const Participant& p, int round) {
  Sample s = sample_of(r, p, round);
  if (!L_->have_blas) return skip(s, SampleStatus::kSkipped, L_->missing);
  const int eb = gemm_dtype_bytes(r.gemm.dtype);
  if (eb == 0) return skip(s, SampleStatus::kSkipped, "unsupported datatype " + r.gemm.dtype);
  cu::Device dev;
  std::string why;
  if (!enter(p, &dev, &why)) return skip(s, SampleStatus::kSkipped, why);
  const uint64_t m = uint64_t(r.gemm.m), n = uint64_t(r.gemm.n), k = uint64_t(r.gemm.k);
  // recipe_device_bytes: 128-bit arithmetic, saturated (no shape can wrap it).
  const uint64_t need = std::min<uint64_t>(recipe_device_bytes(r), UINT64_MAX - uint64_t(kWorkspaceBytes)) + uint64_t(kWorkspaceBytes);
  const int64_t allowed = budget_bytes(&why);
  if (over_budget(need, allowed))
    return skip(s, SampleStatus::kSkipped,
                "needs " + std::to_string(need) + " bytes of device memory, replay may use " + std::to_string(allowed) +
                    (why.empty() ? "" : " (" + why + ")"));
  const int dtype = eb == 4 ? cudalib::kDataR32F : r.gemm.dtype == "bf16" ? cudalib::kDataR16BF : cudalib::kDataR16F;
  const cu::Stream stream = streams_[dev];
  cu::DevicePtr a = 0, b = 0, d = 0, ws = 0;
  auto release = [&] {
    for (cu::DevicePtr x : {a, b, d, ws})
      if (x) L_->cu.MemFree(x);
  };
  if (L_->cu.MemAlloc(&a, m * k * eb) || L_->cu.MemAlloc(&b, k * n * eb) || L_->cu.MemAlloc(&d, m * n * eb) ||
      L_->cu.MemAlloc(&ws, kWorkspaceBytes)) {
    release();
    return skip(s, SampleStatus::kSkipped, "device memory allocation failed");
  }
  std::vector<unsigned char> ha = gemm_input(r, 'A');
  std::vector<unsigned char> hb = gemm_input(r, 'B');
  L_->cu.MemcpyHtoD(a, ha.data(), ha.size());
  L_->cu.MemcpyHtoD(b, hb.data(), hb.size());
  cudalib::LtHandle lt = nullptr;
  cudalib::LtDesc op = nullptr;
  cudalib::LtLayout la = nullptr, lb = nullptr, ld = nullptr;
  cudalib::LtPref pref = nullptr;
  std::string fail;
  const auto& B = L_->blas;
  if (B.Create(&lt) || B.MatmulDescCreate(&op, cudalib::kComputeType32F, cudalib::kDataR32F) ||
      B.MatrixLayoutCreate(&la, dtype, m, k, int64_t(m)) || B.MatrixLayoutCreate(&lb, dtype, k, n, int64_t(k)) ||
      B.MatrixLayoutCreate(&ld, dtype, m, n, int64_t(m)) || B.MatmulPreferenceCreate(&pref)) {
    fail = "cuBLASLt setup failed";
  }
  uint64_t ws_bytes = kWorkspaceBytes;
  if (fail.empty()) B.MatmulPreferenceSetAttribute(pref, cudalib::kPrefMaxWorkspaceBytes, &ws_bytes, sizeof(ws_bytes));
  if (fail.empty() && !algos_.count(r.id)) {
    cudalib::LtHeuristic h{};
    int got = 0;
    heuristic_calls_++;
    if (B.MatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &h, &got) || got < 1)
      fail = "no cuBLASLt algorithm for " + r.id;
    else
      algos_[r.id] = h.algo;
  }
  int64_t ns = -1;
  if (fail.empty()) {
    const float alpha = 1.0f, beta = 0.0f;
    // One untimed warm-up run (module loading, first-launch costs).
    if (B.Matmul(lt, op, &alpha, reinterpret_cast<void*>(a), la, reinterpret_cast<void*>(b), lb, &beta,
                 reinterpret_cast<void*>(d), ld, reinterpret_cast<void*>(d), ld, &algos_[r.id],
                 reinterpret_cast<void*>(ws), kWorkspaceBytes, stream) == 0)
      L_->cu.StreamSynchronize(stream);
    if (cupti_on_) cupti_take(L_->cupti);  // drop older spans
    const uint64_t t0 = wall_ns();
    cu::Event e0 = nullptr, e1 = nullptr;
    if (!cupti_on_) {
      L_->cu.EventCreate(&e0, cu::kEventDefault);
      L_->cu.EventCreate(&e1, cu::kEventDefault);
      L_->cu.EventRecord(e0, stream);
    }
    auto matmul = [&] {
      return B.Matmul(lt, op, &alpha, reinterpret_cast<void*>(a), la, reinterpret_cast<void*>(b), lb, &beta,
                      reinterpret_cast<void*>(d), ld, reinterpret_cast<void*>(d), ld, &algos_[r.id],
                      reinterpret_cast<void*>(ws), kWorkspaceBytes, stream);
    };
    int rc = 0;
    for (int i = 0; i < r.iters && rc == 0; ++i) rc = matmul();
    if (rc) {
      fail = "cublasLtMatmul failed";
    } else {
      if (!cupti_on_) L_->cu.EventRecord(e1, stream);
      L_->cu.StreamSynchronize(stream);
      if (cupti_on_) {
        ns = kernel_ns_since(t0, dev);
      } else {
        float ms = 0;
        L_->cu.EventElapsedTime(&ms, e0, e1);
        ns = int64_t(double(ms) * 1e6);
      }
    }
  }
  if (pref) B.MatmulPreferenceDestroy(pref);
  for (cudalib::LtLayout l : {la, lb, ld})
    if (l) B.MatrixLayoutDestroy(l);
  if (op) B.MatmulDescDestroy(op);
  if (lt) B.Destroy(lt);
  if (fail.empty()) {
    std::vector<unsigned char> hd(m * n * eb);
    L_->cu.MemcpyDtoH(hd.data(), d, hd.size());
    s.fp = fp::fingerprint(hd.data(), hd.size(),
                           eb == 4                                   ? shm::kTypeFloat32
                           : eb == 2 && dtype == cudalib::kDataR16BF ? shm::kTypeBfloat16
                                                                     : shm::kTypeFloat16,
                           nullptr);
    s.ns = ns;
  }
  release();
  return fail.empty() ? s : skip(s, SampleStatus::kFailed, fail);
}

Sample CudaBackend::run_link(const Recipe& r, const Participant& src, const Participant& dst, int round) {
  Sample s = sample_of(r, dst, round);
  s.peer = src.global_rank;
  if (!L_->have_nccl) return skip(s, SampleStatus::kSkipped, L_->missing);
  cu::Device ds, dd;
  std::string why;
  if (!enter(src, &ds, &why) || !enter(dst, &dd, &why))
    return skip(s, SampleStatus::kSkipped,
                why + " (members on other hosts need a replay communicator bootstrapped over the observers' channel)");
  const uint64_t count = r.bytes / 4;
  std::string need_why;
  if (over_budget(r.bytes, budget_bytes(&need_why)))
    return skip(s, SampleStatus::kSkipped, "link payload exceeds the replay memory limit");
  std::vector<float> payload(count);
  for (uint64_t i = 0; i < count; ++i) payload[i] = seeded(r.seed ^ uint64_t(src.global_rank) * 0x100000001b3ull, i);
  s.expected_known = true;
  s.expected_fp = fp::fingerprint(payload.data(), count * 4, shm::kTypeFloat32, nullptr);
  int devs[2] = {ds, dd};
  cudalib::NcclComm comms[2] = {nullptr, nullptr};
  if (L_->nccl.CommInitAll(comms, 2, devs)) return skip(s, SampleStatus::kFailed, "ncclCommInitAll failed");
  cu::DevicePtr sb = 0, rb = 0;
  L_->cu.CtxSetCurrent(ctxs_[ds]);
  L_->cu.MemAlloc(&sb, count * 4);
  L_->cu.MemcpyHtoD(sb, payload.data(), count * 4);
  L_->cu.CtxSetCurrent(ctxs_[dd]);
  L_->cu.MemAlloc(&rb, count * 4);
  if (cupti_on_) cupti_take(L_->cupti);
  const uint64_t t0 = wall_ns();
  L_->nccl.GroupStart();
  L_->nccl.Send(reinterpret_cast<void*>(sb), count, cudalib::kNcclFloat32, 1, comms[0], streams_[ds]);
  L_->nccl.Recv(reinterpret_cast<void*>(rb), count, cudalib::kNcclFloat32, 0, comms[1], streams_[dd]);
  const int rc = L_->nccl.GroupEnd();
  L_->cu.CtxSetCurrent(ctxs_[ds]);
  L_->cu.StreamSynchronize(streams_[ds]);
  L_->cu.CtxSetCurrent(ctxs_[dd]);
  L_->cu.StreamSynchronize(streams_[dd]);
  s.ns = cupti_on_ ? kernel_ns_since(t0, dd) : int64_t(wall_ns() - t0);
  std::vector<float> got(count);
  L_->cu.MemcpyDtoH(got.data(), rb, count * 4);
  s.fp = fp::fingerprint(got.data(), count * 4, shm::kTypeFloat32, nullptr);
  L_->cu.MemFree(rb);
  L_->cu.CtxSetCurrent(ctxs_[ds]);
  L_->cu.MemFree(sb);
  for (auto c : comms) L_->nccl.CommDestroy(c);
  return rc ? skip(s, SampleStatus::kFailed, "NCCL send/recv failed") : s;
}

std::string CudaBackend::link_unique_id(const Participant& self, std::string* error) {
  if (!L_->have_nccl) {
    *error = L_->missing;
    return "";
  }
  cudalib::NcclUniqueId id{};
  if (L_->nccl.GetUniqueId(&id) != cudalib::kNcclSuccess) {
    *error = "ncclGetUniqueId failed";
    return "";
  }
  return bytes_hex(id.internal, sizeof(id.internal));
}

std::vector<Sample> CudaBackend::run_link_end(const Recipe& r, const Participant& self, const Participant& peer,
                                              bool sender, const std::string& uid, int64_t deadline_ns) {
  std::vector<Sample> out;
  auto fail = [&](SampleStatus st, const std::string& why) {
    out.clear();
    for (int round = 0; round < (sender ? 1 : r.rounds); ++round) {
      Sample s = skip(sample_of(r, self, round), st, why);
      s.peer = sender ? -1 : peer.global_rank;
      out.push_back(s);
    }
    return out;
  };
  if (!L_->have_nccl) return fail(SampleStatus::kSkipped, L_->missing);
  cudalib::NcclUniqueId id{};
  if (!hex_bytes(uid, id.internal, sizeof(id.internal)))
    return fail(SampleStatus::kFailed, "bootstrap id is not " + std::to_string(sizeof(id.internal)) + " bytes of hex");
  cu::Device d;
  std::string why;
  if (!enter(self, &d, &why)) return fail(SampleStatus::kSkipped, why);
  if (over_budget(r.bytes, budget_bytes(&why)))
    return fail(SampleStatus::kSkipped, "link payload exceeds the replay memory limit");
  // Waits for a non-blocking NCCL call on `comm` to settle: its state, or kNcclInProgress at the
  // deadline (NCCL documents polling ncclCommGetAsyncError for non-blocking communicators).
  auto settle = [&](cudalib::NcclComm comm) {
    int st = cudalib::kNcclInProgress;
    while (L_->nccl.CommGetAsyncError(comm, &st) == cudalib::kNcclSuccess && st == cudalib::kNcclInProgress &&
           mono_ns() < deadline_ns)
      sleep_us(200);
    return st;
  };
  cudalib::NcclConfig cfg;
  cfg.blocking = 0;
  cudalib::NcclComm comm = nullptr;
  const int rc = L_->nccl.CommInitRankConfig(&comm, 2, id, sender ? 0 : 1, &cfg);
  if ((rc != cudalib::kNcclSuccess && rc != cudalib::kNcclInProgress) || comm == nullptr)
    return fail(SampleStatus::kFailed, "ncclCommInitRankConfig failed (" + std::to_string(rc) + ")");
  int st = settle(comm);
  if (st != cudalib::kNcclSuccess) {
    L_->nccl.CommAbort(comm);
    return fail(SampleStatus::kFailed, st == cudalib::kNcclInProgress
                                           ? "the peer did not join the replay communicator by the deadline (aborted)"
                                           : "replay communicator init failed (" + std::to_string(st) + ")");
  }
  const uint64_t count = r.bytes / 4;
  std::vector<float> payload(count);
  for (uint64_t i = 0; i < count; ++i) payload[i] = seeded(r.seed ^ uint64_t(r.src) * 0x100000001b3ull, i);
  const uint64_t expected = fp::fingerprint(payload.data(), count * 4, shm::kTypeFloat32, nullptr);
  cu::DevicePtr buf = 0;
  if (L_->cu.MemAlloc(&buf, count * 4) != 0) {
    L_->nccl.CommAbort(comm);  // the peer's end fails now, not at the deadline
    return fail(SampleStatus::kSkipped, "device memory allocation failed");
  }
  if (sender) L_->cu.MemcpyHtoD(buf, payload.data(), count * 4);
  std::string error;
  for (int round = 0; round < r.rounds && error.empty(); ++round) {
    if (cupti_on_) cupti_take(L_->cupti);
    const uint64_t t0 = wall_ns();
    const int sr = sender ? L_->nccl.Send(reinterpret_cast<void*>(buf), count, cudalib::kNcclFloat32, 1, comm, streams_[d])
                          : L_->nccl.Recv(reinterpret_cast<void*>(buf), count, cudalib::kNcclFloat32, 0, comm, streams_[d]);
    if ((sr != cudalib::kNcclSuccess && sr != cudalib::kNcclInProgress) || settle(comm) != cudalib::kNcclSuccess) {
      error = "NCCL " + std::string(sender ? "send" : "receive") + " failed";
      break;
    }
    int q = cudalib::kNotReady;
    while ((q = L_->drv.StreamQuery(streams_[d])) == cudalib::kNotReady && mono_ns() < deadline_ns) sleep_us(200);
    if (q != 0) {
      error = q == cudalib::kNotReady ? "the transfer did not finish by the deadline (aborted)"
                                      : "the transfer failed (CUDA error " + std::to_string(q) + ")";
      break;
    }
    if (sender) continue;
    Sample s = sample_of(r, self, round);
    s.peer = peer.global_rank;
    s.ns = cupti_on_ ? kernel_ns_since(t0, d) : int64_t(wall_ns() - t0);
    std::vector<float> got(count);
    L_->cu.MemcpyDtoH(got.data(), buf, count * 4);
    s.fp = fp::fingerprint(got.data(), count * 4, shm::kTypeFloat32, nullptr);
    s.expected_known = true;
    s.expected_fp = expected;
    out.push_back(s);
  }
  if (!error.empty()) {
    L_->nccl.CommAbort(comm);  // a kernel that waits for a peer that is gone never ends by itself
    L_->cu.MemFree(buf);
    return fail(SampleStatus::kFailed, error);
  }
  L_->cu.MemFree(buf);
  L_->nccl.CommDestroy(comm);
  return out;
}

std::vector<Sample> CudaBackend::run_coll(const Recipe& r, const std::vector<Participant>& members, int round) {
  std::vector<Sample> out;
  for (const Participant& p : members) out.push_back(sample_of(r, p, round));
  auto all_skip = [&](SampleStatus st, const std::string& why) {
    for (Sample& s : out) s = skip(s, st, why);
    return out;
  };
  if (!L_->have_nccl) return all_skip(SampleStatus::kSkipped, L_->missing);
  if (r.coll.func != "AllReduce")
    return all_skip(SampleStatus::kSkipped, "only AllReduce classes are replayed on GPUs in this version");
  std::vector<int> devs;
  std::string why;
  for (const Participant& p : members) {
    cu::Device d;
    if (!enter(p, &d, &why))
      return all_skip(
          SampleStatus::kSkipped,
          why + " (members on other hosts need a replay communicator bootstrapped over the observers' channel)");
    devs.push_back(d);
  }
  const int nr = int(members.size());
  const uint64_t count = std::max<uint64_t>(1, r.coll.count);
  if (over_budget(count * 8, budget_bytes(&why)))  // count <= SCOUT_REPLAY_MAX_MEM (check_recipe): no wrap
    return all_skip(SampleStatus::kSkipped, "collective exceeds the replay memory limit");
  // NCCL_ALGO / NCCL_PROTO are read at each communicator init (NCCL src/graph/tuning.cc).
  if (!r.coll.algo.empty()) setenv("NCCL_ALGO", r.coll.algo.c_str(), 1);
  if (!r.coll.proto.empty()) setenv("NCCL_PROTO", r.coll.proto.c_str(), 1);
  std::vector<cudalib::NcclComm> comms(nr, nullptr);
  const int rc_init = L_->nccl.CommInitAll(comms.data(), nr, devs.data());
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  if (rc_init) return all_skip(SampleStatus::kFailed, "ncclCommInitAll failed");
  std::vector<std::vector<float>> in(nr, std::vector<float>(count));
  std::vector<float> want(count, 0.0f);
  for (int i = 0; i < nr; ++i)
    for (uint64_t e = 0; e < count; ++e)
      in[i][e] = seeded(r.seed ^ uint64_t(members[i].global_rank) * 0x9E3779B9ull, e);
  for (uint64_t e = 0; e < count; ++e)                 // NCCL's ring reduction order is not ours: compare with
    for (int i = 0; i < nr; ++i) want[e] += in[i][e];  // one exact order only for 2 members
  std::vector<cu::DevicePtr> buf(nr, 0);
  for (int i = 0; i < nr; ++i) {
    L_->cu.CtxSetCurrent(ctxs_[devs[i]]);
    L_->cu.MemAlloc(&buf[i], count * 4);
    L_->cu.MemcpyHtoD(buf[i], in[i].data(), count * 4);
  }
  if (cupti_on_) cupti_take(L_->cupti);
  const uint64_t t0 = wall_ns();
  L_->nccl.GroupStart();
  for (int i = 0; i < nr; ++i)
    L_->nccl.AllReduce(reinterpret_cast<void*>(buf[i]), reinterpret_cast<void*>(buf[i]), count, cudalib::kNcclFloat32,
                       cudalib::kNcclSum, comms[i], streams_[devs[i]]);
  const int rc = L_->nccl.GroupEnd();
  std::vector<KernelSpan> spans;
  for (int i = 0; i < nr; ++i) {
    L_->cu.CtxSetCurrent(ctxs_[devs[i]]);
    L_->cu.StreamSynchronize(streams_[devs[i]]);
  }
  if (cupti_on_) spans = cupti_take(L_->cupti);
  const uint64_t wall = wall_ns() - t0;
  const uint64_t want_fp = fp::fingerprint(want.data(), count * 4, shm::kTypeFloat32, nullptr);
  for (int i = 0; i < nr; ++i) {
    std::vector<float> got(count);
    L_->cu.CtxSetCurrent(ctxs_[devs[i]]);
    L_->cu.MemcpyDtoH(got.data(), buf[i], count * 4);
    L_->cu.MemFree(buf[i]);
    out[i].fp = fp::fingerprint(got.data(), count * 4, shm::kTypeFloat32, nullptr);
    out[i].expected_known = nr == 2;  // a sum of two is exact in any order
    out[i].expected_fp = want_fp;
    int64_t ns = 0;
    for (const KernelSpan& k : spans)
      if (k.device == devs[i] && k.start_ns >= t0) ns += int64_t(k.end_ns - k.start_ns);
    out[i].ns = cupti_on_ ? ns : int64_t(wall);
    if (rc) out[i] = skip(out[i], SampleStatus::kFailed, "ncclAllReduce failed");
  }
  for (auto c : comms) L_->nccl.CommDestroy(c);
  return out;
}

}  // namespace scout::replay
