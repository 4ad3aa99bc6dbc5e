// The plugin's fingerprint engine (plugin/fingerprint/engine.h; docs/fingerprint.md, "Engine").
//
// This file holds the decisions shared by every mode (sampling, byte cap, budget, record
// updates) and the CPU path: without a CUDA driver every buffer is host memory, so send buffers
// are hashed at enqueue and receive buffers at completion, on the calling thread.
#include "plugin/fingerprint/engine.h"

#include <atomic>
#include <ctime>
#include <new>

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

}  // namespace

// What on_op_complete needs of a sampled operation, kept per ring slot (no allocation per op).
struct PendingOp {
  std::atomic<uint64_t> tag{0};  // shm::fp_tag(index) once filled (release), 0 = empty
  const void* recv_buf = nullptr;
  uint64_t recv_bytes = 0;
  uint64_t selector = 0;
  uint64_t fp_ns = 0;  // time already spent on this op (send hash)
  uint8_t dtype = 0;
  bool recv_wanted = false;
};

struct CommFp {
  uint64_t comm_hash = 0;
  shm::CommHeader* ring = nullptr;
  uint64_t mask = 0;
  PendingOp* pending = nullptr;
  std::atomic<uint32_t> level{0};  // written by the completion thread, read at enqueue
  Budget budget{0.0};
};

struct Engine::Impl {
  bool enabled = true;
  bool send = true;
  uint32_t period_log2 = 0;
  uint64_t max_bytes = 0;
  double budget = 0;
  abi::Logger log = nullptr;
};

Engine* Engine::create(const config::Config& cfg, abi::Logger log) {
  Engine* e = new (std::nothrow) Engine();
  if (!e) return nullptr;
  e->impl_ = new (std::nothrow) Impl();
  if (!e->impl_) {
    delete e;
    return nullptr;
  }
  Impl& im = *e->impl_;
  im.send = cfg.fp_send;
  im.period_log2 = ceil_log2(uint64_t(cfg.fp_sample < 1 ? 1 : cfg.fp_sample));
  im.max_bytes = cfg.fp_max_bytes;
  im.budget = cfg.fp_budget;
  im.log = log;
  im.enabled = cfg.fp;
  if (log && cfg.fp) {
    log(abi::kLogInfo, abi::kSubsysProfile, "scout", __LINE__,
        "scout: fingerprints on the CPU (no CUDA driver): host buffers only, 1 in %llu ops "
        "sampled at level 0, cap %llu bytes",
        (unsigned long long)(1ull << im.period_log2), (unsigned long long)im.max_bytes);
  }
  return e;
}

void Engine::destroy(Engine* e) {
  if (!e) return;
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
  return c;
}

void Engine::comm_fini(CommFp* c) {
  if (!c) return;
  delete[] c->pending;
  delete c;
}

void Engine::on_group_start() {}
void Engine::on_launch_start(CommFp*, void*, uint64_t) {}
void Engine::on_launch_stop(CommFp*, void*) {}
void Engine::on_group_end() {}

