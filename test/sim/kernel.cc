// The emulated NCCL kernel: moves real bytes through the fabric (fabric.h protocols) on the
// communicator's proxy thread and delivers KernelCh events around it, with pTimer = CLOCK_REALTIME
// when this rank's kernel starts (arrives) and ends (docs/nccl-notes.md §3.5).
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "replay/emu_device.h"
#include "test/sim/communicator.h"
#include "test/sim/data.h"
#include "test/sim/futex.h"
#include "test/sim/net_transport.h"
#include "test/sim/proxy_events.h"

namespace scout::sim {
namespace {

// KernelCh events of one task (one per channel), delivered by the proxy thread.
struct ChannelEvents {
  void* handles[64] = {};
  int n = 0;
};

void kernelch_start(Communicator& c, const KernelTask& t, int64_t t_ns, ChannelEvents* ev) {
  ev->n = 0;
  if (!(t.mask & gate::kKernelCh)) return;
  for (int i = 0; i < t.n_channels && i < 64; ++i) {
    abi::DescrV5 d;
    std::memset(static_cast<void*>(&d), 0, sizeof(d));
    d.type = abi::kEvKernelCh;
    d.parentObj = t.handle;
    d.rank = 0;  // NCCL leaves rank unset for KernelCh (docs/nccl-notes.md §3.5)
    d.kernelCh.channelId = static_cast<uint8_t>((t.channel_base + i) % 64);
    d.kernelCh.pTimer = static_cast<uint64_t>(t_ns);
    c.rc()->prof->start(c.context(), &ev->handles[i], d);
    ev->n = i + 1;
  }
}

// Stops the task's channels except those of `keep` (bit i: the task's i-th channel, which never
// stops: linkdown, nicdown).
void kernelch_stop(Communicator& c, ChannelEvents* ev, int64_t t_ns, uint64_t keep = 0) {
  for (int i = 0; i < ev->n; ++i) {
    if (!ev->handles[i] || ((keep >> i) & 1)) continue;
    abi::StateArgs a;
    std::memset(&a, 0, sizeof(a));
    a.kernelCh.pTimer = static_cast<uint64_t>(t_ns);
    c.rc()->prof->record(ev->handles[i], abi::kStateKernelChStop, &a);
    c.rc()->prof->stop(ev->handles[i]);
  }
}

TruthEvent truth_for(Communicator& c, const KernelTask& t, FaultKind kind) {
  return truth_event(c, kind, t.func, t.key, t.peer, t.step, static_cast<int64_t>(t.op));
}

// Arrival: straggler delay, then the kernel "starts" on this rank.
int64_t arrive(const KernelTask& t) {
  if (t.straggle_ms > 0) sleep_ms(t.straggle_ms);
  return shm::wall_ns();
}

// Crash fault: the process dies while the operation runs on its GPU (after KernelCh start).
void maybe_crash(Communicator& c, const KernelTask& t) {
  if (!t.crash) return;
  TruthEvent e = truth_for(c, t, FaultKind::kCrash);
  c.rc()->write_truth(e);
  if (c.rc()->status) c.rc()->status->state.store(kRankCrashing, std::memory_order_release);
  ::kill(::getpid(), SIGKILL);
  for (;;) ::pause();
}

// Ground truth of the slowlinks this rank is the first end of, at the first operation they delay
// (`peer_g` >= 0: a message to or from that global rank only).
void note_slowlinks(Communicator& c, const KernelTask& t, int peer_g) {
  for (const FaultSpec* f : c.rc()->faults.slowlinks_of_mine(c.spec(), t.step)) {
    if ((peer_g >= 0 && f->peer != peer_g) || !c.rc()->first_time(f)) continue;
    TruthEvent e = truth_for(c, t, FaultKind::kSlowlink);
    e.peer = f->peer;
    e.ms = f->ms;
    c.rc()->write_truth(e);
  }
}

// Ground truth of a slownic, written once by the first rank of the slow host at its first
// delayed operation.
void note_slownic(Communicator& c, const KernelTask& t, const FaultSpec* f) {
  if (!f || f->rank != c.rc()->global_rank || !c.rc()->first_time(f)) return;
  TruthEvent e = truth_for(c, t, FaultKind::kSlowNic);
  e.ms = f->ms;
  e.detail = "\"node\":" + std::to_string(f->node);
  c.rc()->write_truth(e);
}

// SDC fault: one bit of this rank's received data flips after the reduction.
void flip_bit(Communicator& c, const KernelTask& t, float* out, uint64_t out_n) {
  if (!t.sdc || out_n == 0) return;
  uint64_t element = (t.op * 2654435761ull) % out_n;
  const int bit = 22;  // top mantissa bit: a visible but finite corruption
  uint32_t u;
  std::memcpy(&u, &out[element], 4);
  u ^= 1u << bit;
  std::memcpy(&out[element], &u, 4);
  TruthEvent e = truth_for(c, t, FaultKind::kSdc);
  e.detail = "\"element\":" + std::to_string(element) + ",\"bit\":" + std::to_string(bit);
  c.rc()->write_truth(e);
}

// Every channel of task `t` (bit i: its i-th channel).
uint64_t all_channels(const KernelTask& t) { return t.n_channels >= 64 ? ~0ull : (1ull << t.n_channels) - 1; }

void run_coll(Communicator& c, KernelTask& t) {
  Fabric* fab = c.rc()->fabric;
  const int n = c.nranks();
  const int me = c.rank();
  const int id = c.spec().id;
  const int slot = static_cast<int>(t.ordinal % kSlotDepth);
  const uint64_t round = t.ordinal / kSlotDepth;

  const int64_t t0 = arrive(t);
  ChannelEvents ev;
  kernelch_start(c, t, t0, &ev);
  maybe_crash(c, t);
  // kernelstall: this rank's kernel started and never completes; it never arrives in the fabric,
  // so its peers' kernels wait for its data. The process stays alive.
  // Its emulated GPU is hung from now on: replay on it finishes nothing (docs/scout-sim.md,
  // "Hardware faults").
  // Its peers learn it from the collective slot: they stop in their own stuck state (NCCL's peers
  // keep waiting for its data), and every member's network crossings show it
  // (emit_coll_proxy_events).
  if (t.kernelstall) {
    c.rc()->write_truth(truth_for(c, t, FaultKind::kKernelStall));
    replay::EmuDeviceState dev = c.rc()->faults.device_at(t.step, [&](int g) { return c.rc()->gpu_of(g); });
    dev.hung = true;
    c.rc()->write_device(dev);
    CollSlotHdr* hs = fab->coll_slot(id, slot);
    hs->hung_rank.store(me, std::memory_order_relaxed);
    hs->hung_round.store(round + 1, std::memory_order_release);
    publish(&hs->epoch);
    emit_coll_proxy_events(c, t, shm::wall_ns(), all_channels(t), me);
    c.park_stuck();
  }

  CollSlotHdr* h = fab->coll_slot(id, slot);
  uint64_t* counts = fab->slot_counts(id, slot);
  // 1. the slot's previous use is over
  wait_for(&h->epoch, [&] { return h->departed.load(std::memory_order_acquire) >= round * n; });
  // 2. stage this rank's input
  uint64_t in_elems = 0;
  switch (t.func) {
    case Func::kReduceScatter: in_elems = t.count * n; break;
    case Func::kBroadcast: in_elems = me == t.peer ? t.count : 0; break;
    default: in_elems = t.count; break;
  }
  const uint64_t stage_cap = fab->layout().comms[id].stage_bytes / kFloatBytes;
  in_elems = std::min(in_elems, stage_cap);
  if (in_elems) std::memcpy(fab->staging(id, slot, me), t.send, in_elems * kFloatBytes);
  counts[me] = t.count;
  // 3. arrive; the last rank reduces and releases everyone
  const FaultSpec* nic = nullptr;
  const int64_t nic_ms = c.rc()->faults.slownic_coll_ms(c.spec(), t.step, &nic);
  const int64_t slow_ms = std::max(c.rc()->faults.slowlink_coll_ms(c.spec(), t.step), nic_ms);
  if (slow_ms > 0) note_slowlinks(c, t, -1);
  if (nic_ms > 0) note_slownic(c, t, nic);
  uint64_t a = h->arrived.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (a == (round + 1) * n) {
    if (t.func == Func::kAllReduce) {
      uint64_t max_n = 0;
      std::vector<const float*> in(n);
      for (int j = 0; j < n; ++j) {
        in[j] = reinterpret_cast<const float*>(fab->staging(id, slot, j));
        max_n = std::max(max_n, counts[j]);
      }
      max_n = std::min<uint64_t>(max_n, fab->layout().comms[id].result_bytes / kFloatBytes);
      reduce_sum(reinterpret_cast<float*>(fab->result(id, slot)), max_n, in.data(), counts, n, 0);
      // nondet: this call's reduction order differs from the last one's: the lowest mantissa bit
      // of one element changes from call to call. One shared result, so every rank agrees.
      if (max_n > 0 && c.rc()->faults.nondet_in(c.spec(), t.step)) {
        float* res = reinterpret_cast<float*>(fab->result(id, slot));
        const uint64_t e = (t.ordinal * 2654435761ull) % max_n;
        uint32_t u;
        std::memcpy(&u, &res[e], 4);
        u ^= 1u;
        std::memcpy(&res[e], &u, 4);
      }
    }
    h->ready_ns.store(slow_ms > 0 ? shm::wall_ns() + slow_ms * 1000000 : 0, std::memory_order_relaxed);
    h->ready_round.store(round + 1, std::memory_order_release);
    publish(&h->epoch);
  } else {
    wait_for(&h->epoch, [&] {
      return h->ready_round.load(std::memory_order_acquire) >= round + 1 ||
             h->hung_round.load(std::memory_order_acquire) == round + 1;
    });
    if (h->ready_round.load(std::memory_order_acquire) < round + 1) {
      // A member's kernel hung (kernelstall): this kernel waits for its data forever.
      emit_coll_proxy_events(c, t, shm::wall_ns(), all_channels(t), h->hung_rank.load(std::memory_order_relaxed));
      c.park_stuck();
    }
  }
  // The network steps of this rank's inter-host ring transfers (when the mask asks), a slow
  // pair's between the release and the delayed end.
  const int64_t ready_ns = h->ready_ns.load(std::memory_order_relaxed);
  // linkdown / nicdown: the channels whose ring crosses a link that delivers nothing never finish,
  // on every member (each computes the same rings); the others do. The kernel never completes.
  const uint64_t stuck = stuck_channels(c, t);
  emit_coll_proxy_events(c, t, ready_ns > 0 ? ready_ns - slow_ms * 1000000 : shm::wall_ns(), stuck);
  if (stuck != 0) {
    kernelch_stop(c, &ev, shm::wall_ns(), stuck);
    c.park_stuck();
  }
  sleep_until_ns(ready_ns);
  // Ground truth of a nondet fault, written by its rank at its first perturbed reduction.
  if (t.func == Func::kAllReduce)
    if (const FaultSpec* nd = c.rc()->faults.nondet_in(c.spec(), t.step);
        nd && nd->rank == c.rc()->global_rank && c.rc()->first_time(nd))
      c.rc()->write_truth(truth_for(c, t, FaultKind::kNondet));
  // 4. this rank's output
  float* out = t.recv;
  uint64_t out_n = 0;
  switch (t.func) {
    case Func::kAllReduce:
      out_n = t.count;
      copy_or_zero(out, out_n, reinterpret_cast<const float*>(fab->result(id, slot)), out_n);
      break;
    case Func::kReduceScatter: {
      std::vector<const float*> in(n);
      for (int j = 0; j < n; ++j) in[j] = reinterpret_cast<const float*>(fab->staging(id, slot, j));
      out_n = t.count;
      reduce_sum(out, out_n, in.data(), counts, n, static_cast<uint64_t>(me));
      break;
    }
    case Func::kAllGather:
      out_n = t.count * n;
      for (int j = 0; j < n; ++j)
        copy_or_zero(out + t.count * j, t.count, reinterpret_cast<const float*>(fab->staging(id, slot, j)), counts[j]);
      break;
    case Func::kBroadcast:
      out_n = t.count;
      copy_or_zero(out, out_n, reinterpret_cast<const float*>(fab->staging(id, slot, t.peer)), counts[t.peer]);
      break;
    default: break;
  }
  h->departed.fetch_add(1, std::memory_order_acq_rel);
  publish(&h->epoch);
  flip_bit(c, t, out, out_n);
  kernelch_stop(c, &ev, shm::wall_ns());
}

// A point-to-point task carried by the net plugin (net_transport.h): the message goes step by
// step through the connection's staging buffer, at most kNetSteps steps in flight, as NCCL's net
// transport moves it (docs/nccl-notes.md §6.7).
struct NetTask {
  KernelTask* t = nullptr;
  NetPeerLink* link = nullptr;
  size_t bytes = 0;
  int nsteps = 0;
  int posted = 0, done = 0;
  void* req[kNetSteps] = {};
  int64_t post_ns[kNetSteps] = {};
  int64_t hold_ns = 0;  // slowlink: a step completes no earlier than this after it was posted
  int64_t end_ns = 0;
  bool failed = false;
};

// Posts and tests what can move now; true if anything did.
bool progress_net(Communicator& c, NetTask& n) {
  const abi::NetV11* T = c.net().table();
  static thread_local void* phandle = nullptr;  // NCCL passes its step's event handle, never NULL
  bool moved = false;
  const bool send = n.t->func == Func::kSend;
  while (n.posted < n.nsteps && n.posted - n.done < kNetSteps) {
    const int s = n.posted;
    const size_t off = size_t(s) * kNetChunk;
    const size_t len = std::min(kNetChunk, n.bytes - std::min(n.bytes, off));
    void* r = nullptr;
    abi::Result res;
    if (send) {
      if (len != 0) std::memcpy(n.link->slot(s), reinterpret_cast<const char*>(n.t->send) + off, len);
      res = T->isend(n.link->link.send, n.link->slot(s), len, s, n.link->link.smr, &phandle, &r);
    } else {
      void* data[1] = {n.link->slot(s)};
      size_t sizes[1] = {kNetChunk};
      int tags[1] = {s};
      void* mh[1] = {n.link->link.rmr};
      void* ph[1] = {&phandle};
      res = T->irecv(n.link->link.recv, 1, data, sizes, tags, mh, ph, &r);
    }
    if (res != abi::kSuccess) {
      n.failed = true;
      return false;
    }
    if (r == nullptr) break;  // the plugin asks to try again later
    n.req[s % kNetSteps] = r;
    n.post_ns[s % kNetSteps] = shm::wall_ns();
    n.posted++;
    moved = true;
  }
  while (n.done < n.posted) {
    const int s = n.done;
    int d = 0, size = 0;
    if (T->test(n.req[s % kNetSteps], &d, &size) != abi::kSuccess) {
      n.failed = true;
      return false;
    }
    if (!d) break;
    if (n.hold_ns > 0) sleep_until_ns(n.post_ns[s % kNetSteps] + n.hold_ns);
    if (!send && size > 0) {
      const size_t off = size_t(s) * kNetChunk;
      std::memcpy(reinterpret_cast<char*>(n.t->recv) + off, n.link->slot(s),
                  std::min(size_t(size), n.bytes - std::min(n.bytes, off)));
    }
    n.done++;
    moved = true;
  }
  if (n.done == n.nsteps && n.end_ns == 0) n.end_ns = shm::wall_ns();
  return moved;
}

// Runs every net task of a plan to completion, progressing them together (a send and a receive
// of the same pair never wait for each other).
void run_net(Communicator& c, std::vector<NetTask>& tasks) {
  int idle = 0;
  for (;;) {
    bool all = true, moved = false;
    for (NetTask& n : tasks) {
      if (n.done == n.nsteps || n.failed) continue;
      moved |= progress_net(c, n);
      all &= n.done == n.nsteps || n.failed;
    }
    if (all) break;
    if (moved) {
      idle = 0;
    } else if (++idle > 64) {
      ::usleep(50);  // the emulated ranks share the host's cores
    }
  }
  for (NetTask& n : tasks) {
    if (n.failed) {
      std::fprintf(stderr, "scout-sim: rank %d: %s: the net plugin failed a transfer\n", c.rc()->global_rank,
                   c.spec().name.c_str());
      std::_Exit(1);  // NCCL reports the error and aborts the communicator
    }
  }
}

// All point-to-point tasks of a plan run together: sends are posted first, then the tasks the
// net plugin carries run to completion, then receives are taken, then the sends wait for their
// receivers (so grouped send/recv pairs cannot deadlock).
void run_p2p(Communicator& c, std::vector<KernelTask*>& tasks) {
  if (tasks.empty()) return;
  Fabric* fab = c.rc()->fabric;
  const int id = c.spec().id;
  const int me = c.rank();
  const uint64_t slot_cap = fab->layout().comms[id].mbox_slot_bytes / kFloatBytes;
  int64_t straggle = 0;
  for (KernelTask* t : tasks) straggle = std::max(straggle, t->straggle_ms);
  if (straggle > 0) sleep_ms(straggle);
  const int64_t t0 = shm::wall_ns();
  std::vector<ChannelEvents> ev(tasks.size());
  std::vector<int64_t> t_end(tasks.size(), 0);
  for (size_t i = 0; i < tasks.size(); ++i) kernelch_start(c, *tasks[i], t0, &ev[i]);
  for (KernelTask* t : tasks) maybe_crash(c, *t);
  // linkdown / nicdown: a message over a link that delivers nothing never completes on either end;
  // the plan's other messages move, then the kernel waits forever.
  std::vector<bool> dead(tasks.size(), false);
  bool any_dead = false;
  for (size_t i = 0; i < tasks.size(); ++i) {
    dead[i] = c.rc()->faults.link_down(c.rc()->global_rank, c.spec().members[tasks[i]->peer], tasks[i]->step);
    any_dead = any_dead || dead[i];
  }

  // Tasks whose peer is on another host and connected through the net plugin.
  std::vector<NetTask> net;
  std::vector<size_t> net_of(tasks.size(), SIZE_MAX);
  for (size_t i = 0; i < tasks.size(); ++i) {
    KernelTask* t = tasks[i];
    if (dead[i]) continue;
    NetPeerLink* l = t->func == Func::kSend ? c.net().send_link(t->peer) : c.net().recv_link(t->peer);
    if (l == nullptr) continue;
    NetTask n;
    n.t = t;
    n.link = l;
    n.bytes = size_t(t->count) * kFloatBytes;
    n.nsteps = int(std::max<size_t>(1, (n.bytes + kNetChunk - 1) / kNetChunk));
    const int peer_g = c.spec().members[t->peer];
    const int64_t slow_ms = std::max(c.rc()->faults.slowlink_p2p_ms(c.rc()->global_rank, peer_g, t->step),
                                     c.rc()->faults.slownic_p2p_ms(c.rc()->global_rank, peer_g, t->step));
    n.hold_ns = slow_ms * 1000000;
    net_of[i] = net.size();
    net.push_back(n);
  }
  auto on_net = [&](size_t i) { return net_of[i] != SIZE_MAX; };

  for (size_t i = 0; i < tasks.size(); ++i) {
    KernelTask* t = tasks[i];
    if (t->func != Func::kSend || on_net(i) || dead[i]) continue;
    MailboxHdr* m = fab->mailbox(id, me, t->peer);
    // No mailbox: the workload never has this pair exchange messages in this communicator (a Send
    // on the wrong communicator, wronggroup): its receiver never posts, so the kernel never ends.
    if (!m) {
      for (;;) ::pause();
    }
    const uint64_t k = t->ordinal;
    const int slot = static_cast<int>(k % kSlotDepth);
    wait_for(&m->epoch, [&] { return m->consumed.load(std::memory_order_acquire) + kSlotDepth >= k + 1; });
    uint64_t nel = std::min(t->count, slot_cap);
    std::memcpy(fab->mailbox_data(id, me, t->peer, slot), t->send, nel * kFloatBytes);
    m->count[slot] = nel;
    m->post_ns[slot] = t0;
    m->posted.store(k + 1, std::memory_order_release);
    publish(&m->epoch);
  }
  if (!net.empty()) {
    run_net(c, net);
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!on_net(i)) continue;
      KernelTask* t = tasks[i];
      const int peer_g = c.spec().members[t->peer];
      if (t->func == Func::kRecv && t->count && c.rc()->faults.linksdc_from(peer_g, t->step)) {
        uint32_t u;
        std::memcpy(&u, &t->recv[0], 4);
        u ^= 1u << 20;
        std::memcpy(&t->recv[0], &u, 4);
      }
      t_end[i] = net[net_of[i]].end_ns;
    }
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    KernelTask* t = tasks[i];
    if (t->func != Func::kRecv || on_net(i) || dead[i]) continue;
    MailboxHdr* m = fab->mailbox(id, t->peer, me);
    if (!m) continue;
    const uint64_t k = t->ordinal;
    const int slot = static_cast<int>(k % kSlotDepth);
    wait_for(&m->epoch, [&] { return m->posted.load(std::memory_order_acquire) >= k + 1; });
    const int peer_g = c.spec().members[t->peer];
    const FaultSpec* nic = nullptr;
    const int64_t nic_ms = c.rc()->faults.slownic_p2p_ms(c.rc()->global_rank, peer_g, t->step, &nic);
    const int64_t slow_ms = std::max(c.rc()->faults.slowlink_p2p_ms(c.rc()->global_rank, peer_g, t->step), nic_ms);
    if (nic_ms > 0) note_slownic(c, *t, nic);
    if (slow_ms > 0) sleep_until_ns(std::max(m->post_ns[slot], t0) + slow_ms * 1000000);
    copy_or_zero(t->recv, t->count, reinterpret_cast<const float*>(fab->mailbox_data(id, t->peer, me, slot)),
                 m->count[slot]);
    // linksdc: every message from that sender arrives with a flipped bit.
    if (t->count && c.rc()->faults.linksdc_from(peer_g, t->step)) {
      uint32_t u;
      std::memcpy(&u, &t->recv[0], 4);
      u ^= 1u << 20;
      std::memcpy(&t->recv[0], &u, 4);
    }
    m->consumed.store(k + 1, std::memory_order_release);
    publish(&m->epoch);
    t_end[i] = shm::wall_ns();
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    KernelTask* t = tasks[i];
    if (t->func != Func::kSend || on_net(i) || dead[i]) continue;
    MailboxHdr* m = fab->mailbox(id, me, t->peer);
    if (m) wait_for(&m->epoch, [&] { return m->consumed.load(std::memory_order_acquire) >= t->ordinal + 1; });
    t_end[i] = shm::wall_ns();
  }
  // Ground truth of a slowlink this rank is one end of.
  for (KernelTask* t : tasks) note_slowlinks(c, *t, c.spec().members[t->peer]);
  for (size_t i = 0; i < tasks.size(); ++i)
    if (!dead[i]) kernelch_stop(c, &ev[i], t_end[i]);
  if (any_dead) {
    for (;;) ::pause();
  }
}

}  // namespace

void run_kernel_plan(Communicator& c, KernelPlan& plan) {
  std::vector<KernelTask*> p2p;
  for (KernelTask& t : plan.tasks) {
    if (is_collective(t.func))
      run_coll(c, t);
    else
      p2p.push_back(&t);
  }
  run_p2p(c, p2p);
}

}  // namespace scout::sim
