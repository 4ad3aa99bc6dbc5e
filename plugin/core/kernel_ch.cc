// KernelCh handling and completion (kernel_ch.h).
//
// Cost: per channel one locked instruction at start (the channel mask) and one at stop; the
// counters are derived from the masks and stored plainly; the CPU clock is read at the first
// channel start of one operation in kSampleEvery (clock offset sample) and once at completion.
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
inline shm::OpRecord* find_record(Process* p, uint32_t ring, uint64_t low, int bits,
                                  CommState** comm, uint64_t* index) {
  CommState* c = comm_at(p, ring);
  *comm = c;
  if (c == nullptr) {
    count_bad_handle(p, nullptr);
    return nullptr;
  }
  shm::OpRecord* r = c->ring->find(low, bits, index);
  if (r == nullptr) count_orphan(c);
  return r;
}

// Bits set in a channel mask (no popcnt instruction assumed: the build targets baseline x86-64).
inline uint32_t count_bits(uint64_t v) {
  v = v - ((v >> 1) & 0x5555555555555555ull);
  v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
  v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return uint32_t((v * 0x0101010101010101ull) >> 56);
}

// Earliest start / latest stop. Every KernelCh event of one operation comes from its
// communicator's proxy thread (digest 1.4): a plain compare-and-store, no locked instruction.
template <typename T>
inline void store_max(std::atomic<T>& a, T v) {
  if (v > a.load(std::memory_order_relaxed)) a.store(v, std::memory_order_relaxed);
}

// One clock offset sample per kSampleEvery operations of a communicator (and always until the
// first estimate exists): a CPU clock read is the most expensive part of a KernelCh callback.
constexpr uint32_t kSampleEvery = 4;

}  // namespace

void* kernelch_start(Process* p, void* ctx, const abi::DescrV5& d) {
  Decoded par = decode(d.parentObj, p->salt);
  if (par.type != HandleType::kOp) {
    if (par.type != HandleType::kInert) count_bad_handle(p, comm_from_context(p, ctx));
    return inert(p);
  }
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r = find_record(p, op_ring(par.payload), op_index_low(par.payload), kOpIndexBits,
                                 &c, &index);
  if (r == nullptr) return inert(p);
  uint32_t ch = d.kernelCh.channelId;
  if (ch >= kMaxChannels) {
    count_extra(c);
    return inert(p);
  }
  uint32_t nch = r->n_channels;
  SlotChannels& sc = slot_channels(c, index);
  uint64_t bit = 1ull << ch;
  uint64_t old = sc.started.fetch_or(bit, std::memory_order_relaxed);
  uint32_t seen = count_bits(old);
  if ((old & bit) != 0 || (nch != 0 && seen >= nch)) {
    count_extra(c);
    return inert(p);
  }
  r->ch_started.store(uint16_t(seen + 1), std::memory_order_relaxed);
  uint64_t ptimer = d.kernelCh.pTimer;
  if (old == 0) {
    // First channel of the operation: it runs on the GPU now; a clock offset sample.
    uint32_t n = c->clock_ops.load(std::memory_order_relaxed);
    c->clock_ops.store(n + 1, std::memory_order_relaxed);
    bool have = false;
    c->clock.estimate(&have);
    if (ptimer != 0 && (!have || n % kSampleEvery == 0)) {
      int64_t now = now_ns();
      int64_t off = c->clock.sample(now, ptimer);
      if (c->hdr->gpu_clock_offset_ns.load(std::memory_order_relaxed) != off) {
        c->hdr->gpu_clock_offset_ns.store(off, std::memory_order_relaxed);
      }
      touch(p, now);
    }
    uint32_t st = shm::kStateEnqueued;
    r->state.compare_exchange_strong(st, shm::kStateRunning, std::memory_order_release,
                                     std::memory_order_relaxed);
    uint16_t ring1 = uint16_t(c->ring_index + 1);
    if (t_cache.salt != p->salt || t_cache.last_ring != ring1) {
      if (t_cache.salt != p->salt) t_cache.tb = nullptr;
      t_cache.salt = p->salt;
      t_cache.last_ring = ring1;
    }
  }
  if (ptimer != 0) {
    uint64_t cur = r->gpu_start_raw.load(std::memory_order_relaxed);
    if (cur == 0 || ptimer < cur) {
      r->gpu_start_raw.store(ptimer, std::memory_order_relaxed);
      int64_t wall = c->clock.to_wall(ptimer);
      if (wall != 0) r->gpu_start_ns.store(wall, std::memory_order_relaxed);
    }
  }
  return to_ptr(encode(p->salt, HandleType::kKernelCh, ch_payload(c->ring_index, ch, index)));
}

void kernelch_stop_state(Process* p, uint64_t payload, const abi::StateArgs* args) {
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r =
      find_record(p, ch_ring(payload), ch_index_low(payload), kChIndexBits, &c, &index);
  if (r == nullptr || args == nullptr || args->kernelCh.pTimer == 0) return;
  uint64_t raw = args->kernelCh.pTimer;
  SlotChannels& sc = slot_channels(c, index);
  if (raw > sc.end_raw.load(std::memory_order_relaxed)) {
    sc.end_raw.store(raw, std::memory_order_relaxed);
    int64_t wall = c->clock.to_wall(raw);
    if (wall != 0) store_max(r->gpu_end_ns, wall);
  }
}

void kernelch_stop(Process* p, uint64_t payload) {
  CommState* c = nullptr;
  uint64_t index = 0;
  shm::OpRecord* r =
      find_record(p, ch_ring(payload), ch_index_low(payload), kChIndexBits, &c, &index);
  if (r == nullptr) return;
  SlotChannels& sc = slot_channels(c, index);
  uint64_t bit = 1ull << ch_channel(payload);
  uint64_t old = sc.stopped.fetch_or(bit, std::memory_order_relaxed);
  if ((old & bit) != 0) {
    count_extra(c);
    return;
  }
  uint32_t stopped = count_bits(old) + 1;
  r->ch_stopped.store(uint16_t(stopped), std::memory_order_relaxed);
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
