// Per-thread API state (api_state.h).
#include "plugin/core/api_state.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fence.h"
#include "common/names.h"
#include "plugin/core/clock.h"
#include "plugin/core/handle.h"
#include "plugin/core/log.h"
#include "plugin/core/process.h"
#include "plugin/core/records.h"
#include "plugin/core/thread_cache.h"
#include "plugin/fingerprint/engine.h"

namespace scout::core {
namespace {

constexpr uint64_t kGroupIdBatch = 64;

template <typename T>
inline T ld(const T& f) {
  return __atomic_load_n(&f, __ATOMIC_RELAXED);
}
template <typename T>
inline void st(T& f, T v) {
  __atomic_store_n(&f, v, __ATOMIC_RELAXED);
}

inline uint64_t word_counter(uint64_t w) { return w >> 4; }
inline uint64_t word_state(uint64_t w) { return w & 0xf; }
inline uint64_t make_word(uint64_t counter, uint64_t state) { return (counter << 4) | state; }

inline ApiSlot* slot_at(ThreadBlock* tb, bool captured_ring, uint64_t counter) {
  return captured_ring ? &tb->captured[counter & (kCapturedSlots - 1)] : &tb->regular[counter & (kRegularSlots - 1)];
}

// Seqlock copy of a slot whose word carries `counter` (full counter, or the low
// kApiCounterBits when `low_bits_only`). False if the slot holds another call or is in flux.
bool copy_slot(const ApiSlot* s, uint64_t counter, bool low_bits_only, ApiCopy* out) {
  uint64_t w1 = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
  uint64_t c1 = word_counter(w1);
  if ((low_bits_only ? (c1 & kApiCounterMask) : c1) != counter) return false;
  if (word_state(w1) == kSlotWriting || c1 == 0) return false;
  out->counter = c1;
  out->count = ld(s->count);
  out->stream = ld(s->stream);
  out->group = ld(s->group);
  out->api_ns = ld(s->api_ns);
  out->root = ld(s->root);
  out->tid = ld(s->tid);
  out->ring = ld(s->ring);
  out->func = ld(s->func);
  out->dtype = ld(s->dtype);
  out->is_p2p = ld(s->is_p2p);
  out->flags = ld(s->flags);
  scout::acquire_fence();
  uint64_t w2 = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
  if (word_counter(w2) != c1) return false;
  out->state = word_state(w2);
  return true;
}

// CAS the state of the call `counter` from `from` to `to`.
bool transition(ApiSlot* s, uint64_t counter, uint64_t from, uint64_t to) {
  uint64_t expect = make_word(counter, from);
  return __atomic_compare_exchange_n(&s->word, &expect, make_word(counter, to), false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED);
}

// Emits the call in slot `s` as unmatched if it is still pending (exactly once).
void emit_if_pending(Process* p, ApiSlot* s) {
  uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
  if (word_state(w) != kSlotPending) return;
  ApiCopy copy;
  if (!copy_slot(s, word_counter(w), false, &copy)) return;
  if (!transition(s, copy.counter, kSlotPending, kSlotEmitted)) return;
  CommState* c = comm_at(p, copy.ring);
  if (c == nullptr || c->live.load(std::memory_order_acquire) != kCommLiveActive) return;
  write_unmatched(p, c, copy);
}

ThreadBlock* new_block(uint32_t index, uint32_t tid) {
  // Populated at once (the thread's first NCCL call), not page by page over its next calls.
  void* mem =
      ::mmap(nullptr, sizeof(ThreadBlock), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  auto* tb = static_cast<ThreadBlock*>(mem);  // zeroed: every slot word is 0 (invalid)
  tb->index = index;
  tb->next_counter[0] = 1;
  tb->next_counter[1] = 1;
  __atomic_store_n(&tb->owner_self, uint64_t(::pthread_self()), __ATOMIC_RELAXED);
  __atomic_store_n(&tb->owner_tid, tid, __ATOMIC_RELEASE);
  return tb;
}

bool thread_gone(int pid, uint32_t tid) { return ::syscall(SYS_tgkill, pid, int(tid), 0) != 0 && errno == ESRCH; }

ThreadBlock* acquire_block(Process* p) {
  uint32_t tid = current_tid();
  ThreadBlock* tb = nullptr;
  uint32_t n = p->n_blocks.load(std::memory_order_relaxed);
  while (n < kMaxThreadBlocks && tb == nullptr) {
    if (p->n_blocks.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
      tb = new_block(n, tid);
      if (tb == nullptr) {
        log::warn_once(log::Problem::kNoMemory, "out of memory for per-thread API state");
        return nullptr;
      }
      p->blocks[n].store(tb, std::memory_order_release);
    }
  }
  if (tb == nullptr) {
    // All taken: adopt the block of a thread that has exited. Its pending calls stay pending
    // (emitted when their slots are reused or their communicator is finalized).
    for (uint32_t i = 0; i < kMaxThreadBlocks && tb == nullptr; ++i) {
      ThreadBlock* b = p->blocks[i].load(std::memory_order_acquire);
      if (b == nullptr) continue;
      uint32_t owner = __atomic_load_n(&b->owner_tid, __ATOMIC_ACQUIRE);
      if (owner == tid || (owner != 0 && thread_gone(p->pid, owner))) {
        if (__atomic_compare_exchange_n(&b->owner_tid, &owner, tid, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
          b->group_open = 0;
          b->group_id = 0;
          b->group_first = b->group_first_cap = 0;
          b->deferred_first = b->deferred_end = 0;
          b->gid_next = b->gid_end = 0;
          __atomic_store_n(&b->owner_self, uint64_t(::pthread_self()), __ATOMIC_RELAXED);
          tb = b;
        }
      }
    }
  }
  if (tb == nullptr) {
    log::warn_once(log::Problem::kThreadBlocks,
                   "more than %u live threads issue NCCL calls: API events of the others are "
                   "not tracked (their operations are recorded without API information)",
                   kMaxThreadBlocks);
    return nullptr;
  }
  if (t_cache.salt != p->salt) t_cache.last_ring = 0;
  t_cache.salt = p->salt;
  t_cache.tb = tb;
  return tb;
}

void extend_deferred(ThreadBlock* tb, uint64_t counter) {
  if (tb->deferred_end == 0) {
    tb->deferred_first = counter;
    tb->deferred_end = counter + 1;
  } else {
    if (counter < tb->deferred_first) tb->deferred_first = counter;
    if (counter + 1 > tb->deferred_end) tb->deferred_end = counter + 1;
  }
}

}  // namespace

ThreadBlock* my_block(Process* p) {
  // A cache from an earlier load cycle has another salt and is ignored.
  if (t_cache.salt == p->salt && t_cache.tb != nullptr) return t_cache.tb;
  return acquire_block(p);
}

ThreadBlock* group_block_of(Process* p, uint64_t payload) {
  uint32_t b = group_block(payload);
  if (b >= kMaxThreadBlocks) return nullptr;
  ThreadBlock* tb = p->blocks[b].load(std::memory_order_acquire);
  if (tb == nullptr || !tb->group_open || tb->group_id != group_id(payload)) return nullptr;
  return tb;
}

void free_blocks(Process* p) {
  for (auto& b : p->blocks) {
    ThreadBlock* tb = b.load(std::memory_order_relaxed);
    if (tb != nullptr) ::munmap(tb, sizeof(ThreadBlock));
    b.store(nullptr, std::memory_order_relaxed);
  }
  p->n_blocks.store(0, std::memory_order_relaxed);
}

uint64_t group_begin(Process* p, ThreadBlock* tb, bool captured, int depth) {
  if (tb->group_open) group_end(p, tb);  // a missed stop: close the old group first
  if (tb->gid_next == tb->gid_end) {
    tb->gid_next = p->next_group.fetch_add(kGroupIdBatch, std::memory_order_relaxed);
    tb->gid_end = tb->gid_next + kGroupIdBatch;
  }
  tb->group_id = tb->gid_next++ & kGroupIdMask;  // as carried by GroupApi handles (handle.h)
  if (tb->group_id == 0) tb->group_id = tb->gid_next++ & kGroupIdMask;
  tb->group_first = tb->next_counter[0];
  tb->group_first_cap = tb->next_counter[1];
  tb->group_captured = captured;
  tb->group_user = depth > 1;
  tb->group_open = 1;
  if (p->fp_any.load(std::memory_order_relaxed)) p->engine->on_group_start();
  return tb->group_id;
}

void group_end(Process* p, ThreadBlock* tb) {
  if (!tb->group_open) return;
  // 1. Calls deferred at an earlier group end and still unclaimed are unmatched now.
  uint64_t next = tb->next_counter[0];
  uint64_t from = tb->deferred_first;
  if (tb->deferred_end > from && tb->deferred_end - from > kRegularSlots) { from = tb->deferred_end - kRegularSlots; }
  for (uint64_t k = from; k < tb->deferred_end; ++k) {
    ApiSlot* s = slot_at(tb, false, k);
    if (word_counter(__atomic_load_n(&s->word, __ATOMIC_ACQUIRE)) == k) emit_if_pending(p, s);
  }
  tb->deferred_first = tb->deferred_end = 0;

  // 2. This group's unclaimed calls: emit, defer, or (SCOUT_P2P=0) ignore.
  uint64_t first = tb->group_first;
  if (next - first > kRegularSlots) first = next - kRegularSlots;
  for (uint64_t k = first; k < next; ++k) {
    ApiSlot* s = slot_at(tb, false, k);
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
    if (word_counter(w) != k || word_state(w) != kSlotOpen) continue;
    ApiCopy copy;
    if (!copy_slot(s, k, false, &copy)) continue;
    CommState* c = comm_at(p, copy.ring);
    bool live = c != nullptr && c->live.load(std::memory_order_acquire) == kCommLiveActive;
    if (!live || (copy.is_p2p && !p->p2p)) {
      transition(s, k, kSlotOpen, kSlotIgnored);
    } else if (c->enqueue_group.load(std::memory_order_acquire) == tb->group_id) {
      if (transition(s, k, kSlotOpen, kSlotEmitted)) write_unmatched(p, c, copy);
    } else if (transition(s, k, kSlotOpen, kSlotPending)) {
      extend_deferred(tb, k);
    }
  }
  // 3. Captured calls stay claimable for replays (docs/nccl-notes.md §3.8): pending until their
  // communicator is finalized or their slot is reused.
  uint64_t cnext = tb->next_counter[1];
  uint64_t cfirst = tb->group_first_cap;
  if (cnext - cfirst > kCapturedSlots) cfirst = cnext - kCapturedSlots;
  for (uint64_t k = cfirst; k < cnext; ++k) {
    ApiSlot* s = slot_at(tb, true, k);
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
    if (word_counter(w) != k || word_state(w) != kSlotOpen) continue;
    transition(s, k, kSlotOpen, !p->p2p && ld(s->is_p2p) ? kSlotIgnored : kSlotPending);
  }
  tb->group_open = 0;
  if (p->fp_any.load(std::memory_order_relaxed)) p->engine->on_group_end();
}

uint64_t api_begin(Process* p, ThreadBlock* tb, CommState* c, bool is_p2p, uint8_t func, uint8_t dtype, uint64_t count,
                   int32_t root, uint64_t stream, bool captured, int64_t now) {
  uint64_t counter = tb->next_counter[captured]++;
  ApiSlot* s = slot_at(tb, captured, counter);
  __builtin_prefetch(slot_at(tb, captured, counter + 1), 1, 3);  // the next call's line
  // Retire the previous call in this slot: a pending (deferred or captured) call that nothing
  // claimed is recorded as unmatched before its slot is reused.
  if (word_state(__atomic_load_n(&s->word, __ATOMIC_ACQUIRE)) == kSlotPending) { emit_if_pending(p, s); }
  __atomic_store_n(&s->word, make_word(counter, kSlotWriting), __ATOMIC_RELAXED);
  scout::release_fence();
  // The largest send buffer since the communicator's last launch: a sizing hint for the
  // fingerprint engine at KernelLaunch start (engine.h).
  if (c->fp != nullptr) {
    uint64_t send_bytes = 0;
    fp::op_bytes(func, count, shm::datatype_size(dtype), c->nranks, c->rank, root, &send_bytes, nullptr);
    if (send_bytes > c->send_hint.load(std::memory_order_relaxed)) {
      c->send_hint.store(send_bytes, std::memory_order_relaxed);
    }
  }
  st(s->count, count);
  st(s->stream, stream);
  st(s->group, tb->group_open ? tb->group_id : uint64_t(0));
  st(s->api_ns, now);
  st(s->root, root);
  st(s->tid, __atomic_load_n(&tb->owner_tid, __ATOMIC_RELAXED));  // this thread
  st(s->ring, uint16_t(c->ring_index));
  st(s->func, func);
  st(s->dtype, dtype);
  st(s->is_p2p, uint8_t(is_p2p));
  uint8_t flags = uint8_t((captured || tb->group_captured ? uint32_t(shm::kFlagGraphCaptured) : 0u) |
                          (tb->group_open && tb->group_user ? uint32_t(shm::kFlagUserGroup) : 0u));
  st(s->flags, flags);
  uint64_t state = kSlotOpen;
  if (!tb->group_open && !captured) {
    // No GroupApi around the call (not what NCCL does): decide at the next group end.
    state = kSlotPending;
    extend_deferred(tb, counter);
  }
  __atomic_store_n(&s->word, make_word(counter, state), __ATOMIC_RELEASE);
  return api_payload(tb->index, captured, counter);
}

namespace {

ClaimResult claim_slot(ThreadBlock* tb, ApiSlot* s, const ApiCopy& copy) {
  bool captured = (copy.flags & shm::kFlagGraphCaptured) != 0;
  // On the thread that made the call (the blocking path: Coll start right after the launch,
  // inside the same NCCL call), nobody else changes an Open slot: a plain store suffices.
  // pthread_self() identifies the thread without a thread-local lookup (a call in a shared
  // object); a descriptor reused by a new thread means the owner has exited: also safe.
  if (uint64_t(::pthread_self()) == __atomic_load_n(&tb->owner_self, __ATOMIC_RELAXED)) {
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
    if (word_counter(w) == copy.counter && word_state(w) == kSlotOpen) {
      __atomic_store_n(&s->word, make_word(copy.counter, kSlotMatched), __ATOMIC_RELEASE);
      return ClaimResult::kFirst;
    }
  }
  for (;;) {
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
    if (word_counter(w) != copy.counter) return ClaimResult::kGone;
    switch (word_state(w)) {
      case kSlotOpen:
      case kSlotPending:
      case kSlotIgnored:
        if (transition(s, copy.counter, word_state(w), kSlotMatched)) return ClaimResult::kFirst;
        continue;  // the state changed under us: look again
      case kSlotMatched: return captured ? ClaimResult::kReplay : ClaimResult::kStale;
      case kSlotEmitted: return ClaimResult::kLate;
      default: return ClaimResult::kGone;
    }
  }
}

}  // namespace

ClaimResult api_take(Process* p, uint64_t payload, uint32_t ring, ApiCopy* out) {
  uint32_t b = api_block(payload);
  uint64_t counter = api_counter(payload);
  if (b >= kMaxThreadBlocks || counter == 0) return ClaimResult::kGone;
  ThreadBlock* tb = p->blocks[b].load(std::memory_order_acquire);
  if (tb == nullptr) return ClaimResult::kGone;
  ApiSlot* s = slot_at(tb, api_captured_ring(payload), counter);
  if (!copy_slot(s, counter, true, out) || out->ring != ring) return ClaimResult::kGone;
  return claim_slot(tb, s, *out);
}

void sweep_comm(Process* p, CommState* c) {
  uint32_t n = p->n_blocks.load(std::memory_order_acquire);
  for (uint32_t b = 0; b < n && b < kMaxThreadBlocks; ++b) {
    ThreadBlock* tb = p->blocks[b].load(std::memory_order_acquire);
    if (tb == nullptr) continue;
    for (int ring = 0; ring < 2; ++ring) {
      ApiSlot* slots = ring ? tb->captured : tb->regular;
      uint32_t count = ring ? kCapturedSlots : kRegularSlots;
      for (uint32_t i = 0; i < count; ++i) {
        ApiSlot* s = &slots[i];
        if (word_state(__atomic_load_n(&s->word, __ATOMIC_ACQUIRE)) != kSlotPending) continue;
        if (ld(s->ring) != c->ring_index) continue;
        emit_if_pending(p, s);
      }
    }
  }
}

}  // namespace scout::core
