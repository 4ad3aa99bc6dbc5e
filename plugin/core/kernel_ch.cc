// KernelCh handling and completion (kernel_ch.h).
#include "plugin/core/kernel_ch.h"

#include "plugin/core/clock.h"
#include "plugin/core/handle.h"
#include "plugin/core/log.h"
#include "plugin/core/process.h"
#include "plugin/fingerprint/engine.h"

namespace scout::core {
namespace {

constexpr uint32_t kMaxChannels = 64;

void* inert(Process* p) { return to_ptr(encode(p->salt, HandleType::kInert, 0)); }

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
shm::OpRecord* find_record(Process* p, uint32_t ring, uint64_t low, int bits, CommState** comm,
                           uint64_t* index) {
  CommState* c = comm_at(p, ring);
  *comm = c;
  if (c == nullptr) {
    count_bad_handle(p, nullptr);
    return nullptr;
  }
  uint64_t i = 0;
  shm::OpRecord* r = nullptr;
  if (full_index(c->hdr->head.load(std::memory_order_acquire), low, bits, &i)) r = c->ring->at(i);
  if (r == nullptr) {
    count_orphan(c);
    return nullptr;
  }
  *index = i;
  return r;
}

template <typename T>
void store_min(std::atomic<T>& a, T v) {
  T cur = a.load(std::memory_order_relaxed);
  while ((cur == 0 || v < cur) && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

template <typename T>
void store_max(std::atomic<T>& a, T v) {
  T cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

void* kernelch_start(Process* p, CommState* ctx_comm, const abi::DescrV5& d) {
  Decoded par = decode(d.parentObj, p->salt);
  if (par.type == HandleType::kInert) return inert(p);
  if (par.type != HandleType::kOp) {
    count_bad_handle(p, ctx_comm);
    return inert(p);
  }
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r = find_record(p, op_ring(par.payload), op_index_low(par.payload), kOpIndexBits,
                                 &c, &index);
  if (r == nullptr) return inert(p);
  uint32_t ch = d.kernelCh.channelId;
  uint32_t nch = r->n_channels;
  if (ch >= kMaxChannels) {
    count_extra(c);
    return inert(p);
  }
  SlotChannels& sc = slot_channels(c, index);
  uint64_t bit = 1ull << ch;
  uint64_t old = sc.started.fetch_or(bit, std::memory_order_relaxed);
  if ((old & bit) != 0 || (nch != 0 && uint32_t(__builtin_popcountll(old)) >= nch)) {
    count_extra(c);
    return inert(p);
  }
  r->ch_started.fetch_add(1, std::memory_order_relaxed);
  int64_t now = now_ns();
  uint64_t ptimer = d.kernelCh.pTimer;
  if (ptimer != 0) {
    int64_t off = c->clock.sample(now, ptimer);
    if (c->hdr->gpu_clock_offset_ns.load(std::memory_order_relaxed) != off) {
      c->hdr->gpu_clock_offset_ns.store(off, std::memory_order_relaxed);
    }
    uint64_t cur = r->gpu_start_raw.load(std::memory_order_relaxed);
    while ((cur == 0 || ptimer < cur) &&
           !r->gpu_start_raw.compare_exchange_weak(cur, ptimer, std::memory_order_relaxed)) {
    }
    if (cur == 0 || ptimer < cur) store_min(r->gpu_start_ns, int64_t(ptimer) + off);
  }
  uint32_t st = shm::kStateEnqueued;
  r->state.compare_exchange_strong(st, shm::kStateRunning, std::memory_order_release,
                                   std::memory_order_relaxed);
  touch(p, now);
  return to_ptr(encode(p->salt, HandleType::kKernelCh, ch_payload(c->ring_index, ch, index)));
}

void kernelch_stop_state(Process* p, uint64_t payload, const abi::StateArgs* args) {
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r =
      find_record(p, ch_ring(payload), ch_index_low(payload), kChIndexBits, &c, &index);
  if (r == nullptr || args == nullptr || args->kernelCh.pTimer == 0) return;
  uint64_t raw = args->kernelCh.pTimer;
  store_max(slot_channels(c, index).end_raw, raw);
  int64_t wall = c->clock.to_wall(raw);
  if (wall != 0) store_max(r->gpu_end_ns, wall);
}

void kernelch_stop(Process* p, uint64_t payload) {
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r =
      find_record(p, ch_ring(payload), ch_index_low(payload), kChIndexBits, &c, &index);
  if (r == nullptr) return;
  SlotChannels& sc = slot_channels(c, index);
  uint64_t bit = 1ull << ch_channel(payload);
  if ((sc.stopped.fetch_or(bit, std::memory_order_relaxed) & bit) != 0) {
    count_extra(c);
    return;
  }
  uint32_t stopped = uint32_t(r->ch_stopped.fetch_add(1, std::memory_order_relaxed)) + 1;
  uint32_t nch = r->n_channels;
  if (nch == 0 || stopped != nch) return;
  // The last channel: the operation completed on this rank.
  int64_t now = now_ns();
  uint64_t start = r->gpu_start_raw.load(std::memory_order_relaxed);
  uint64_t end = sc.end_raw.load(std::memory_order_relaxed);
  uint64_t kernel_ns = start != 0 && end > start ? end - start : 0;
  r->complete_ns.store(now, std::memory_order_relaxed);
  r->state.store(shm::kStateComplete, std::memory_order_release);
  touch(p, now);
  if (p->engine != nullptr && c->fp != nullptr) {
    p->engine->on_op_complete(c->fp, r, index, kernel_ns);  // adds kernel_ns to the header
  } else if (kernel_ns != 0) {
    c->hdr->kernel_ns.fetch_add(kernel_ns, std::memory_order_relaxed);
  }
}

}  // namespace scout::core
