// Per-peer network step times from ProxyOp/ProxyStep events (proxy_steps.h).
#include "plugin/core/proxy_steps.h"

#include <new>

#include "plugin/core/handle.h"
#include "plugin/core/link_table.h"
#include "plugin/core/process.h"
#include "plugin/core/progress.h"

namespace scout::core {

static_assert(shm::kProgressEntries <= 0xfff + 1, "ProxyOp and ProxyCount handles carry 12-bit entry indices");

namespace {

enum ProxySlotState : uint8_t {
  kSlotFree = 0,
  kSlotStarted = 1,  // step started, its timed state not seen yet
  kSlotTiming = 2,   // SendWait / RecvWait seen: t0 set
  kSlotTimed = 3,    // recv: RecvFlushWait added it to the link
};

// ProxyStepSlot::seen: the progress states counted for the step (each once).
enum SeenBits : uint8_t {
  kSeenGpu = 1,   // SendGPUWait / RecvGPUWait
  kSeenPeer = 2,  // SendPeerWait
  kSeenNet = 4,   // SendWait / RecvWait
  kSeenDone = 8,  // send stopped after SendWait / RecvFlushWait
};

// Single-writer increment of a progress counter (its proxy thread only).
inline void inc(std::atomic<uint32_t>& a) { a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

// The progress entry a step's slot follows, or null when there is none or a newer ProxyOp took it.
inline shm::ProgressEntry* live_prog(const ProxyStepSlot* s) {
  if (s->prog == nullptr || s->prog->op_gen.load(std::memory_order_relaxed) != s->prog_gen) return nullptr;
  return s->prog;
}

// Counts progress state `bit` of a step into `e` (once per step), at `now`.
inline void progress(ProxyStepSlot* s, shm::ProgressEntry* e, uint8_t bit,
                     std::atomic<uint32_t> shm::ProgressEntry::*counter, int64_t now) {
  if (e == nullptr || (s->seen & bit)) return;
  s->seen |= bit;
  inc(e->*counter);
  e->last_ns.store(now, std::memory_order_relaxed);
}

// The progress slot of (channel, peer, direction) of `c`, its entry claimed on first use; null when
// the table is absent or the communicator's tuples fill its slots (slot->index 0: the table was full).
ProgressSlot* progress_slot(Process* p, CommState* c, uint32_t channel, uint32_t peer, bool send) {
  if (p->progress.header() == nullptr) return nullptr;
  const uint64_t key = (uint64_t(channel & 0xff) << 40) | (uint64_t(send ? 1 : 2) << 32) | uint64_t(peer + 1);
  ProxyComm* pc = c->proxy;
  uint32_t h = uint32_t((key * 0x9E3779B97F4A7C15ull) >> 56) & (kProgressSlots - 1);
  for (uint32_t n = 0; n < kProgressSlots; ++n, h = (h + 1) & (kProgressSlots - 1)) {
    ProgressSlot& sl = pc->prog[h];
    if (sl.key == key) return &sl;
    if (sl.key != 0) continue;
    const int32_t i = p->progress.claim(c->comm_hash, c->nranks, c->rank, int32_t(peer), uint8_t(channel),
                                        send ? shm::kProgressSend : shm::kProgressRecv);
    sl.key = key;
    sl.index = i >= 0 ? uint32_t(i) + 1 : 0;
    return &sl;
  }
  return nullptr;
}

inline shm::ProgressEntry* entry_of(Process* p, const ProgressSlot* sl) {
  return sl != nullptr && sl->index != 0 ? p->progress.entry(sl->index - 1) : nullptr;
}

// Entry `e` now follows op `op`: a new op_gen, zeroed steps.
void begin_op(Process* p, shm::ProgressEntry* e, const PendingProxyOp& op, int64_t now) {
  e->op_gen.store(e->op_gen.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  e->op_key.store(op.key, std::memory_order_relaxed);
  e->op_func.store(op.func, std::memory_order_relaxed);
  e->n_steps.store(op.n_steps, std::memory_order_relaxed);
  for (std::atomic<uint32_t>* a :
       {&e->posted, &e->gpu_wait, &e->peer_wait, &e->in_net, &e->net_done, &e->consumed, &e->op_stopped})
    a->store(0, std::memory_order_relaxed);
  e->start_ns.store(now, std::memory_order_relaxed);
  e->last_ns.store(now, std::memory_order_relaxed);
  p->progress.header()->traced_ops.fetch_add(1, std::memory_order_relaxed);
}

// The next queued op of `sl` takes entry `e` (its running op is over).
void next_op(Process* p, ProgressSlot* sl, shm::ProgressEntry* e, int64_t now) {
  const PendingProxyOp next = sl->pending[sl->head];
  sl->head = uint8_t((sl->head + 1) % kProgressPending);
  sl->queued--;
  begin_op(p, e, next, now);
}

// A step of the op with entry generation `gen` (low 8 bits) arrived on `e`: when that op is queued
// behind the entry's op, the ops before it are over (NCCL runs a connection's ops in order), so it
// takes the entry. False when the step's op is neither the entry's nor a queued one (stale).
bool step_op(Process* p, CommState* c, shm::ProgressEntry* e, uint32_t gen, int64_t now) {
  uint32_t cur = e->op_gen.load(std::memory_order_relaxed);
  if ((cur & 0xff) == gen) return true;
  ProgressSlot* sl = progress_slot(p, c, e->channel, uint32_t(e->peer), e->dir == shm::kProgressSend);
  if (sl == nullptr || entry_of(p, sl) != e || ((gen - cur) & 0xff) > sl->queued) return false;
  while ((e->op_gen.load(std::memory_order_relaxed) & 0xff) != gen && sl->queued > 0) next_op(p, sl, e, now);
  return (e->op_gen.load(std::memory_order_relaxed) & 0xff) == gen;
}

// A new ProxyOp on slot `sl` (entry `e`): the operation of record `parent` (a Coll/P2p handle of
// `c`). It takes the entry now, or waits behind the entry's running op (proxy_steps.h). Returns the
// op_gen it has or will have.
uint32_t progress_op(Process* p, CommState* c, ProgressSlot* sl, shm::ProgressEntry* e, const abi::ProxyOpDescr& d,
                     void* parent, int64_t now) {
  PendingProxyOp op;
  Decoded par = decode(parent, p->salt);
  if (par.type == HandleType::kOp && op_ring(par.payload) == c->ring_index) {
    uint64_t index = 0;
    if (const shm::OpRecord* r = c->rw.find(op_index_low(par.payload), kOpIndexBits, &index)) {
      op.key = r->key;
      op.func = r->func;
    }
  }
  op.n_steps = d.nSteps > 0 ? uint32_t(d.nSteps) : 0;
  const uint32_t gen = e->op_gen.load(std::memory_order_relaxed);
  // Queued only behind an op that runs (it posted steps and has not stopped): NCCL also starts
  // ProxyOps that never post a step nor stop (seen under 2.28.9, test/fixtures/real-nccl), and
  // those must not hold the entry.
  if (gen != 0 && e->op_stopped.load(std::memory_order_relaxed) == 0 && e->posted.load(std::memory_order_relaxed) > 0 &&
      sl->queued < kProgressPending) {
    sl->pending[(sl->head + sl->queued) % kProgressPending] = op;
    sl->queued++;
    return gen + sl->queued;
  }
  sl->queued = 0;
  begin_op(p, e, op, now);
  return gen + 1;
}

// Marks a (peer, direction) whose entry could not be claimed (table full): not claimed again.
shm::LinkEntry* const kNoEntry = reinterpret_cast<shm::LinkEntry*>(uintptr_t(1));

inline void* handle_of(Process* p, HandleType t, uint64_t payload) { return to_ptr(encode(p->salt, t, payload)); }
inline void* inert(Process* p) { return handle_of(p, HandleType::kInert, 0); }

inline void untimed(Process* p) { p->links.header()->proxy_untimed.fetch_add(1, std::memory_order_relaxed); }

// The link entry of (peer, direction) of `c`, claimed on first use; nullptr when the table is full.
shm::LinkEntry* link_of(Process* p, CommState* c, uint32_t peer, bool send, int64_t now) {
  shm::LinkEntry*& e = c->proxy->links[2 * peer + (send ? 0 : 1)];
  if (e == nullptr) {
    LinkIdentity id;
    id.source = shm::kLinkSourceProxy;
    id.dir = send ? shm::kLinkSend : shm::kLinkRecv;
    id.comm_hash = c->comm_hash;
    id.comm_nranks = c->nranks;
    id.comm_rank = c->rank;
    id.peer_rank = int32_t(peer);
    shm::LinkEntry* claimed = p->links.claim(id, now);
    e = claimed != nullptr ? claimed : kNoEntry;
  }
  return e != kNoEntry ? e : nullptr;
}

// The slot a step handle names, or nullptr when it is stale (taken over by a newer step).
ProxyStepSlot* slot_of(Process* p, uint64_t payload) {
  CommState* c = comm_at(p, step_ring(payload));
  if (c == nullptr || c->proxy == nullptr) return nullptr;
  ProxyStepSlot* s = &c->proxy->slots[step_slot(payload) & (kProxyStepSlots - 1)];
  return s->gen == step_gen(payload) && s->state != kSlotFree ? s : nullptr;
}

// Adds a step of `bytes` that completed now to its link.
void finish(Process* p, ProxyStepSlot* s, uint64_t bytes, int64_t now) {
  link_add(s->entry, bytes, now - s->t0, now);
  p->proxy.step_timed(s->window, now);
}

}  // namespace

ProxyComm* proxy_comm_create(int nranks) {
  ProxyComm* pc = new (std::nothrow) ProxyComm();
  if (pc == nullptr) return nullptr;
  pc->links = new (std::nothrow) shm::LinkEntry*[2 * size_t(nranks > 0 ? nranks : 1)]();
  if (pc->links == nullptr) {
    delete pc;
    return nullptr;
  }
  return pc;
}

void proxy_comm_free(ProxyComm* pc) {
  if (pc == nullptr) return;
  delete[] pc->links;
  delete pc;
}

void* proxy_op_start(Process* p, CommState* c, const abi::ProxyOpDescr& d, void* parent) {
  uint32_t cur = p->proxy.current();
  const bool window = ProxyWindows::is_open(cur);
  const bool count =
      c->proxy != nullptr && (p->proxy.keeps_bits() || c->proxy->traced.load(std::memory_order_relaxed) != 0);
  if (c->proxy == nullptr || (!window && !count)) {
    c->hdr->ignored_events.fetch_add(1, std::memory_order_relaxed);  // outside a window and not counted
    return inert(p);
  }
  if (d.peer < 0 || d.peer >= c->nranks || uint64_t(d.peer) > kProxyValueMask) {
    count_bad_handle(p, c);  // a peer outside the communicator: nothing to name
    return inert(p);
  }
  const bool send = d.isSend != 0;
  ProgressSlot* sl = progress_slot(p, c, uint32_t(d.channelId), uint32_t(d.peer), send);
  if (shm::ProgressEntry* e = entry_of(p, sl)) {
    const uint32_t gen = progress_op(p, c, sl, e, d, parent, now_ns());
    const uint32_t index = uint32_t(e - p->progress.entry(0));
    return handle_of(p, HandleType::kProxyOp,
                     pop_payload(c->ring_index, send, window, cur >> 1, true, prog_value(index, gen)));
  }
  if (!window) return inert(p);  // counted, but no entry to count in
  return handle_of(p, HandleType::kProxyOp, pop_payload(c->ring_index, send, true, cur >> 1, false, uint32_t(d.peer)));
}

void proxy_op_stop(Process* p, uint64_t payload) {
  if (!pop_progress(payload)) return;
  CommState* c = comm_at(p, pop_ring(payload));
  shm::ProgressEntry* e = p->progress.entry(prog_index(pop_value(payload)));
  if (c == nullptr || c->proxy == nullptr || e == nullptr || e->comm_hash != c->comm_hash) return;
  if ((e->op_gen.load(std::memory_order_relaxed) & 0xff) != prog_gen(pop_value(payload))) return;  // not its op
  const int64_t now = now_ns();
  e->op_stopped.store(1, std::memory_order_relaxed);
  e->last_ns.store(now, std::memory_order_relaxed);
  // The next op of the tuple, waiting behind this one, takes the entry.
  ProgressSlot* sl = progress_slot(p, c, e->channel, uint32_t(e->peer), e->dir == shm::kProgressSend);
  if (sl != nullptr && entry_of(p, sl) == e && sl->queued > 0) next_op(p, sl, e, now);
}

void* proxy_step_start(Process* p, void* ctx, void* parent) {
  Decoded par = decode(parent, p->salt);
  if (par.type != HandleType::kProxyOp) {
    // An op outside a window (inert), or under PXN another process's op (its context is only
    // decoded, never followed, docs/nccl-notes.md §3.9): not timed, nothing to count against.
    Decoded cx = decode(ctx, p->salt);
    CommState* c = cx.type == HandleType::kContext ? comm_at(p, payload_ring(cx.payload)) : nullptr;
    if (c != nullptr) c->hdr->ignored_events.fetch_add(1, std::memory_order_relaxed);
    return inert(p);
  }
  CommState* c = comm_at(p, pop_ring(par.payload));
  if (c == nullptr || c->proxy == nullptr) return inert(p);
  const bool send = pop_send(par.payload);
  shm::ProgressEntry* prog = nullptr;
  uint32_t peer = pop_value(par.payload);
  const uint32_t gen = prog_gen(pop_value(par.payload));
  if (pop_progress(par.payload)) {
    prog = p->progress.entry(prog_index(pop_value(par.payload)));
    if (prog == nullptr || prog->comm_hash != c->comm_hash) return inert(p);
    peer = uint32_t(prog->peer);
  }
  uint32_t cur = p->proxy.current();
  int64_t now = now_ns();
  if (prog != nullptr && !step_op(p, c, prog, gen, now)) prog = nullptr;  // a stale op's step
  shm::LinkEntry* e = nullptr;
  if (pop_timed(par.payload)) {
    if (!ProxyWindows::is_open(cur) || ((cur >> 1) & 0x7ff) != pop_window(par.payload)) {
      untimed(p);  // its op's window is over
    } else if ((e = link_of(p, c, peer, send, now)) == nullptr) {
      untimed(p);
    }
  }
  // A step that is not timed takes no slot (the slots stay with timed steps in flight, which it
  // would overwrite): only counted in its progress entry.
  if (e == nullptr) {
    if (prog == nullptr) return inert(p);
    inc(prog->posted);
    prog->last_ns.store(now, std::memory_order_relaxed);
    const uint32_t index = uint32_t(prog - p->progress.entry(0));
    return handle_of(p, HandleType::kProxyCount, count_payload(c->ring_index, send, gen, index));
  }
  ProxyComm* pc = c->proxy;
  uint32_t i = pc->next++ & (kProxyStepSlots - 1);
  ProxyStepSlot* s = &pc->slots[i];
  if (s->entry != nullptr && (s->state == kSlotStarted || s->state == kSlotTiming)) untimed(p);  // never finished
  s->gen = (s->gen + 1) & 0xffffff;
  s->state = kSlotStarted;
  s->send = send;
  s->entry = e;
  s->prog = prog;
  s->prog_gen = prog != nullptr ? prog->op_gen.load(std::memory_order_relaxed) : 0;
  s->seen = 0;
  s->window = cur;
  s->t0 = 0;
  s->bytes = 0;
  if (e != nullptr) bump(e->posted, 1);
  if (prog != nullptr) {
    inc(prog->posted);
    prog->last_ns.store(now, std::memory_order_relaxed);
  }
  return handle_of(p, HandleType::kProxyStep, step_payload(c->ring_index, i, s->gen));
}

void proxy_step_state(Process* p, uint64_t payload, int state, const abi::StateArgs* args) {
  ProxyStepSlot* s = slot_of(p, payload);
  if (s == nullptr) return;  // taken over (counted then)
  shm::ProgressEntry* prog = live_prog(s);
  const bool gpu = state == (s->send ? abi::kStateProxyStepSendGPUWait : abi::kStateProxyStepRecvGPUWait);
  if (prog != nullptr && (gpu || state == abi::kStateProxyStepSendPeerWait)) {
    const int64_t now = now_ns();
    if (gpu) progress(s, prog, kSeenGpu, &shm::ProgressEntry::gpu_wait, now);
    if (state == abi::kStateProxyStepSendPeerWait && s->send)
      progress(s, prog, kSeenPeer, &shm::ProgressEntry::peer_wait, now);
  }
  if (state == (s->send ? abi::kStateProxyStepSendWait : abi::kStateProxyStepRecvWait)) {
    if (s->state != kSlotStarted) return;
    if (s->send && args != nullptr) s->bytes = uint64_t(args->proxyStep.transSize);
    s->t0 = now_ns();
    s->state = kSlotTiming;
    progress(s, prog, kSeenNet, &shm::ProgressEntry::in_net, s->t0);
  } else if (state == abi::kStateProxyStepRecvFlushWait && !s->send) {
    if (s->state != kSlotTiming) return;
    const int64_t now = now_ns();
    if (s->entry != nullptr) finish(p, s, args != nullptr ? uint64_t(args->proxyStep.transSize) : 0, now);
    progress(s, prog, kSeenDone, &shm::ProgressEntry::net_done, now);
    s->state = kSlotTimed;
  }
}

void proxy_step_stop(Process* p, uint64_t payload) {
  ProxyStepSlot* s = slot_of(p, payload);
  if (s == nullptr) return;
  shm::ProgressEntry* prog = live_prog(s);
  const int64_t now = now_ns();
  if (s->send && s->state == kSlotTiming) {
    if (s->entry != nullptr) finish(p, s, s->bytes, now);
    progress(s, prog, kSeenDone, &shm::ProgressEntry::net_done, now);
  } else if (s->state != kSlotTimed && s->entry != nullptr) {
    untimed(p);  // its timed state never came
  }
  // A receive stopped after it was handed to the GPU: the GPU consumed it.
  if (prog != nullptr && !s->send && (s->seen & kSeenGpu)) {
    inc(prog->consumed);
    prog->last_ns.store(now, std::memory_order_relaxed);
  }
  s->state = kSlotFree;
}

namespace {

// The progress entry a ProxyCount handle names, or null when it is stale (its op is over).
shm::ProgressEntry* counted_entry(Process* p, uint64_t payload) {
  CommState* c = comm_at(p, count_ring(payload));
  shm::ProgressEntry* e = p->progress.entry(count_index(payload));
  if (c == nullptr || e == nullptr || e->comm_hash != c->comm_hash) return nullptr;
  return (e->op_gen.load(std::memory_order_relaxed) & 0xff) == count_gen(payload) ? e : nullptr;
}

}  // namespace

void proxy_count_state(Process* p, uint64_t payload, int state) {
  shm::ProgressEntry* e = counted_entry(p, payload);
  if (e == nullptr) return;
  const bool send = count_send(payload);
  std::atomic<uint32_t>* counter = nullptr;
  if (state == (send ? abi::kStateProxyStepSendGPUWait : abi::kStateProxyStepRecvGPUWait)) {
    counter = &e->gpu_wait;
  } else if (state == (send ? abi::kStateProxyStepSendWait : abi::kStateProxyStepRecvWait)) {
    counter = &e->in_net;
  } else if (!send && state == abi::kStateProxyStepRecvFlushWait) {
    counter = &e->net_done;
  } else {
    return;  // SendPeerWait (may repeat within one step) and unknown states
  }
  inc(*counter);  // no timestamp: a counted step's last_ns is its start or stop (proxy_steps.h)
}

void proxy_count_stop(Process* p, uint64_t payload) {
  shm::ProgressEntry* e = counted_entry(p, payload);
  if (e == nullptr) return;
  // NCCL stops a send step when the network completed it, a receive step when the GPU consumed it
  // (v2.28.9-1:src/transport/net.cc, sendProxyProgress / recvProxyProgress).
  inc(count_send(payload) ? e->net_done : e->consumed);
  e->last_ns.store(now_ns(), std::memory_order_relaxed);
}

}  // namespace scout::core
