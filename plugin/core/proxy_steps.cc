// Per-peer network step times from ProxyOp/ProxyStep events (proxy_steps.h).
#include "plugin/core/proxy_steps.h"

#include <new>

#include "plugin/core/handle.h"
#include "plugin/core/link_table.h"
#include "plugin/core/process.h"

namespace scout::core {
namespace {

enum ProxySlotState : uint8_t {
  kSlotFree = 0,
  kSlotStarted = 1,  // step started, its timed state not seen yet
  kSlotTiming = 2,   // SendWait / RecvWait seen: t0 set
  kSlotTimed = 3,    // recv: RecvFlushWait added it to the link
};

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

void* proxy_op_start(Process* p, CommState* c, const abi::ProxyOpDescr& d) {
  uint32_t cur = p->proxy.current();
  if (c->proxy == nullptr || !ProxyWindows::is_open(cur)) {
    c->hdr->ignored_events.fetch_add(1, std::memory_order_relaxed);  // outside a window
    return inert(p);
  }
  if (d.peer < 0 || d.peer >= c->nranks) {
    count_bad_handle(p, c);  // a peer outside the communicator: nothing to name
    return inert(p);
  }
  return handle_of(p, HandleType::kProxyOp, pop_payload(c->ring_index, d.isSend != 0, cur >> 1, uint32_t(d.peer)));
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
  uint32_t cur = p->proxy.current();
  if (!ProxyWindows::is_open(cur) || ((cur >> 1) & 0x7ff) != pop_window(par.payload)) {
    untimed(p);  // its op's window is over
    return inert(p);
  }
  int64_t now = now_ns();
  shm::LinkEntry* e = link_of(p, c, pop_peer(par.payload), pop_send(par.payload), now);
  if (e == nullptr) {
    untimed(p);
    return inert(p);
  }
  ProxyComm* pc = c->proxy;
  uint32_t i = pc->next++ & (kProxyStepSlots - 1);
  ProxyStepSlot* s = &pc->slots[i];
  if (s->state == kSlotStarted || s->state == kSlotTiming) untimed(p);  // never finished
  s->gen = (s->gen + 1) & 0xffffff;
  s->state = kSlotStarted;
  s->send = pop_send(par.payload);
  s->entry = e;
  s->window = cur;
  s->t0 = 0;
  s->bytes = 0;
  bump(e->posted, 1);
  return handle_of(p, HandleType::kProxyStep, step_payload(c->ring_index, i, s->gen));
}

void proxy_step_state(Process* p, uint64_t payload, int state, const abi::StateArgs* args) {
  ProxyStepSlot* s = slot_of(p, payload);
  if (s == nullptr) return;  // taken over (counted then)
  if (state == (s->send ? abi::kStateProxyStepSendWait : abi::kStateProxyStepRecvWait)) {
    if (s->state != kSlotStarted) return;
    if (s->send && args != nullptr) s->bytes = uint64_t(args->proxyStep.transSize);
    s->t0 = now_ns();
    s->state = kSlotTiming;
  } else if (state == abi::kStateProxyStepRecvFlushWait && !s->send) {
    if (s->state != kSlotTiming) return;
    finish(p, s, args != nullptr ? uint64_t(args->proxyStep.transSize) : 0, now_ns());
    s->state = kSlotTimed;
  }
  // The other step states (GPU waits, SendPeerWait) say nothing about the network.
}

void proxy_step_stop(Process* p, uint64_t payload) {
  ProxyStepSlot* s = slot_of(p, payload);
  if (s == nullptr) return;
  if (s->send && s->state == kSlotTiming) {
    finish(p, s, s->bytes, now_ns());
  } else if (s->state != kSlotTimed) {
    untimed(p);  // its timed state never came
  }
  s->state = kSlotFree;
}

}  // namespace scout::core
