// KernelCh handling and completion (kernel_ch.h).
//
// Threads: every KernelCh event of one operation comes from its communicator's proxy progress
// thread (docs/nccl-notes.md §1.4: one per proxy state), so the per-operation channel masks, counters and
// min/max times are updated with plain loads and stores, no locked instruction. (Should NCCL
// ever deliver one operation's channels from two threads at once, the cost would be a miscount
// of that operation, never a crash or an unbounded counter: every value is derived from masks
// of at most 64 bits.) The CPU clock is read once per operation, at completion; that read is
// also the clock offset sample (and the first operation of a communicator takes one at its
// first channel start, so that its start time converts).
#include "plugin/core/kernel_ch.h"

#include "plugin/core/clock.h"
#include "plugin/core/handle.h"
#include "plugin/core/log.h"
#include "plugin/core/process.h"
#include "plugin/core/thread_cache.h"
#include "plugin/fingerprint/engine.h"

namespace scout::core {
namespace {

constexpr uint32_t kMaxChannels = 64;

inline void* inert(Process* p) { return to_ptr(encode(p->salt, HandleType::kInert, 0)); }

void count_orphan(CommState* c) {
  c->hdr->kernelch_orphans.fetch_add(1, std::memory_order_relaxed);
  log::info_once(log::Problem::kKernelChOrphan,
                 "KernelCh event for an operation whose record was already overwritten (ring "
                 "too small for the proxy's lag?); counted in kernelch_orphans");
}

void count_extra(CommState* c) {
  c->hdr->kernelch_extra.fetch_add(1, std::memory_order_relaxed);
  log::info_once(log::Problem::kKernelChExtra,
                 "duplicate or extra KernelCh channel event ignored; counted in kernelch_extra");
}

// The record named by (ring, low index bits); nullptr (counted) when it is gone.
inline shm::OpRecord* find_record(Process* p, uint32_t ring, uint64_t low, int bits, CommState** comm,
                                  uint64_t* index) {
  CommState* c = comm_at(p, ring);
  *comm = c;
  if (c == nullptr) {
    count_bad_handle(p, nullptr);
    return nullptr;
  }
  shm::OpRecord* r = c->rw.find(low, bits, index);
  if (r == nullptr) count_orphan(c);
  return r;
}

// One clock offset sample: (CPU time of a KernelCh callback) - (the GPU time it reports).
inline void sample_clock(CommState* c, int64_t cpu_ns, uint64_t gpu_ns) {
  int64_t off = c->clock.sample(cpu_ns, gpu_ns);
  if (c->hdr->gpu_clock_offset_ns.load(std::memory_order_relaxed) != off) {
    c->hdr->gpu_clock_offset_ns.store(off, std::memory_order_relaxed);
  }
}

// The last channel stopped: the operation completed on this rank (out of line: once per
// operation, and its register use would otherwise weigh on every channel's stop).
__attribute__((noinline)) void complete(Process* p, CommState* c, shm::OpRecord* r, uint64_t index, SlotChannels& sc) {
  // The CPU time of this callback is also a clock offset sample: it came after every
  // channel's stop time, the latest of which is end_raw.
  int64_t now = now_ns();
  uint64_t start = r->gpu_start_raw.load(std::memory_order_relaxed);
  uint64_t end = sc.end_raw.load(std::memory_order_relaxed);
  if (end != 0) sample_clock(c, now, end);
  // Converted with the freshest offset (it may have improved since the starts were converted).
  int64_t ws = c->clock.to_wall(start), we = c->clock.to_wall(end);
  if (ws != 0) r->gpu_start_ns.store(ws, std::memory_order_relaxed);
  if (we != 0) r->gpu_end_ns.store(we, std::memory_order_relaxed);
  // This proxy thread's communicator, for attributing PXN ProxyOps (events.cc); refreshed
  // every 64th operation (a thread-local access is a call in a shared object).
  uint16_t ring1 = uint16_t(c->ring_index + 1);
  if ((index & 63) == 0 && (t_cache.salt != p->salt || t_cache.last_ring != ring1)) {
    if (t_cache.salt != p->salt) t_cache.tb = nullptr;
    t_cache.salt = p->salt;
    t_cache.last_ring = ring1;
  }
  uint64_t kernel_ns = start != 0 && end > start ? end - start : 0;
  r->complete_ns.store(now, std::memory_order_relaxed);
  r->state.store(shm::kStateComplete, std::memory_order_release);
  touch(p, now);
  if (kernel_ns != 0) {
    // Completions of one communicator come from its proxy thread: a plain add, here only.
    c->hdr->kernel_ns.store(c->hdr->kernel_ns.load(std::memory_order_relaxed) + kernel_ns, std::memory_order_relaxed);
  }
  if (p->engine != nullptr && c->fp != nullptr) p->engine->on_op_complete(c->fp, r, index, kernel_ns);
}

}  // namespace

void* kernelch_start(Process* p, void* ctx, const abi::DescrV5& d) {
  Decoded par = decode(d.parentObj, p->salt);
  if (par.type != HandleType::kOp) {
    if (par.type != HandleType::kInert) count_bad_handle(p, comm_from_context(p, ctx));
    return inert(p);
  }
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r = find_record(p, op_ring(par.payload), op_index_low(par.payload), kOpIndexBits, &c, &index);
  if (r == nullptr) return inert(p);
  uint32_t ch = d.kernelCh.channelId;
  if (ch >= kMaxChannels) {
    count_extra(c);
    return inert(p);
  }
  uint32_t nch = r->n_channels;
  SlotChannels& sc = slot_channels(c, index);
  uint64_t bit = 1ull << ch;
  uint64_t old = sc.started.load(std::memory_order_relaxed);
  uint32_t seen = r->ch_started.load(std::memory_order_relaxed);
  if ((old & bit) != 0 || (nch != 0 && seen >= nch)) {
    count_extra(c);
    return inert(p);
  }
  sc.started.store(old | bit, std::memory_order_relaxed);
  r->ch_started_mask.store(old | bit, std::memory_order_relaxed);
  r->ch_started.store(uint16_t(seen + 1), std::memory_order_relaxed);
  uint64_t ptimer = d.kernelCh.pTimer;
  if (old == 0) {
    // First channel of the operation: it runs on the GPU now. After publication only this
    // thread changes the state (Enqueued -> Running -> Complete).
    if (r->state.load(std::memory_order_relaxed) == shm::kStateEnqueued) {
      r->state.store(shm::kStateRunning, std::memory_order_release);
    }
    // Before the communicator's first completion there is no clock offset yet: take one sample
    // here so that this operation's start converts.
    bool have = false;
    c->clock.estimate(&have);
    if (!have && ptimer != 0) sample_clock(c, now_ns(), ptimer);
  }
  if (ptimer != 0) {
    // The earliest start: gpu_start_raw at once; gpu_start_ns converted at the first channel
    // (the kernel is seen running) and again, with the freshest offset, at completion.
    uint64_t cur = r->gpu_start_raw.load(std::memory_order_relaxed);
    if (cur == 0 || ptimer < cur) {
      r->gpu_start_raw.store(ptimer, std::memory_order_relaxed);
      if (old == 0) r->gpu_start_ns.store(c->clock.to_wall(ptimer), std::memory_order_relaxed);
    }
  }
  return to_ptr(encode(p->salt, HandleType::kKernelCh, ch_payload(c->ring_index, ch, index)));
}

void kernelch_stop_state(Process* p, uint64_t payload, const abi::StateArgs* args) {
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r = find_record(p, ch_ring(payload), ch_index_low(payload), kChIndexBits, &c, &index);
  if (r == nullptr || args == nullptr || args->kernelCh.pTimer == 0) return;
  // The latest stop time; converted into gpu_end_ns when the operation completes.
  uint64_t raw = args->kernelCh.pTimer;
  SlotChannels& sc = slot_channels(c, index);
  if (raw > sc.end_raw.load(std::memory_order_relaxed)) sc.end_raw.store(raw, std::memory_order_relaxed);
}

void kernelch_stop(Process* p, uint64_t payload) {
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r = find_record(p, ch_ring(payload), ch_index_low(payload), kChIndexBits, &c, &index);
  if (r == nullptr) return;
  SlotChannels& sc = slot_channels(c, index);
  uint64_t bit = 1ull << ch_channel(payload);
  uint64_t old = sc.stopped.load(std::memory_order_relaxed);
  if ((old & bit) != 0) {
    count_extra(c);
    return;
  }
  sc.stopped.store(old | bit, std::memory_order_relaxed);
  r->ch_stopped_mask.store(old | bit, std::memory_order_relaxed);
  uint32_t stopped = uint32_t(r->ch_stopped.load(std::memory_order_relaxed)) + 1;
  r->ch_stopped.store(uint16_t(stopped), std::memory_order_relaxed);
  uint32_t nch = r->n_channels;
  if (nch == 0 || stopped != nch) return;
  complete(p, c, r, index, sc);
}

}  // namespace scout::core
