// The plugin's fingerprint engine (plugin/fingerprint/engine.h; docs/fingerprint.md, "Engine").
//
// Shared by every mode: the sampling decision, the byte cap, the budget, and the per-ring-slot
// protocol that keeps late results out of reused records. Then, per communicator:
//  * CPU mode (no CUDA driver, or no CUDA context at communicator init: the emulated job):
//    every buffer is host memory; send buffers are hashed at enqueue, receive buffers at
//    completion, on the calling thread.
//  * GPU mode: send buffers are hashed by a kernel enqueued at KernelLaunch start, before
//    NCCL's kernel, that waits for the buffer addresses Coll start writes into its pinned plan
//    (released at the latest at group end); receive buffers by a kernel enqueued at group end
//    on the launch stream, after NCCL's kernel. Results land in pinned memory and are copied into
//    the records by the completion thread (harvest).
#include "plugin/fingerprint/engine.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "plugin/fingerprint/gpu_pools.h"
#include "plugin/gpu/fp_nonfinite.h"
#include "plugin/gpu/fp_params.h"
#include "scout/fingerprint.h"

namespace scout::fp {
namespace {

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

uint32_t sat32(uint64_t v) { return v > 0xffffffffull ? 0xffffffffu : uint32_t(v); }

template <class T>
void store_relaxed(T& field, T value) {
  std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}

// Smallest k with 2^k >= n (SCOUT_FP_SAMPLE is rounded up to a power of two).
uint32_t ceil_log2(uint64_t n) {
  uint32_t k = 0;
  while (k < 63 && (1ull << k) < n) ++k;
  return k;
}

void set_word(shm::OpRecord* rec, bool send, uint64_t index, shm::FpStatus st) {
  (send ? rec->fp_send_word : rec->fp_recv_word).store(shm::fp_word(index, st), std::memory_order_release);
}

// How long a send-hash kernel waits for its buffer addresses before giving up (GPU time).
constexpr uint64_t kSendWaitTimeoutNs = 20'000'000;
// Receive hashes one thread can queue between group start and group end.
constexpr uint32_t kMaxRecvPerGroup = 64;
// Live GPU results per communicator awaiting harvest (two per sampled operation in flight).
constexpr uint32_t kInflight = 64;
// CUDA contexts one process may fingerprint on.
constexpr uint32_t kMaxPools = 32;

enum class Mode : uint8_t { kCpu, kGpu, kGpuUnavailable };

// Slot phases of PendingOp::state (low 2 bits; the tag of the owning ring index above).
constexpr uint64_t kPhaseIdle = 0, kPhaseActive = 1, kPhaseWriting = 2;
constexpr uint64_t state_of(uint64_t index, uint64_t phase) { return (shm::fp_tag(index) << 2) | phase; }

}  // namespace

// Per ring slot: who owns the slot's fingerprint fields now, and what completion needs (CPU
// mode). A writer of results for index i first moves state (i, active) -> (i, writing); enqueue
// of a newer index waits while a write is in progress, then takes the slot. So a late result can
// never land in a record that a newer operation owns.
struct PendingOp {
  std::atomic<uint64_t> state{0};
  const void* recv_buf = nullptr;
  uint64_t recv_bytes = 0;
  uint64_t selector = 0;
  uint64_t fp_ns = 0;  // CPU time already spent on this op (send hash)
  uint8_t dtype = 0;
  bool recv_wanted = false;
};

// A GPU job whose result the completion thread copies into the record.
struct Inflight {
  std::atomic<uint32_t> state{0};  // 0 free, 1 filling, 2 live
  shm::OpRecord* rec = nullptr;
  uint64_t index = 0;
  GpuPools* pools = nullptr;
  int32_t plan = -1;
  int32_t job = -1;
  uint32_t seq = 0;
  bool send = false;
};

struct CommFp {
  uint64_t comm_hash = 0;
  shm::CommHeader* ring = nullptr;
  uint64_t mask = 0;
  PendingOp* pending = nullptr;
  Mode mode = Mode::kCpu;
  GpuPools* pools = nullptr;
  Inflight inflight[kInflight];
  std::atomic<uint32_t> live{0};   // published Inflight entries (harvest returns at once on 0)
  std::atomic<uint32_t> level{0};  // written by the completion thread, read at enqueue
  Budget budget{0.0};
  uint64_t fp_ns_accum = 0;  // harvested GPU time not yet fed to the budget (completion thread)
};

// Per-thread group state (trivially destructible: no TLS destructor points into the .so).
struct RecvReq {
  CommFp* c;
  shm::OpRecord* rec;
  uint64_t index;
  void* stream;
  uint64_t buf, len, selector;
  uint8_t kind;
};
struct ThreadState {
  uint64_t engine_gen;  // the engine instance this state belongs to
  bool in_group;
  CommFp* pre_c;  // open send plan (waiting kernel enqueued, not yet released)
  GpuPools* pre_pools;
  int32_t pre_plan;
  uint32_t n_recv;
  RecvReq recv[kMaxRecvPerGroup];
};
static_assert(std::is_trivially_destructible_v<ThreadState>);
thread_local ThreadState t_state;

struct Engine::Impl {
  bool enabled = true;
  bool send = true;
  bool launch_blocking = false;
  uint32_t period_log2 = 0;
  uint64_t max_bytes = 0;
  double budget = 0;
  abi::Logger log = nullptr;
  uint64_t gen = 0;
  std::unique_ptr<gpu::Backend> backend;
  std::mutex pools_mu;  // comm_init / destroy only
  GpuPools* pools[kMaxPools] = {};
  uint32_t n_pools = 0;
  std::atomic<bool> gpu_failed{false};
  std::atomic<uint32_t> seq{0};

