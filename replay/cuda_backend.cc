#include "replay/cuda_backend.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/clock.h"
#include "common/uuid.h"
#include "replay/cuda_calls.h"
#include "scout/fingerprint.h"
#include "scout/shm_format.h"

namespace scout::replay {
namespace {

using cudalib::Calls;
using cudalib::Comms;
using cudalib::DeviceBuf;
using shm::mono_ns;
using shm::wall_ns;

constexpr size_t kCuptiBufBytes = 4 << 20;  // CUPTI recommends 1..10 MB per buffer
constexpr int64_t kWorkspaceBytes = 32 << 20;

// `need` bytes (unsigned: a payload of 2^63 bytes or more never passes) exceed `allowed`.
bool over_budget(uint64_t need, int64_t allowed) { return allowed < 0 || need > uint64_t(allowed); }

std::mutex g_spans_mu;
std::vector<KernelSpan> g_spans;
int g_record_error = 0;  // a cuptiActivityGetNextRecord failure since the last cupti_take
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
    int rc = 0;
    while ((rc = g_cupti->ActivityGetNextRecord(buffer, valid, &rec)) == 0 && rec) {
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
    if (rc != 0 && rc != cudalib::kCuptiMaxLimitReached) g_record_error = rc;  // records lost
  }
  std::free(buffer);
}

void sleep_us(int64_t us) {
  timespec ts{0, long(us * 1000)};
  nanosleep(&ts, nullptr);
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

// A link's payload from sender `src`: `count` seeded floats.
std::vector<float> link_payload(const Recipe& r, int src, uint64_t count) {
  std::vector<float> payload(count);
  for (uint64_t i = 0; i < count; ++i) payload[i] = seeded(r.seed ^ uint64_t(src) * 0x100000001b3ull, i);
  return payload;
}

uint64_t fp_f32(const void* data, uint64_t count) {
  return fp::fingerprint(data, count * 4, shm::kTypeFloat32, nullptr);
}

uint64_t text_hash(const std::string& s) { return XXH64(s.data(), s.size(), 0); }

Sample skip(Sample s, SampleStatus st, const std::string& why) { return not_measured(std::move(s), st, why); }

// A recipe that could not start: skipped for `why` (not on this host, a library missing), or
// failed when a call failed.
Sample not_run(Sample s, const Calls& c, const std::string& why) {
  return c.ok() ? skip(s, SampleStatus::kSkipped, why) : skip(s, SampleStatus::kFailed, c.error());
}

// The sample as measured, or failed with the first failed call (nothing measured is kept).
Sample measured(Sample s, const Calls& c) { return c.ok() ? s : skip(s, SampleStatus::kFailed, c.error()); }

// The kernel time CUPTI recorded on `device` since `t0_ns` (CLOCK_REALTIME); -1 with c failed when
// it recorded none (the time is unknown, not zero).
int64_t kernel_ns(const std::vector<KernelSpan>& spans, uint64_t t0_ns, int device, Calls& c) {
  int64_t sum = 0;
  int n = 0;
  for (const KernelSpan& s : spans) {
    if (s.device != device || s.start_ns < t0_ns) continue;
    sum += int64_t(s.end_ns - s.start_ns);
    n++;
  }
  if (n > 0) return sum;
  c.fail("CUPTI delivered no kernel record of device " + std::to_string(device) + " since the launch");
  return -1;
}

}  // namespace

std::vector<unsigned char> gemm_input(const Recipe& r, char which) {
  const uint64_t n = which == 'A' ? uint64_t(r.gemm.m * r.gemm.k) : uint64_t(r.gemm.k * r.gemm.n);
  return seeded_matrix(r.seed ^ text_hash(r.id + which), n, r.gemm.dtype);
}

std::string uuid_text(const cu::Uuid& u) { return shm::gpu_uuid_text(u.bytes); }

bool cupti_start(const cudalib::Cupti& c) {
  g_cupti = &c;
  if (c.ActivityRegisterCallbacks(&on_request, &on_complete) != 0) return false;
  return c.ActivityEnable(cudalib::kActivityConcurrentKernel) == 0;
}

bool cupti_take(const cudalib::Cupti& cupti, std::vector<KernelSpan>* spans, Calls& c) {
  const int rc = cupti.ActivityFlushAll(cudalib::kFlushForced);
  std::lock_guard<std::mutex> lock(g_spans_mu);
  spans->clear();
  spans->swap(g_spans);
  const int lost = g_record_error;
  g_record_error = 0;
  return c.cupti(rc, "cuptiActivityFlushAll") && c.cupti(lost, "cuptiActivityGetNextRecord");
}

CudaBackend::CudaBackend(const cudalib::Libs* libs, BackendLimits limits) : L_(libs), limits_(limits) {
  if (L_->have_cupti) cupti_on_ = cupti_start(L_->cupti);
}

CudaBackend::~CudaBackend() {
  if (!L_->have_cu) return;
  // Nothing to report to any more: the results of these calls are not used.
  for (auto& [dev, s] : streams_) {
    auto c = ctxs_.find(dev);
    if (c != ctxs_.end()) L_->cu.CtxSetCurrent(c->second);
    L_->drv.StreamDestroy(s);
  }
  for (auto& [dev, ctx] : ctxs_) L_->drv.DevicePrimaryCtxRelease(dev);
}

bool CudaBackend::libs_text(std::string* out, Calls& c) const {
  int v = 0;
  if (!c.cu(L_->cu.DriverGetVersion(&v), "cuDriverGetVersion")) return false;
  *out = "cuda " + std::to_string(v);
  if (L_->have_blas) *out += "; cublasLt " + std::to_string(L_->blas.GetVersion());
  if (L_->have_nccl) {
    if (!c.nccl(L_->nccl.GetVersion(&v), "ncclGetVersion")) return false;
    *out += "; nccl " + std::to_string(v);
  }
  return true;
}

int CudaBackend::ordinal_of(const Participant& p, Calls& c) {
  int count = 0;
  if (!c.cu(L_->cu.DeviceGetCount(&count), "cuDeviceGetCount")) return -1;
  // The participant's GPU by UUID when the record has one, else by its CUDA ordinal.
  for (int i = 0; i < count && p.gpu.rfind("GPU-", 0) == 0; ++i) {
    cu::Device d;
    cu::Uuid u;
    if (!c.cu(L_->cu.DeviceGet(&d, i), "cuDeviceGet") || !c.cu(L_->cu.DeviceGetUuid(&u, d), "cuDeviceGetUuid"))
      return -1;
    if (uuid_text(u) == p.gpu) return i;
  }
  return p.cuda_dev >= 0 && p.cuda_dev < count ? p.cuda_dev : -1;
}

bool CudaBackend::enter(const Participant& p, cu::Device* dev, std::string* why, Calls& c) {
  if (!L_->have_cu) {
    *why = L_->missing;
    return false;
  }
  const int ordinal = ordinal_of(p, c);
  if (!c.ok()) return false;
  if (ordinal < 0) {
    *why = "GPU " + p.gpu + " is not on this host";
    return false;
  }
  if (!c.cu(L_->cu.DeviceGet(dev, ordinal), "cuDeviceGet")) return false;
  if (!ctxs_.count(*dev)) {
    cu::Context ctx = nullptr;
    if (!c.cu(L_->cu.DevicePrimaryCtxRetain(&ctx, *dev), "cuDevicePrimaryCtxRetain")) return false;
    ctxs_[*dev] = ctx;
  }
  if (!c.cu(L_->cu.CtxSetCurrent(ctxs_[*dev]), "cuCtxSetCurrent")) return false;
  if (!streams_.count(*dev)) {
    int least = 0, greatest = 0;
    if (!c.cu(L_->drv.CtxGetStreamPriorityRange(&least, &greatest), "cuCtxGetStreamPriorityRange")) return false;
    cu::Stream s = nullptr;
    if (!c.cu(L_->drv.StreamCreateWithPriority(&s, cu::kStreamNonBlocking, least), "cuStreamCreateWithPriority"))
      return false;
    streams_[*dev] = s;
  }
  return true;
}

int64_t CudaBackend::budget_bytes(Calls& c) {
  size_t free_b = 0, total = 0;
  if (!c.cu(L_->drv.MemGetInfo(&free_b, &total), "cuMemGetInfo")) return 0;
  return std::max<int64_t>(0, std::min<int64_t>(limits_.max_mem, int64_t(free_b) - limits_.mem_margin));
}

bool CudaBackend::drop_spans(Calls& c) {
  std::vector<KernelSpan> old;
  return !cupti_on_ || cupti_take(L_->cupti, &old, c);
}

int64_t CudaBackend::kernel_ns_since(uint64_t t0_ns, int device, Calls& c) {
  std::vector<KernelSpan> spans;
  if (!cupti_take(L_->cupti, &spans, c)) return -1;
  return kernel_ns(spans, t0_ns, device, c);
}

bool CudaBackend::sync(cu::Device dev, Calls& c) {
  return c.cu(L_->cu.CtxSetCurrent(ctxs_[dev]), "cuCtxSetCurrent") &&
         c.cu(L_->cu.StreamSynchronize(streams_[dev]), "cuStreamSynchronize");
}

GpuInfo CudaBackend::describe(const Participant& p) {
  GpuInfo g;
  g.global_rank = p.global_rank;
  g.gpu = p.gpu;
  cu::Device dev;
  std::string why;
  Calls c(L_);
  if (!enter(p, &dev, &why, c)) {
    g.reason = c.ok() ? why : c.error();
    return g;
  }
  char name[128] = {0};
  size_t free_b = 0, total = 0;
  if (!c.cu(L_->drv.DeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName") ||
      !c.cu(L_->cu.DeviceGetAttribute(&g.sm_count, cu::kAttrMultiprocessorCount, dev), "cuDeviceGetAttribute") ||
      !libs_text(&g.libs, c) || !c.cu(L_->drv.MemGetInfo(&free_b, &total), "cuMemGetInfo")) {
    g.reason = c.error();
    return g;
  }
  g.model = name;
  g.free_bytes = int64_t(free_b);
  g.ready = true;
  return g;
}

bool CudaBackend::gemm_algo(const Recipe& r, const cudalib::LtObjects& lt, Calls& c) {
  if (algos_.count(r.id)) return true;
  cudalib::LtHeuristic h{};
  int got = 0;
  heuristic_calls_++;
  if (!c.blas(L_->blas.MatmulAlgoGetHeuristic(lt.handle, lt.op, lt.a, lt.b, lt.d, lt.d, lt.pref, 1, &h, &got),
              "cublasLtMatmulAlgoGetHeuristic"))
    return false;
  if (got < 1) return c.fail("cublasLtMatmulAlgoGetHeuristic: no algorithm for " + r.id);
  algos_[r.id] = h.algo;
  return true;
}

int64_t CudaBackend::time_gemm(const Recipe& r, cu::Device dev, const cudalib::LtObjects& lt, const GemmBuffers& g,
                               Calls& c) {
  const cu::Stream stream = streams_[dev];
  const float alpha = 1.0f, beta = 0.0f;
  auto matmul = [&] {
    return c.blas(L_->blas.Matmul(lt.handle, lt.op, &alpha, g.a.addr(), lt.a, g.b.addr(), lt.b, &beta, g.d.addr(), lt.d,
                                  g.d.addr(), lt.d, &algos_[r.id], g.ws.addr(), kWorkspaceBytes, stream),
                  "cublasLtMatmul");
  };
  // One untimed warm-up run (module loading, first-launch costs).
  if (!matmul() || !c.cu(L_->cu.StreamSynchronize(stream), "cuStreamSynchronize") || !drop_spans(c)) return -1;
  cudalib::Event e0(L_), e1(L_);
  const uint64_t t0 = uint64_t(wall_ns());
  if (!cupti_on_ && (!e0.create(c) || !e1.create(c) || !c.cu(L_->cu.EventRecord(e0.get(), stream), "cuEventRecord")))
    return -1;
  for (int i = 0; i < r.iters; ++i)
    if (!matmul()) return -1;
  if (!cupti_on_ && !c.cu(L_->cu.EventRecord(e1.get(), stream), "cuEventRecord")) return -1;
  if (!c.cu(L_->cu.StreamSynchronize(stream), "cuStreamSynchronize")) return -1;
  if (cupti_on_) return kernel_ns_since(t0, dev, c);
  float ms = 0;
  if (!c.cu(L_->cu.EventElapsedTime(&ms, e0.get(), e1.get()), "cuEventElapsedTime")) return -1;
  if (!e0.destroy(c) || !e1.destroy(c)) return -1;
  return int64_t(double(ms) * 1e6);
}

Sample CudaBackend::run_gemm(const Recipe& r, const Participant& p, int round) {
  Sample s = sample_of(r, p, round);
  if (!L_->have_blas) return skip(s, SampleStatus::kSkipped, L_->missing);
  const int eb = gemm_dtype_bytes(r.gemm.dtype);
  if (eb == 0) return skip(s, SampleStatus::kSkipped, "unsupported datatype " + r.gemm.dtype);
  cu::Device dev;
  std::string why;
  Calls c(L_);
  if (!enter(p, &dev, &why, c)) return not_run(s, c, why);
  const uint64_t m = uint64_t(r.gemm.m), n = uint64_t(r.gemm.n), k = uint64_t(r.gemm.k);
  // recipe_device_bytes: 128-bit arithmetic, saturated (no shape can wrap it).
  const uint64_t need =
      std::min<uint64_t>(recipe_device_bytes(r), UINT64_MAX - uint64_t(kWorkspaceBytes)) + uint64_t(kWorkspaceBytes);
  const int64_t allowed = budget_bytes(c);
  if (!c.ok()) return measured(s, c);
  if (over_budget(need, allowed))
    return skip(s, SampleStatus::kSkipped,
                "needs " + std::to_string(need) + " bytes of device memory, replay may use " + std::to_string(allowed));
  const int dtype = eb == 4 ? cudalib::kDataR32F : r.gemm.dtype == "bf16" ? cudalib::kDataR16BF : cudalib::kDataR16F;
  GemmBuffers g{{L_, ctxs_[dev]}, {L_, ctxs_[dev]}, {L_, ctxs_[dev]}, {L_, ctxs_[dev]}};
  const std::vector<unsigned char> ha = gemm_input(r, 'A'), hb = gemm_input(r, 'B');
  std::vector<unsigned char> hd(m * n * eb);
  cudalib::LtObjects lt(L_);
  if (g.a.alloc(m * k * eb, c) && g.b.alloc(k * n * eb, c) && g.d.alloc(m * n * eb, c) &&
      g.ws.alloc(kWorkspaceBytes, c) && g.a.put(ha.data(), ha.size(), c) && g.b.put(hb.data(), hb.size(), c) &&
      lt.create(dtype, m, n, k, kWorkspaceBytes, c) && gemm_algo(r, lt, c)) {
    s.ns = time_gemm(r, dev, lt, g, c);
    if (c.ok() && lt.destroy(c) && g.d.get(hd.data(), hd.size(), c))
      s.fp = fp::fingerprint(hd.data(), hd.size(),
                             eb == 4                        ? shm::kTypeFloat32
                             : dtype == cudalib::kDataR16BF ? shm::kTypeBfloat16
                                                            : shm::kTypeFloat16,
                             nullptr);
  }
  for (DeviceBuf* b : {&g.a, &g.b, &g.d, &g.ws}) b->free(c);
  return measured(s, c);
}

Sample CudaBackend::run_link(const Recipe& r, const Participant& src, const Participant& dst, int round) {
  Sample s = sample_of(r, dst, round);
  s.peer = src.global_rank;
  if (!L_->have_nccl) return skip(s, SampleStatus::kSkipped, L_->missing);
  cu::Device ds, dd;
  std::string why;
  Calls c(L_);
  if (!enter(src, &ds, &why, c) || !enter(dst, &dd, &why, c))
    return not_run(
        s, c, why + " (members on other hosts need a replay communicator bootstrapped over the observers' channel)");
  const uint64_t count = r.bytes / 4;
  const int64_t allowed = budget_bytes(c);
  if (!c.ok()) return measured(s, c);
  if (over_budget(r.bytes, allowed))
    return skip(s, SampleStatus::kSkipped, "link payload exceeds the replay memory limit");
  const std::vector<float> payload = link_payload(r, src.global_rank, count);
  std::vector<float> got(count);
  int devs[2] = {ds, dd};
  Comms comms(L_, 2);
  DeviceBuf sb(L_, ctxs_[ds]), rb(L_, ctxs_[dd]);
  if (c.nccl(L_->nccl.CommInitAll(comms.data(), 2, devs), "ncclCommInitAll") && sb.alloc(count * 4, c) &&
      sb.put(payload.data(), count * 4, c) && rb.alloc(count * 4, c) && drop_spans(c) &&
      c.nccl(L_->nccl.GroupStart(), "ncclGroupStart")) {
    const uint64_t t0 = uint64_t(wall_ns());
    c.nccl(L_->nccl.Send(sb.addr(), count, cudalib::kNcclFloat32, 1, comms[0], streams_[ds]), "ncclSend");
    c.nccl(L_->nccl.Recv(rb.addr(), count, cudalib::kNcclFloat32, 0, comms[1], streams_[dd]), "ncclRecv");
    const bool ended = c.nccl(L_->nccl.GroupEnd(), "ncclGroupEnd");  // always closes the group
    if (ended && c.ok() && sync(ds, c) && sync(dd, c)) {
      s.ns = cupti_on_ ? kernel_ns_since(t0, dd, c) : int64_t(uint64_t(wall_ns()) - t0);
      if (c.ok() && rb.get(got.data(), count * 4, c)) {
        s.fp = fp_f32(got.data(), count);
        s.expected_known = true;
        s.expected_fp = fp_f32(payload.data(), count);
      }
    }
  }
  rb.free(c);
  sb.free(c);
  if (c.ok()) comms.destroy(c);
  return measured(s, c);
}

std::string CudaBackend::link_unique_id(const Participant& self, std::string* error) {
  if (!L_->have_nccl) {
    *error = L_->missing;
    return "";
  }
  cudalib::NcclUniqueId id{};
  Calls c(L_);
  if (!c.nccl(L_->nccl.GetUniqueId(&id), "ncclGetUniqueId")) {
    *error = c.error();
    return "";
  }
  return bytes_hex(id.internal, sizeof(id.internal));
}

int CudaBackend::settle(cudalib::NcclComm comm, int64_t deadline_ns, Calls& c) {
  // Waits for a non-blocking NCCL call on `comm` to settle: its state, or kNcclInProgress at the
  // deadline (NCCL documents polling ncclCommGetAsyncError for non-blocking communicators).
  int st = cudalib::kNcclInProgress;
  for (;;) {
    if (!c.nccl(L_->nccl.CommGetAsyncError(comm, &st), "ncclCommGetAsyncError")) return -1;
    if (st != cudalib::kNcclInProgress || mono_ns() >= deadline_ns) return st;
    sleep_us(200);
  }
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
  Calls c(L_);
  if (!enter(self, &d, &why, c))
    return c.ok() ? fail(SampleStatus::kSkipped, why) : fail(SampleStatus::kFailed, c.error());
  const int64_t allowed = budget_bytes(c);
  if (!c.ok()) return fail(SampleStatus::kFailed, c.error());
  if (over_budget(r.bytes, allowed))
    return fail(SampleStatus::kSkipped, "link payload exceeds the replay memory limit");
  cudalib::NcclConfig cfg;
  cfg.blocking = 0;
  Comms comm(L_, 1);  // aborted on any early return: the peer's end fails now, not at the deadline
  const int rc = L_->nccl.CommInitRankConfig(comm.data(), 2, id, sender ? 0 : 1, &cfg);
  if (rc != cudalib::kNcclInProgress && !c.nccl(rc, "ncclCommInitRankConfig"))
    return fail(SampleStatus::kFailed, c.error());
  if (comm[0] == nullptr) return fail(SampleStatus::kFailed, "ncclCommInitRankConfig gave no communicator");
  const int st = settle(comm[0], deadline_ns, c);
  if (st != cudalib::kNcclSuccess)
    return fail(SampleStatus::kFailed, !c.ok() ? c.error()
                                       : st == cudalib::kNcclInProgress
                                           ? "the peer did not join the replay communicator by the deadline (aborted)"
                                           : "replay communicator init failed (" + std::to_string(st) + ")");
  const uint64_t count = r.bytes / 4;
  const std::vector<float> payload = link_payload(r, r.src, count);
  DeviceBuf buf(L_, ctxs_[d]);
  if (!buf.alloc(count * 4, c) || (sender && !buf.put(payload.data(), count * 4, c)))
    return fail(SampleStatus::kFailed, c.error());
  std::string error;
  for (int round = 0; round < r.rounds && error.empty(); ++round) {
    if (!drop_spans(c)) break;
    const uint64_t t0 = uint64_t(wall_ns());
    const int sr = sender ? L_->nccl.Send(buf.addr(), count, cudalib::kNcclFloat32, 1, comm[0], streams_[d])
                          : L_->nccl.Recv(buf.addr(), count, cudalib::kNcclFloat32, 0, comm[0], streams_[d]);
    if (sr != cudalib::kNcclInProgress && !c.nccl(sr, sender ? "ncclSend" : "ncclRecv")) break;
    const int st = settle(comm[0], deadline_ns, c);
    if (!c.ok()) break;
    if (st != cudalib::kNcclSuccess) {
      error = "NCCL " + std::string(sender ? "send" : "receive") + " failed (" + std::to_string(st) + ")";
      break;
    }
    int q = cudalib::kNotReady;
    while ((q = L_->drv.StreamQuery(streams_[d])) == cudalib::kNotReady && mono_ns() < deadline_ns) sleep_us(200);
    if (q == cudalib::kNotReady) {
      error = "the transfer did not finish by the deadline (aborted)";
      break;
    }
    if (!c.cu(q, "cuStreamQuery")) break;
    if (sender) continue;
    Sample s = sample_of(r, self, round);
    s.peer = peer.global_rank;
    s.ns = cupti_on_ ? kernel_ns_since(t0, d, c) : int64_t(uint64_t(wall_ns()) - t0);
    std::vector<float> got(count);
    if (!c.ok() || !buf.get(got.data(), count * 4, c)) break;
    s.fp = fp_f32(got.data(), count);
    s.expected_known = true;
    s.expected_fp = fp_f32(payload.data(), count);
    out.push_back(s);
  }
  if (error.empty() && !c.ok()) error = c.error();
  if (!error.empty()) return fail(SampleStatus::kFailed, error);  // buf freed, comm aborted
  if (!buf.free(c) || !comm.destroy(c)) return fail(SampleStatus::kFailed, c.error());
  return out;
}

std::vector<Sample> CudaBackend::run_coll(const Recipe& r, const std::vector<Participant>& members, int round) {
  std::vector<Sample> out;
  for (const Participant& p : members) out.push_back(sample_of(r, p, round));
  Calls c(L_);
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
    if (!enter(p, &d, &why, c))
      return c.ok() ? all_skip(SampleStatus::kSkipped,
                               why +
                                   " (members on other hosts need a replay communicator bootstrapped over the "
                                   "observers' channel)")
                    : all_skip(SampleStatus::kFailed, c.error());
    devs.push_back(d);
  }
  const int nr = int(members.size());
  const uint64_t count = std::max<uint64_t>(1, r.coll.count);
  const int64_t allowed = budget_bytes(c);
  if (!c.ok()) return all_skip(SampleStatus::kFailed, c.error());
  if (over_budget(count * 8, allowed))  // count <= SCOUT_REPLAY_MAX_MEM (check_recipe): no wrap
    return all_skip(SampleStatus::kSkipped, "collective exceeds the replay memory limit");
  std::vector<std::vector<float>> in(nr, std::vector<float>(count));
  std::vector<float> want(count, 0.0f);
  for (int i = 0; i < nr; ++i)
    for (uint64_t e = 0; e < count; ++e)
      in[i][e] = seeded(r.seed ^ uint64_t(members[i].global_rank) * 0x9E3779B9ull, e);
  for (uint64_t e = 0; e < count; ++e)                 // NCCL's ring reduction order is not ours: compare with
    for (int i = 0; i < nr; ++i) want[e] += in[i][e];  // one exact order only for 2 members
  Comms comms(L_, size_t(nr));
  std::vector<DeviceBuf> buf;
  buf.reserve(size_t(nr));
  for (int i = 0; i < nr; ++i) buf.emplace_back(L_, ctxs_[devs[i]]);
  if (coll_init(r, comms, devs, c)) {
    for (int i = 0; i < nr; ++i)
      if (!buf[i].alloc(count * 4, c) || !buf[i].put(in[i].data(), count * 4, c)) break;
    if (c.ok()) run_allreduce(comms, devs, buf, count, c, &out);
  }
  std::vector<float> got(count);
  const uint64_t want_fp = fp_f32(want.data(), count);
  for (int i = 0; i < nr; ++i) {
    if (c.ok() && buf[i].get(got.data(), count * 4, c)) {
      out[i].fp = fp_f32(got.data(), count);
      out[i].expected_known = nr == 2;  // a sum of two is exact in any order
      out[i].expected_fp = want_fp;
    }
    buf[i].free(c);
  }
  if (c.ok()) comms.destroy(c);
  return c.ok() ? out : all_skip(SampleStatus::kFailed, c.error());
}

std::string CudaBackend::coll_end_join(const Recipe& r, Comms& comms, int nranks, const cudalib::NcclUniqueId& id,
                                       const std::vector<int>& ranks, const std::vector<int>& devs, int64_t deadline_ns,
                                       Calls& c) {
  cudalib::NcclConfig cfg;
  cfg.blocking = 0;
  if (!r.coll.algo.empty()) setenv("NCCL_ALGO", r.coll.algo.c_str(), 1);  // read at init (src/graph/tuning.cc)
  if (!r.coll.proto.empty()) setenv("NCCL_PROTO", r.coll.proto.c_str(), 1);
  bool init_ok = c.nccl(L_->nccl.GroupStart(), "ncclGroupStart");
  for (size_t k = 0; k < ranks.size() && init_ok; ++k) {
    // A communicator is made on the current device (NCCL src/init.cc, cudaGetDevice): each
    // member's own, as ncclCommInitAll does for its list.
    if (!c.cu(L_->cu.CtxSetCurrent(ctxs_[devs[k]]), "cuCtxSetCurrent")) {
      init_ok = false;
      break;
    }
    const int rc = L_->nccl.CommInitRankConfig(comms.data() + k, nranks, id, ranks[k], &cfg);
    init_ok = rc == cudalib::kNcclInProgress || c.nccl(rc, "ncclCommInitRankConfig");
  }
  const int ge = L_->nccl.GroupEnd();  // always closes the group
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  if (!init_ok || (ge != cudalib::kNcclInProgress && !c.nccl(ge, "ncclGroupEnd"))) return c.error();
  for (size_t k = 0; k < ranks.size(); ++k) {
    if (comms[k] == nullptr) return "ncclCommInitRankConfig gave no communicator";
    const int st = settle(comms[k], deadline_ns, c);
    if (!c.ok()) return c.error();
    if (st == cudalib::kNcclInProgress)
      return "a member did not join the replay communicator by the deadline (aborted)";
    if (st != cudalib::kNcclSuccess) return "replay communicator init failed (" + std::to_string(st) + ")";
  }
  return "";
}

std::string CudaBackend::coll_end_wait(const Comms& comms, const std::vector<int>& devs, int64_t deadline_ns,
                                       Calls& c) {
  for (size_t k = 0; k < devs.size(); ++k) {
    const int st = settle(comms[k], deadline_ns, c);
    if (!c.ok()) return "";
    if (st != cudalib::kNcclSuccess) return "NCCL AllReduce failed (" + std::to_string(st) + ")";
  }
  for (size_t k = 0; k < devs.size() && c.ok(); ++k) {
    int q = cudalib::kNotReady;
    while ((q = L_->drv.StreamQuery(streams_[devs[k]])) == cudalib::kNotReady && mono_ns() < deadline_ns) sleep_us(200);
    if (q == cudalib::kNotReady) return "the collective did not finish by the deadline (aborted)";
    c.cu(q, "cuStreamQuery");
  }
  return "";
}

std::vector<Sample> CudaBackend::run_coll_end(const Recipe& r, const std::vector<Participant>& members,
                                              const std::vector<int>& local, const std::string& uid,
                                              int64_t deadline_ns) {
  std::vector<Sample> out;
  std::vector<int> idx;  // each local member's index in `members`: its rank in the replay communicator
  for (int g : local) {
    auto it = std::find_if(members.begin(), members.end(), [&](const Participant& p) { return p.global_rank == g; });
    idx.push_back(it == members.end() ? -1 : int(it - members.begin()));
  }
  auto fail = [&](SampleStatus st, const std::string& why) {
    out.clear();
    for (int round = 0; round < r.rounds; ++round)
      for (size_t k = 0; k < local.size(); ++k)
        out.push_back(
            skip(sample_of(r, idx[k] >= 0 ? members[size_t(idx[k])] : Participant{local[k], "", -1}, round), st, why));
    return out;
  };
  if (!L_->have_nccl) return fail(SampleStatus::kSkipped, L_->missing);
  if (r.coll.func != "AllReduce")
    return fail(SampleStatus::kSkipped, "only AllReduce classes are replayed on GPUs in this version");
  for (size_t k = 0; k < local.size(); ++k)
    if (idx[k] < 0) return fail(SampleStatus::kFailed, "rank " + std::to_string(local[k]) + " is not a member");
  cudalib::NcclUniqueId id{};
  if (!hex_bytes(uid, id.internal, sizeof(id.internal)))
    return fail(SampleStatus::kFailed, "bootstrap id is not " + std::to_string(sizeof(id.internal)) + " bytes of hex");
  Calls c(L_);
  std::vector<int> devs;
  for (int i : idx) {
    cu::Device d;
    std::string why;
    if (!enter(members[size_t(i)], &d, &why, c))
      return c.ok() ? fail(SampleStatus::kSkipped, why) : fail(SampleStatus::kFailed, c.error());
    devs.push_back(d);
  }
  const int nr = int(members.size());
  const uint64_t count = std::max<uint64_t>(1, r.coll.count);
  const int64_t allowed = budget_bytes(c);
  if (!c.ok()) return fail(SampleStatus::kFailed, c.error());
  if (over_budget(count * 8, allowed))  // count <= SCOUT_REPLAY_MAX_MEM (check_recipe): no wrap
    return fail(SampleStatus::kSkipped, "collective exceeds the replay memory limit");
  // Every member's input from the seed and its global rank, as run_coll: the expected sum is
  // known on every node (exact for two members in any reduction order).
  std::vector<std::vector<float>> in(static_cast<size_t>(nr), std::vector<float>(count));
  std::vector<float> want(count, 0.0f);
  for (int i = 0; i < nr; ++i)
    for (uint64_t e = 0; e < count; ++e)
      in[size_t(i)][e] = seeded(r.seed ^ uint64_t(members[size_t(i)].global_rank) * 0x9E3779B9ull, e);
  for (uint64_t e = 0; e < count; ++e)
    for (int i = 0; i < nr; ++i) want[e] += in[size_t(i)][e];
  const uint64_t want_fp = fp_f32(want.data(), count);
  Comms comms(L_, local.size());  // aborted on any early return: the other nodes' members fail now
  if (std::string why = coll_end_join(r, comms, nr, id, idx, devs, deadline_ns, c); !why.empty())
    return fail(SampleStatus::kFailed, why);
  std::vector<DeviceBuf> buf;
  buf.reserve(local.size());
  for (size_t k = 0; k < local.size(); ++k) {
    buf.emplace_back(L_, ctxs_[devs[k]]);
    if (!buf[k].alloc(count * 4, c)) return fail(SampleStatus::kFailed, c.error());
  }
  std::string error;
  std::vector<float> got(count);
  for (int round = 0; round < r.rounds && error.empty() && c.ok(); ++round) {
    for (size_t k = 0; k < local.size() && c.ok(); ++k) buf[k].put(in[size_t(idx[k])].data(), count * 4, c);
    if (!c.ok() || !drop_spans(c) || !c.nccl(L_->nccl.GroupStart(), "ncclGroupStart")) break;
    const uint64_t t0 = uint64_t(wall_ns());
    bool posted = true;
    for (size_t k = 0; k < local.size() && posted; ++k) {
      const int ar = L_->nccl.AllReduce(buf[k].addr(), buf[k].addr(), count, cudalib::kNcclFloat32, cudalib::kNcclSum,
                                        comms[k], streams_[devs[k]]);
      posted = ar == cudalib::kNcclInProgress || c.nccl(ar, "ncclAllReduce");
    }
    const int end = L_->nccl.GroupEnd();
    if (!posted || (end != cudalib::kNcclInProgress && !c.nccl(end, "ncclGroupEnd"))) break;
    error = coll_end_wait(comms, devs, deadline_ns, c);
    if (!error.empty() || !c.ok()) break;
    const int64_t wall = int64_t(uint64_t(wall_ns()) - t0);
    std::vector<KernelSpan> spans;
    if (cupti_on_ && !cupti_take(L_->cupti, &spans, c)) break;
    for (size_t k = 0; k < local.size() && c.ok(); ++k) {
      Sample s = sample_of(r, members[size_t(idx[k])], round);
      s.ns = cupti_on_ ? kernel_ns(spans, t0, devs[k], c) : wall;
      if (!c.ok() || !buf[k].get(got.data(), count * 4, c)) break;
      s.fp = fp_f32(got.data(), count);
      s.expected_known = nr == 2;  // a sum of two is exact in any order; larger groups vote
      s.expected_fp = want_fp;
      out.push_back(s);
    }
  }
  if (error.empty() && !c.ok()) error = c.error();
  if (!error.empty()) return fail(SampleStatus::kFailed, error);  // buffers freed, communicators aborted
  for (DeviceBuf& b : buf) b.free(c);
  if (!c.ok() || !comms.destroy(c)) return fail(SampleStatus::kFailed, c.error());
  return out;
}

bool CudaBackend::coll_init(const Recipe& r, Comms& comms, const std::vector<int>& devs, Calls& c) {
  // NCCL_ALGO / NCCL_PROTO are read at each communicator init (NCCL src/graph/tuning.cc).
  if (!r.coll.algo.empty()) setenv("NCCL_ALGO", r.coll.algo.c_str(), 1);
  if (!r.coll.proto.empty()) setenv("NCCL_PROTO", r.coll.proto.c_str(), 1);
  const int rc = L_->nccl.CommInitAll(comms.data(), int(devs.size()), devs.data());
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  return c.nccl(rc, "ncclCommInitAll");
}

void CudaBackend::run_allreduce(const Comms& comms, const std::vector<int>& devs, std::vector<DeviceBuf>& buf,
                                uint64_t count, Calls& c, std::vector<Sample>* out) {
  const int nr = int(devs.size());
  if (!drop_spans(c) || !c.nccl(L_->nccl.GroupStart(), "ncclGroupStart")) return;
  const uint64_t t0 = uint64_t(wall_ns());
  for (int i = 0; i < nr; ++i)
    c.nccl(L_->nccl.AllReduce(buf[i].addr(), buf[i].addr(), count, cudalib::kNcclFloat32, cudalib::kNcclSum, comms[i],
                              streams_[devs[i]]),
           "ncclAllReduce");
  const bool ended = c.nccl(L_->nccl.GroupEnd(), "ncclGroupEnd");  // always closes the group
  if (!ended || !c.ok()) return;
  for (int i = 0; i < nr; ++i)
    if (!sync(devs[i], c)) return;
  const uint64_t wall = uint64_t(wall_ns()) - t0;
  for (int i = 0; i < nr; ++i) (*out)[i].ns = int64_t(wall);
  if (!cupti_on_) return;
  std::vector<KernelSpan> spans;
  if (!cupti_take(L_->cupti, &spans, c)) return;
  for (int i = 0; i < nr && c.ok(); ++i) (*out)[i].ns = kernel_ns(spans, t0, devs[i], c);
}

}  // namespace scout::replay
