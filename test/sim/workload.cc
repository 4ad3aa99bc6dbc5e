#include "test/sim/workload.h"

#include <algorithm>

namespace scout::sim {

uint64_t action_send_elems(const Action& a, int nranks, bool is_root) {
  switch (a.kind) {
    case ActionKind::kSend: return a.count;
    case ActionKind::kRecv: return 0;
    case ActionKind::kAlltoAll: return a.count * nranks;
    case ActionKind::kColl:
      switch (a.func) {
        case Func::kReduceScatter: return a.count * nranks;
        case Func::kBroadcast: return is_root ? a.count : 0;
        default: return a.count;
      }
    default: return 0;
  }
}

uint64_t action_recv_elems(const Action& a, int nranks) {
  switch (a.kind) {
    case ActionKind::kSend: return 0;
    case ActionKind::kRecv: return a.count;
    case ActionKind::kAlltoAll: return a.count * nranks;
    case ActionKind::kColl: return a.func == Func::kAllGather ? a.count * nranks : a.count;
    default: return 0;
  }
}

std::vector<Action> step_actions(const Layout& L, const SimOptions& o, int g, int64_t step) {
  std::vector<Action> out;
  const uint64_t c = std::max<uint64_t>(o.bytes / kFloatBytes, 1);
  const CommSpec* tp = L.comm_of(g, CommKind::kTp);
  const CommSpec* dp = L.comm_of(g, CommKind::kDp);
  const CommSpec* pp = L.comm_of(g, CommKind::kPp);
  const CommSpec* ep = L.comm_of(g, CommKind::kEp);
  const CommSpec* world = L.comm_of(g, CommKind::kWorld);
  const CommSpec* cp = L.comm_of(g, CommKind::kCp);

  auto coll = [&](CommKind k, Func f, uint64_t count, bool in_place, int root = -1) {
    Action a;
    a.kind = ActionKind::kColl;
    a.comm = k;
    a.func = f;
    a.count = std::max<uint64_t>(count, 1);
    a.in_place = in_place;
    a.peer = root;
    out.push_back(a);
  };
  auto mark = [&](ActionKind kind, CommKind k) {
    Action a;
    a.kind = kind;
    a.comm = k;
    out.push_back(a);
  };
  auto p2p = [&](ActionKind kind, int peer, CommKind k = CommKind::kPp) {
    Action a;
    a.kind = kind;
    a.comm = k;
    a.func = kind == ActionKind::kSend ? Func::kSend : Func::kRecv;
    a.count = std::max<uint64_t>(c / 2, 1);
    a.peer = peer;
    out.push_back(a);
  };
  auto alltoall = [&]() {
    Action a;
    a.kind = ActionKind::kAlltoAll;
    a.comm = CommKind::kEp;
    a.func = Func::kAlltoAll;
    a.count = std::max<uint64_t>(c / ep->nranks(), 1);
    out.push_back(a);
  };
  // One pipeline exchange: a send and a receive in one group (either may be absent).
  auto pp_exchange = [&](int send_to, int recv_from) {
    if (send_to < 0 && recv_from < 0) return;
    mark(ActionKind::kGroupStart, CommKind::kPp);
    if (send_to >= 0) p2p(ActionKind::kSend, send_to);
    if (recv_from >= 0) p2p(ActionKind::kRecv, recv_from);
    mark(ActionKind::kGroupEnd, CommKind::kPp);
  };
  // Ring attention: K/V blocks passed around the CP group, C - 1 rounds of a send to the next
  // rank and a receive from the previous one.
  auto cp_ring = [&]() {
    const int n = cp->nranks(), me = cp->rank_of(g);
    for (int r = 0; r + 1 < n; ++r) {
      mark(ActionKind::kGroupStart, CommKind::kCp);
      p2p(ActionKind::kSend, (me + 1) % n, CommKind::kCp);
      p2p(ActionKind::kRecv, (me + n - 1) % n, CommKind::kCp);
      mark(ActionKind::kGroupEnd, CommKind::kCp);
    }
  };

  const int stage = pp ? pp->rank_of(g) : 0;
  const int stages = pp ? pp->nranks() : 1;
  const uint64_t tp_n = tp ? tp->nranks() : 1;
  const int chunks = pp ? std::max(1, o.vpp) : 1;

  // Forward, model chunk by model chunk (interleaved schedule: with V chunks per rank the last
  // stage hands chunk v's activations to the first stage's chunk v + 1).
  for (int v = 0; v < chunks; ++v) {
    if (pp)
      pp_exchange(stage + 1 < stages ? stage + 1 : v + 1 < chunks ? 0 : -1,
                  stage > 0 ? stage - 1 : v > 0 ? stages - 1 : -1);
    if (tp) coll(CommKind::kTp, Func::kAllReduce, c, true);
    if (cp) cp_ring();
    if (tp) coll(CommKind::kTp, Func::kAllGather, c / tp_n, false);
    if (ep) alltoall();
    if (tp) coll(CommKind::kTp, Func::kReduceScatter, c / tp_n, false);
  }
  // Backward, chunks in reverse (gradients flow back, the first stage's chunk v to the last
  // stage's chunk v - 1).
  for (int v = chunks - 1; v >= 0; --v) {
    if (pp)
      pp_exchange(stage > 0 ? stage - 1 : v > 0 ? stages - 1 : -1,
                  stage + 1 < stages ? stage + 1 : v + 1 < chunks ? 0 : -1);
    if (cp) cp_ring();
    if (ep) alltoall();
    if (tp) coll(CommKind::kTp, Func::kAllReduce, c, true);
  }
  if (dp) {
    mark(ActionKind::kGroupStart, CommKind::kDp);
    for (int b = 0; b < kDpBuckets; ++b) coll(CommKind::kDp, Func::kAllReduce, c, true);
    mark(ActionKind::kGroupEnd, CommKind::kDp);
  }
  if (world && o.bcast_every > 0 && step % o.bcast_every == 0)
    coll(CommKind::kWorld, Func::kBroadcast, std::max<uint64_t>(64, c / 8), true, 0);
  return out;
}

uint64_t total_ops(const Layout& L, const SimOptions& o, int g) {
  // Steps differ only by the world Broadcast.
  SimOptions plain_opts = o;
  plain_opts.bcast_every = 0;
  uint64_t plain = 0;
  for (const Action& a : step_actions(L, plain_opts, g, 0)) plain += a.is_op();
  uint64_t n_bcast = 0;
  if (o.bcast_every > 0 && L.comm_of(g, CommKind::kWorld))
    n_bcast = static_cast<uint64_t>((o.steps + o.bcast_every - 1) / o.bcast_every);
  return plain * static_cast<uint64_t>(o.steps) + n_bcast;
}

uint64_t first_op_of_step(const Layout& L, const SimOptions& o, int g, int64_t step) {
  SimOptions before = o;
  before.steps = step;
  return step <= 0 ? 0 : total_ops(L, before, g);
}

bool find_op(const Layout& L, const SimOptions& o, int g, uint64_t op, int64_t* step, Action* action) {
  SimOptions plain_opts = o;
  plain_opts.bcast_every = 0;
  uint64_t plain = 0;
  for (const Action& a : step_actions(L, plain_opts, g, 0)) plain += a.is_op();
  if (plain == 0 && !L.comm_of(g, CommKind::kWorld)) return false;
  // Every step has at least `plain` operations: start the search near the answer.
  int64_t s = plain > 0 ? static_cast<int64_t>(op / (plain + 1)) : 0;
  for (; s < o.steps; ++s) {
    uint64_t first = first_op_of_step(L, o, g, s);
    if (first > op) break;
    std::vector<Action> acts = step_actions(L, o, g, s);
    uint64_t i = first;
    for (const Action& a : acts) {
      if (!a.is_op()) continue;
      if (i == op) {
        if (step) *step = s;
        if (action) *action = a;
        return true;
      }
      ++i;
    }
  }
  return false;
}

}  // namespace scout::sim