  void say(const char* fmt, const char* a = "", const char* b = "") const {
    if (log) log(abi::kLogInfo, abi::kSubsysProfile, "scout", 0, fmt, a, b);
  }
  void fail_gpu(const char* what) {
    if (!gpu_failed.exchange(true))
      say("scout: fingerprints: %s failed; GPU fingerprints disabled for this process%s", what);
  }
  ThreadState& ts() {
    ThreadState& s = t_state;
    if (s.engine_gen != gen) {
      std::memset(&s, 0, sizeof(s));
      s.engine_gen = gen;
      s.pre_plan = -1;
    }
    return s;
  }
  void release_pre(ThreadState& s);
  void flush_recv(ThreadState& s);
  Inflight* reserve(CommFp* c, uint64_t index);
  void publish(Inflight* e, shm::OpRecord* rec, uint64_t index, GpuPools* p, int plan, int job, uint32_t seq,
               bool send);
  void harvest(CommFp* c);
};

namespace {
std::atomic<uint64_t> g_engine_gen{0};

// Takes ring slot `index` for a new operation (waits out a result write in progress).
void claim_slot(PendingOp& p, uint64_t index) {
  uint64_t s = p.state.load(std::memory_order_acquire);
  for (;;) {
    if ((s & 3) == kPhaseWriting) {
      s = p.state.load(std::memory_order_acquire);  // a write of a few stores: spin
      continue;
    }
    if (p.state.compare_exchange_weak(s, state_of(index, kPhaseActive), std::memory_order_acq_rel)) return;
  }
}

// Begins writing results for `index`; false if the slot now belongs to another operation.
bool begin_write(PendingOp& p, uint64_t index) {
  uint64_t s = state_of(index, kPhaseActive);
  return p.state.compare_exchange_strong(s, state_of(index, kPhaseWriting), std::memory_order_acq_rel);
}
void end_write(PendingOp& p, uint64_t index) {
  p.state.store(state_of(index, kPhaseActive), std::memory_order_release);
}

void write_result(shm::OpRecord* rec, uint64_t index, bool send, uint64_t value, uint64_t nan, uint64_t inf,
                  uint64_t bytes) {
  if (send) {
    store_relaxed(rec->fp_send, value);
    store_relaxed(rec->send_nan, sat32(nan));
    store_relaxed(rec->send_inf, sat32(inf));
    // fp_bytes describes the receive fingerprint once there is one (docs: "Record fields").
    if (shm::fp_status(rec->fp_recv_word.load(std::memory_order_acquire), index) != shm::kFpDone)
      store_relaxed(rec->fp_bytes, bytes);
  } else {
    store_relaxed(rec->fp_recv, value);
    store_relaxed(rec->recv_nan, sat32(nan));
    store_relaxed(rec->recv_inf, sat32(inf));
    store_relaxed(rec->fp_bytes, bytes);
  }
  set_word(rec, send, index, shm::kFpDone);
}

}  // namespace

Engine* Engine::create(const config::Config& cfg, abi::Logger log) {
  std::unique_ptr<gpu::Backend> be;
  std::string why;
  try {
    if (cfg.fp) be = gpu::open_cuda_backend(&why);
  } catch (...) {
    be.reset();
    why = "out of memory";
  }
  Engine* e = create_with_backend(cfg, log, std::move(be));
  if (e && cfg.fp && !e->impl_->backend && log) {
    log(abi::kLogInfo, abi::kSubsysProfile, "scout", __LINE__,
        "scout: fingerprints on the CPU for host buffers only: %s", why.c_str());
  }
  return e;
}

Engine* Engine::create_with_backend(const config::Config& cfg, abi::Logger log, std::unique_ptr<gpu::Backend> backend) {
  Engine* e = new (std::nothrow) Engine();
  if (!e) return nullptr;
  e->impl_ = new (std::nothrow) Impl();
  if (!e->impl_) {
    delete e;
    return nullptr;
  }
  Impl& im = *e->impl_;
  im.enabled = cfg.fp;
  im.send = cfg.fp_send;
  im.period_log2 = ceil_log2(uint64_t(cfg.fp_sample < 1 ? 1 : cfg.fp_sample));
  im.max_bytes = cfg.fp_max_bytes;
  im.budget = cfg.fp_budget;
  im.log = log;
  im.gen = g_engine_gen.fetch_add(1, std::memory_order_relaxed) + 1;
  im.backend = std::move(backend);
  const char* clb = std::getenv("CUDA_LAUNCH_BLOCKING");
  im.launch_blocking = clb && *clb && std::strcmp(clb, "0") != 0;
  return e;
}

void Engine::destroy(Engine* e) {
  if (!e) return;
  if (e->impl_) {
    for (uint32_t i = 0; i < e->impl_->n_pools; ++i) {
      if (!GpuPools::destroy(e->impl_->pools[i]))
        e->impl_->say("scout: fingerprints: a hash kernel was still running at shutdown; its buffers are kept%s");
    }
  }
  delete e->impl_;
  delete e;
}

CommFp* Engine::comm_init(uint64_t comm_hash, int nranks, int cuda_dev, shm::CommHeader* ring) {
  if (!impl_ || !impl_->enabled || !ring || ring->ring_capacity == 0) return nullptr;
  CommFp* c = new (std::nothrow) CommFp();
  if (!c) return nullptr;
  c->comm_hash = comm_hash;
  c->ring = ring;
  c->mask = ring->ring_capacity - 1;
  c->pending = new (std::nothrow) PendingOp[ring->ring_capacity];
  if (!c->pending) {
    delete c;
    return nullptr;
  }
  c->budget = Budget(impl_->budget);
  ring->fp_level.store(0, std::memory_order_relaxed);
  // Mode: a CUDA context current at init means NCCL's buffers are device memory.
  gpu::Backend* be = impl_->backend.get();
  void* ctx = be ? be->current_context() : nullptr;
  if (!ctx) return c;  // CPU mode
  c->mode = Mode::kGpuUnavailable;
  std::lock_guard<std::mutex> lock(impl_->pools_mu);
  for (uint32_t i = 0; i < impl_->n_pools; ++i)
    if (impl_->pools[i]->ctx() == ctx) c->pools = impl_->pools[i];
  if (!c->pools && impl_->n_pools < kMaxPools && !impl_->gpu_failed.load()) {
    int sms = 0;
    std::string why;
    try {
      if (be->prepare(ctx, &sms, &why)) {
        c->pools = GpuPools::create(be, ctx, sms, impl_->max_bytes);
        if (!c->pools) why = "allocating the fingerprint buffers failed";
      }
    } catch (...) { why = "out of memory"; }
    if (c->pools) {
      impl_->pools[impl_->n_pools++] = c->pools;
    } else {
      impl_->say("scout: fingerprints: %s; device buffers are not fingerprinted%s", why.c_str());
    }
  }
  if (c->pools) c->mode = Mode::kGpu;
  return c;
}

void Engine::comm_fini(CommFp* c) {
  if (!c) return;
  if (impl_) {
    ThreadState& s = impl_->ts();
    if (s.pre_c == c) impl_->release_pre(s);
    for (uint32_t i = 0; i < s.n_recv; ++i)
      if (s.recv[i].c == c) s.recv[i].c = nullptr;  // dropped: this communicator is gone
    impl_->harvest(c);
  }
  delete[] c->pending;
  delete c;
}

// ---------------------------------------------------------------- group / launch hooks

void Engine::on_group_start() {
  if (!impl_ || !impl_->enabled) return;
  ThreadState& s = impl_->ts();
  if (s.pre_plan >= 0) impl_->release_pre(s);  // a group that never ended: release now
  if (s.n_recv) impl_->flush_recv(s);
  s.in_group = true;
}

void Engine::on_group_end() {
  if (!impl_ || !impl_->enabled) return;
  ThreadState& s = impl_->ts();
  impl_->release_pre(s);
  impl_->flush_recv(s);
  s.in_group = false;
}

void Engine::on_launch_start(CommFp* c, void* stream, uint64_t send_bytes_hint) {
  if (!c || c->mode != Mode::kGpu) return;
  Impl& im = *impl_;
  ThreadState& s = im.ts();
  im.release_pre(s);  // the previous plan's Coll starts are over
  if (!s.in_group || !im.send || im.launch_blocking || im.gpu_failed.load(std::memory_order_relaxed)) return;
  gpu::Backend* be = im.backend.get();
  if (be->capturing(stream) != 0) return;  // captured (or unknown): never put work into a graph
  GpuPools* p = c->pools;
  const int plan = p->claim_plan(1, kSendWaitTimeoutNs);
  if (plan < 0) return;  // pools busy: this plan's sends are reported TimedOut
  // Sized from the largest send the event layer saw pending, else 2 CTAs per SM.
  const uint32_t grid = send_bytes_hint ? gpu::grid_for_items(gpu::job_items(hashed_leaves(send_bytes_hint, im.max_bytes)),
                                                              p->sm_count())
                                        : uint32_t(p->sm_count()) * 2;
  if (!be->launch(p->ctx(), stream, p->plan_dev(plan), p->plan_scratch_dev(plan), grid ? grid : 1)) {
    p->plan_failed(plan);
    im.fail_gpu("launching the send fingerprint kernel");
    return;
  }
  p->plan_launched(plan);
  s.pre_c = c;
  s.pre_pools = p;
  s.pre_plan = plan;
}

void Engine::Impl::release_pre(ThreadState& s) {
  if (s.pre_plan < 0) return;
  s.pre_pools->release_plan(s.pre_plan);
  s.pre_plan = -1;
  s.pre_c = nullptr;
  s.pre_pools = nullptr;
}

Inflight* Engine::Impl::reserve(CommFp* c, uint64_t index) {
  for (uint32_t k = 0; k < kInflight; ++k) {
    Inflight& e = c->inflight[(index + k) % kInflight];
    uint32_t st = 0;
    if (e.state.compare_exchange_strong(st, 1, std::memory_order_acq_rel)) return &e;
  }
  return nullptr;
}

void Engine::Impl::publish(Inflight* e, shm::OpRecord* rec, uint64_t index, GpuPools* p, int plan, int job, uint32_t sq,
                           bool send) {
  e->rec = rec;
  e->index = index;
  e->pools = p;
  e->plan = plan;
  e->job = job;
  e->seq = sq;
  e->send = send;
  e->state.store(2, std::memory_order_release);
}

void Engine::Impl::flush_recv(ThreadState& s) {
  const uint32_t n = s.n_recv;
  s.n_recv = 0;
  bool done[kMaxRecvPerGroup] = {};
  auto skip = [](const RecvReq& r, shm::FpStatus st) {
    set_word(r.rec, false, r.index, st);
    r.c->ring->fp_skipped.fetch_add(1, std::memory_order_relaxed);
  };
  // One kernel per (context, stream, up to kMaxJobs requests), in request order.
  for (uint32_t i = 0; i < n; ++i) {
    if (done[i]) continue;
    const RecvReq first = s.recv[i];
    if (!first.c) continue;
    GpuPools* p = first.c->pools;
    const int cap = backend->capturing(first.stream);
    const int plan = (cap == 0 && !gpu_failed.load(std::memory_order_relaxed)) ? p->claim_plan(0, 0) : -1;
    Inflight* entries[gpu::kMaxJobs];
    int jobs[gpu::kMaxJobs];
    uint32_t members[gpu::kMaxJobs];
    uint32_t nj = 0;
    for (uint32_t k = i; k < n && nj < gpu::kMaxJobs; ++k) {
      const RecvReq& r = s.recv[k];
      if (done[k] || !r.c || r.c->pools != p || r.stream != first.stream) continue;
      done[k] = true;
      if (plan < 0) {
        skip(r, cap != 0 ? shm::kFpSkippedCaptured : shm::kFpTimedOut);
        continue;
      }
      Inflight* e = reserve(r.c, r.index);
      const uint32_t sq = seq.fetch_add(1, std::memory_order_relaxed);
      const int j = e ? p->add_job(plan, r.buf, r.len, max_bytes, r.selector, r.kind, sq) : -1;
      if (j < 0) {
        if (e) e->state.store(0, std::memory_order_release);
        skip(r, shm::kFpTimedOut);
        continue;
      }
      entries[nj] = e;
      jobs[nj] = j;
      members[nj++] = k;
    }
    if (plan < 0) continue;
    p->release_plan(plan);
    const uint32_t grid = gpu::grid_for_items(p->plan_items(plan), p->sm_count());
    const bool ok = backend->launch(p->ctx(), first.stream, p->plan_dev(plan), p->plan_scratch_dev(plan), grid);
    if (ok) p->plan_launched(plan);
    for (uint32_t m = 0; m < nj; ++m) {
      const RecvReq& r = s.recv[members[m]];
      if (ok) {
        publish(entries[m], r.rec, r.index, p, plan, jobs[m], p->plan(plan)->jobs[m].seq, false);
        r.c->live.fetch_add(1, std::memory_order_relaxed);
      } else {
        p->release_job(jobs[m], plan);
        entries[m]->state.store(0, std::memory_order_release);
        skip(r, shm::kFpSkippedError);
      }
    }
    if (!ok) {
      p->plan_failed(plan);
      fail_gpu("launching the receive fingerprint kernel");
    }
  }
}

// ---------------------------------------------------------------- per operation

bool Engine::may_sample(const CommFp* c, uint8_t kind, uint8_t func, uint64_t key) const {
  if (!c) return false;
  // Only operations whose key matches across ranks are sampled: a fingerprint nobody can
  // compare is cost without evidence (docs/fingerprint.md, "Sampling").
  if (kind != shm::kKindColl && kind != shm::kKindSend && kind != shm::kKindRecv) return false;
  return sampled(c->comm_hash, sampling_func(func), key, impl_->period_log2, c->level.load(std::memory_order_relaxed));
}

void Engine::on_op_enqueued(CommFp* c, shm::OpRecord* rec, uint64_t index, const OpInfo& op) {
  if (!c || !rec) return;
  if (!may_sample(c, op.kind, op.func, op.key)) return;
  Impl& im = *impl_;
  const uint8_t sfunc = sampling_func(op.func);
  const uint32_t level = c->level.load(std::memory_order_relaxed);
  const uint64_t selector = op_selector(c->comm_hash, sfunc, op.key);

  PendingOp& p = c->pending[index & c->mask];
  claim_slot(p, index);
  store_relaxed(rec->fp_level, level);
  store_relaxed(rec->fp_version, kFormatVersion);
  std::atomic_ref<uint32_t>(rec->flags)
      .fetch_or(shm::kFlagFpSampled | (c->mode == Mode::kCpu ? uint32_t(shm::kFlagHostBuffers) : 0u),
                std::memory_order_relaxed);
  c->ring->fp_sampled.fetch_add(1, std::memory_order_relaxed);

  const bool want_send = im.send && op.send_buf && op.send_bytes > 0;
  const bool want_recv = op.recv_buf && op.recv_bytes > 0;
  p.recv_wanted = false;
  p.fp_ns = 0;
  auto skip_all = [&](shm::FpStatus st) {
    if (want_send) set_word(rec, true, index, st);
    if (want_recv) set_word(rec, false, index, st);
    if (want_send || want_recv) c->ring->fp_skipped.fetch_add(1, std::memory_order_relaxed);
  };
  if (op.graph_captured) {
    // Captured operations run at graph replay, not now: nothing here sees their bytes.
    skip_all(shm::kFpSkippedCaptured);
    return;
  }

  if (c->mode == Mode::kGpuUnavailable || (c->mode == Mode::kGpu && im.gpu_failed.load(std::memory_order_relaxed))) {
    skip_all(c->mode == Mode::kGpuUnavailable ? shm::kFpSkippedDevice : shm::kFpSkippedError);
    return;
  }

  if (c->mode == Mode::kGpu) {
    ThreadState& s = im.ts();
    if (!op.on_launch_thread || !s.in_group) {
      // A CUDA host-callback thread (no CUDA calls allowed) or a thread outside a group (a
      // non-blocking communicator's launch thread): nowhere safe to enqueue GPU work.
      skip_all(shm::kFpSkippedCallback);
      return;
    }
    const uint8_t kind = float_kind(op.dtype);
    bool skipped = false;
    if (want_send) {
      int job = -1;
      Inflight* e = (s.pre_plan >= 0 && s.pre_c == c) ? im.reserve(c, index) : nullptr;
      if (e) {
        const uint32_t sq = im.seq.fetch_add(1, std::memory_order_relaxed);
        job = s.pre_pools->add_job(s.pre_plan, uint64_t(op.send_buf), op.send_bytes, im.max_bytes, selector, kind, sq);
        if (job >= 0) {
          im.publish(e, rec, index, s.pre_pools, s.pre_plan, job, sq, true);
          c->live.fetch_add(1, std::memory_order_relaxed);
        } else {
          e->state.store(0, std::memory_order_release);
        }
      }
      if (job >= 0) {
        set_word(rec, true, index, shm::kFpPending);
      } else {
        set_word(rec, true, index, shm::kFpTimedOut);  // no waiting kernel before NCCL's
        skipped = true;
      }
    }
    if (want_recv) {
      if (s.n_recv < kMaxRecvPerGroup) {
        s.recv[s.n_recv++] = RecvReq{c, rec, index, op.stream, uint64_t(op.recv_buf), op.recv_bytes, selector, kind};
        set_word(rec, false, index, shm::kFpPending);
      } else {
        set_word(rec, false, index, shm::kFpTimedOut);
        skipped = true;
      }
    }
    if (skipped) c->ring->fp_skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }

  // CPU mode: host buffers.
  if (want_send) {
    const int64_t t0 = mono_ns();
    Counts counts;
    uint64_t bytes = 0;
    uint64_t v = fingerprint_capped(op.send_buf, op.send_bytes, im.max_bytes, selector, op.dtype, &counts, &bytes);
    p.fp_ns = uint64_t(mono_ns() - t0);
    write_result(rec, index, true, v, counts.nan, counts.inf, bytes);
  }
  p.recv_buf = op.recv_buf;
  p.recv_bytes = op.recv_bytes;
  p.selector = selector;
  p.dtype = op.dtype;
  p.recv_wanted = want_recv;
  if (want_recv) set_word(rec, false, index, shm::kFpPending);
}

void Engine::Impl::harvest(CommFp* c) {
  if (c->mode != Mode::kGpu) return;
  uint32_t live = c->live.load(std::memory_order_acquire);
  for (uint32_t k = 0; k < kInflight && live > 0; ++k) {
    Inflight& e = c->inflight[k];
    if (e.state.load(std::memory_order_acquire) != 2) continue;
    --live;
    GpuPools* p = e.pools;
    bool done = p->result_done(e.job, e.seq);
    // The launch is over and the result never came (abandoned wait): re-read the result after
    // seeing `finished`, which the kernel writes after every result.
    const bool lost = !done && p->plan_finished(e.plan) && !(done = p->result_done(e.job, e.seq));
    if (!done && !lost) continue;
    PendingOp& slot = c->pending[e.index & c->mask];
    if (begin_write(slot, e.index)) {
      if (done) {
        const gpu::FpResult* r = p->result(e.job);
        write_result(e.rec, e.index, e.send, r->value, r->nan, r->inf, r->bytes);
        c->fp_ns_accum += r->gpu_ns;
      } else {
        set_word(e.rec, e.send, e.index, shm::kFpTimedOut);
        c->ring->fp_skipped.fetch_add(1, std::memory_order_relaxed);
      }
      end_write(slot, e.index);
    } else if (done) {
      c->fp_ns_accum += p->result(e.job)->gpu_ns;  // the record was reused: result dropped
    }
    p->release_job(e.job, e.plan);
    e.state.store(0, std::memory_order_release);
    c->live.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Engine::on_op_complete(CommFp* c, shm::OpRecord* rec, uint64_t index, uint64_t kernel_ns) {
  if (!c) return;
  impl_->harvest(c);
  uint64_t fp_ns = c->fp_ns_accum;
  c->fp_ns_accum = 0;
  PendingOp& p = c->pending[index & c->mask];
  if (c->mode == Mode::kCpu && rec && begin_write(p, index)) {
    fp_ns += p.fp_ns;
    p.fp_ns = 0;
    if (p.recv_wanted) {
      p.recv_wanted = false;  // a duplicate completion does nothing
      const int64_t t0 = mono_ns();
      Counts counts;
      uint64_t bytes = 0;
      uint64_t v = fingerprint_capped(p.recv_buf, p.recv_bytes, impl_->max_bytes, p.selector, p.dtype, &counts, &bytes);
      fp_ns += uint64_t(mono_ns() - t0);
      write_result(rec, index, false, v, counts.nan, counts.inf, bytes);
    }
    end_write(p, index);
  }
  if (fp_ns != 0) c->ring->fp_gpu_ns.fetch_add(fp_ns, std::memory_order_relaxed);
  const uint32_t level = c->budget.add(fp_ns, kernel_ns);
  if (level != c->level.load(std::memory_order_relaxed)) {
    c->level.store(level, std::memory_order_relaxed);
    c->ring->fp_level.store(level, std::memory_order_relaxed);
  }
}

bool Engine::gpu_available() const {
  return impl_ && impl_->backend && impl_->n_pools > 0 && !impl_->gpu_failed.load();
}

bool Engine::gpu_uuid(int cuda_dev, char* out, unsigned cap) const {
  if (out && cap) out[0] = 0;
  if (!impl_ || !impl_->backend) return false;
  return impl_->backend->uuid(cuda_dev, out, cap);
}

uint8_t sampling_func(uint8_t func) { return func == shm::kFuncRecv ? uint8_t(shm::kFuncSend) : func; }

}  // namespace scout::fp