void Engine::on_op_enqueued(CommFp* c, shm::OpRecord* rec, uint64_t index, const OpInfo& op) {
  if (!c || !rec) return;
  // Only operations whose key matches across ranks are sampled: a fingerprint nobody can
  // compare is cost without evidence (docs/fingerprint.md, "Sampling").
  if (op.kind != shm::kKindColl && op.kind != shm::kKindSend && op.kind != shm::kKindRecv) return;
  const uint8_t sfunc = sampling_func(op.func);
  const uint32_t level = c->level.load(std::memory_order_relaxed);
  if (!sampled(c->comm_hash, sfunc, op.key, impl_->period_log2, level)) return;
  const uint64_t selector = op_selector(c->comm_hash, sfunc, op.key);

  store_relaxed(rec->fp_level, level);
  store_relaxed(rec->fp_version, kFormatVersion);
  std::atomic_ref<uint32_t>(rec->flags).fetch_or(shm::kFlagFpSampled | shm::kFlagHostBuffers,
                                                 std::memory_order_relaxed);
  c->ring->fp_sampled.fetch_add(1, std::memory_order_relaxed);

  const bool want_send = impl_->send && op.send_buf && op.send_bytes > 0;
  const bool want_recv = op.recv_buf && op.recv_bytes > 0;
  if (op.graph_captured) {
    // Captured operations run at graph replay, not now: nothing here sees their bytes.
    if (want_send) rec->fp_send_word.store(shm::fp_word(index, shm::kFpSkippedCaptured), std::memory_order_release);
    if (want_recv) rec->fp_recv_word.store(shm::fp_word(index, shm::kFpSkippedCaptured), std::memory_order_release);
    if (want_send || want_recv) c->ring->fp_skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }

  PendingOp& p = c->pending[index & c->mask];
  p.tag.store(0, std::memory_order_relaxed);
  p.fp_ns = 0;
  if (want_send) {
    const int64_t t0 = mono_ns();
    Counts counts;
    uint64_t bytes = 0;
    uint64_t v = fingerprint_capped(op.send_buf, op.send_bytes, impl_->max_bytes, selector, op.dtype,
                                    &counts, &bytes);
    p.fp_ns = uint64_t(mono_ns() - t0);
    store_relaxed(rec->fp_send, v);
    store_relaxed(rec->send_nan, sat32(counts.nan));
    store_relaxed(rec->send_inf, sat32(counts.inf));
    store_relaxed(rec->fp_bytes, bytes);
    rec->fp_send_word.store(shm::fp_word(index, shm::kFpDone), std::memory_order_release);
  }
  p.recv_buf = op.recv_buf;
  p.recv_bytes = op.recv_bytes;
  p.selector = selector;
  p.dtype = op.dtype;
  p.recv_wanted = want_recv;
  if (want_recv) rec->fp_recv_word.store(shm::fp_word(index, shm::kFpPending), std::memory_order_release);
  p.tag.store(shm::fp_tag(index), std::memory_order_release);
}

void Engine::on_op_complete(CommFp* c, shm::OpRecord* rec, uint64_t index, uint64_t kernel_ns) {
  if (!c) return;
  uint64_t fp_ns = 0;
  PendingOp& p = c->pending[index & c->mask];
  if (rec && p.tag.load(std::memory_order_acquire) == shm::fp_tag(index)) {
    p.tag.store(0, std::memory_order_relaxed);  // consumed: a duplicate completion does nothing
    fp_ns = p.fp_ns;
    if (p.recv_wanted) {
      const int64_t t0 = mono_ns();
      Counts counts;
      uint64_t bytes = 0;
      uint64_t v = fingerprint_capped(p.recv_buf, p.recv_bytes, impl_->max_bytes, p.selector, p.dtype,
                                      &counts, &bytes);
      fp_ns += uint64_t(mono_ns() - t0);
      store_relaxed(rec->fp_recv, v);
      store_relaxed(rec->recv_nan, sat32(counts.nan));
      store_relaxed(rec->recv_inf, sat32(counts.inf));
      store_relaxed(rec->fp_bytes, bytes);
      rec->fp_recv_word.store(shm::fp_word(index, shm::kFpDone), std::memory_order_release);
    }
  }
  c->ring->fp_gpu_ns.fetch_add(fp_ns, std::memory_order_relaxed);
  c->ring->kernel_ns.fetch_add(kernel_ns, std::memory_order_relaxed);
  const uint32_t level = c->budget.add(fp_ns, kernel_ns);
  if (level != c->level.load(std::memory_order_relaxed)) {
    c->level.store(level, std::memory_order_relaxed);
    c->ring->fp_level.store(level, std::memory_order_relaxed);
  }
}

bool Engine::gpu_available() const { return false; }

bool Engine::gpu_uuid(int, char* out, unsigned cap) const {
  if (out && cap) out[0] = 0;
  return false;
}

uint8_t sampling_func(uint8_t func) { return func == shm::kFuncRecv ? uint8_t(shm::kFuncSend) : func; }

}  // namespace scout::fp
