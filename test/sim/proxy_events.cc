// ProxyOp and ProxyStep events of a collective's network transfers (proxy_events.h).
#include "test/sim/proxy_events.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "test/sim/communicator.h"
#include "test/sim/faults.h"
#include "test/sim/futex.h"
#include "test/sim/net_transport.h"
#include "test/sim/profiler_driver.h"

namespace scout::sim {
namespace {

// One inter-host transfer of this rank on one channel.
struct NetEdge {
  int peer = -1;  // comm rank
  bool send = false;
  uint8_t channel = 0;
  int64_t hold_ns = 0;  // slowlink delay of the pair (0: none)
  void* op = nullptr;   // ProxyOp handle
  bool stuck = false;   // its channel stopped (linkdown, nicdown)
  bool down = false;    // ... and this crossing is over the link that is down
  bool from_hung = false;  // a receive from the rank whose kernel hung (kernelstall)
};

// One step of `e` carrying `len` bytes, with the states NCCL's net transport records
// (docs/nccl-notes.md §3.4); a slow pair's step completes at `done_ns`, and no sooner than
// `min_ns` after it entered the network: a step the proxy thread reaches late (a loaded machine)
// still takes the slow link's time per step.
void one_step(const ProfilerDriver& prof, void* ctx, const NetEdge& e, int k, size_t len, int rank, int64_t done_ns,
              int64_t min_ns) {
  abi::DescrV5 d = blank_descr(abi::kEvProxyStep, e.op, rank);
  d.proxyStep.step = k;
  void* s = nullptr;
  prof.start(ctx, &s, d);
  abi::StateArgs a;
  std::memset(&a, 0, sizeof(a));
  a.proxyStep.transSize = len;
  if (e.send) {
    prof.record(s, abi::kStateProxyStepSendGPUWait, nullptr);
    prof.record(s, abi::kStateProxyStepSendPeerWait, nullptr);
    prof.record(s, abi::kStateProxyStepSendWait, &a);
    if (e.hold_ns > 0) sleep_until_ns(std::max(done_ns, shm::wall_ns() + min_ns));
  } else {
    prof.record(s, abi::kStateProxyStepRecvWait, nullptr);
    if (e.hold_ns > 0) sleep_until_ns(std::max(done_ns, shm::wall_ns() + min_ns));
    prof.record(s, abi::kStateProxyStepRecvFlushWait, &a);
    prof.record(s, abi::kStateProxyStepRecvGPUWait, nullptr);
  }
  prof.stop(s);
}

// Comm ranks per host, hosts in order of their first member.
std::vector<std::vector<int>> members_by_host(const CommSpec& spec, const Layout& layout) {
  std::vector<int> hosts;
  std::vector<std::vector<int>> members;
  for (int r = 0; r < spec.nranks(); ++r) {
    const int node = layout.coord(spec.members[size_t(r)]).node;
    const size_t h = size_t(std::find(hosts.begin(), hosts.end(), node) - hosts.begin());
    if (h == hosts.size()) {
      hosts.push_back(node);
      members.emplace_back();
    }
    members[h].push_back(r);
  }
  return members;
}

}  // namespace

std::vector<int> ring_order(const CommSpec& spec, const Layout& layout, int ch) {
  std::vector<int> order;
  const size_t rot = size_t(ch < 0 ? 0 : ch);
  for (const std::vector<int>& m : members_by_host(spec, layout))
    for (size_t i = 0; i < m.size(); ++i) order.push_back(m[(rot + i) % m.size()]);
  return order;
}

uint64_t stuck_channels(const Communicator& c, const KernelTask& t) {
  const FaultPlan& fp = c.rc()->faults;
  uint64_t mask = 0;
  for (int i = 0; i < t.n_channels && i < 64; ++i) {
    const std::vector<int> ring = ring_order(c.spec(), *c.rc()->layout, (t.channel_base + i) % 64);
    const size_t n = ring.size();
    for (size_t k = 0; k < n && n > 1; ++k) {
      const int a = c.spec().members[size_t(ring[k])], b = c.spec().members[size_t(ring[(k + 1) % n])];
      if (fp.link_down(a, b, t.step)) {
        mask |= 1ull << i;
        break;
      }
    }
  }
  return mask;
}

void ring_net_peers(const CommSpec& spec, const Layout& layout, int me, int ch, int* send_to, int* recv_from) {
  *send_to = -1;
  *recv_from = -1;
  const std::vector<std::vector<int>> members = members_by_host(spec, layout);
  const size_t n = members.size();
  if (n < 2) return;
  const size_t rot = size_t(ch < 0 ? 0 : ch);
  auto first = [&](size_t h) { return members[h][rot % members[h].size()]; };
  auto last = [&](size_t h) { return members[h][(rot + members[h].size() - 1) % members[h].size()]; };
  for (size_t h = 0; h < n; ++h) {
    if (last(h) == me) *send_to = first((h + 1) % n);
    if (first(h) == me) *recv_from = last((h + n - 1) % n);
  }
}

uint64_t ring_channel_bytes(const KernelTask& t, int nranks) {
  const uint64_t msg = t.count * kFloatBytes;
  const uint64_t n = uint64_t(std::max(nranks, 1));
  uint64_t traffic = msg;
  switch (t.func) {
    case Func::kAllReduce: traffic = msg * 2 * (n - 1) / n; break;
    case Func::kAllGather:
    case Func::kReduceScatter: traffic = msg * (n - 1); break;  // count is one rank's share
    default: break;
  }
  return std::max<uint64_t>(1, traffic / std::max<uint64_t>(1, t.n_channels));
}

namespace {

// The inter-host ring transfers of task `t` of `c`: per channel, a send and a receive where the
// ring crosses hosts there (`stuck`: stuck_channels() of the task).
std::vector<NetEdge> net_edges(const Communicator& c, const KernelTask& t, uint64_t stuck) {
  const int me_g = c.rc()->global_rank;
  std::vector<NetEdge> edges;
  for (int i = 0; i < t.n_channels; ++i) {
    const int ch = (t.channel_base + i) % 64;
    int to = -1, from = -1;
    ring_net_peers(c.spec(), *c.rc()->layout, c.rank(), ch, &to, &from);
    for (auto [peer, send] : {std::pair{to, true}, std::pair{from, false}}) {
      if (peer < 0) continue;
      NetEdge e;
      e.peer = peer;
      e.send = send;
      e.channel = uint8_t(ch);
      const int peer_g = c.spec().members[size_t(peer)];
      e.hold_ns = c.rc()->faults.slowlink_p2p_ms(me_g, peer_g, t.step) * 1000000;
      e.stuck = (stuck >> i) & 1;
      e.down = e.stuck && c.rc()->faults.link_down(me_g, peer_g, t.step);
      edges.push_back(e);
    }
  }
  return edges;
}

// ProxyOp start of each edge (ProxyAppend), with InProgress when the op moves into progress.
void start_proxy_ops(const ProfilerDriver& prof, Communicator& c, const KernelTask& t, std::vector<NetEdge>& edges,
                     int nsteps, bool in_progress) {
  for (NetEdge& e : edges) {
    abi::DescrV5 d = blank_descr(abi::kEvProxyOp, t.handle, c.rank());
    d.proxyOp.pid = ::getpid();
    d.proxyOp.channelId = e.channel;
    d.proxyOp.peer = e.peer;
    d.proxyOp.nSteps = nsteps;
    d.proxyOp.chunkSize = int(kNetChunk);
    d.proxyOp.isSend = e.send ? 1 : 0;
    prof.start(c.context(), &e.op, d);
    if (in_progress) prof.record(e.op, abi::kStateProxyOpInProgress, nullptr);
  }
}

int net_steps(const KernelTask& t, int nranks) {
  return int((ring_channel_bytes(t, nranks) + kNetChunk - 1) / kNetChunk);
}

}  // namespace

void emit_appended_proxy_ops(Communicator& c, const KernelTask& t) {
  const ProfilerDriver& prof = *c.rc()->prof;
  if (!prof.loaded() || !(t.mask & gate::kProxyOp) || c.spec().n_nodes < 2) return;
  std::vector<NetEdge> edges = net_edges(c, t, 0);
  start_proxy_ops(prof, c, t, edges, net_steps(t, c.nranks()), false);
}

void emit_coll_proxy_events(Communicator& c, const KernelTask& t, int64_t release_ns, uint64_t stuck,
                            int hung_rank) {
  const ProfilerDriver& prof = *c.rc()->prof;
  if (!prof.loaded() || !(t.mask & gate::kProxyOp) || c.spec().n_nodes < 2) return;
  std::vector<NetEdge> edges = net_edges(c, t, stuck);
  if (edges.empty()) return;
  const bool self_hung = hung_rank >= 0 && hung_rank == c.rank();
  for (NetEdge& e : edges) e.from_hung = e.stuck && !e.send && e.peer == hung_rank;
  const uint64_t bytes = ring_channel_bytes(t, c.nranks());
  const int nsteps = net_steps(t, c.nranks());
  start_proxy_ops(prof, c, t, edges, nsteps, true);
  // Steps of all edges in step order, so every slow pair spreads its delay over its steps.
  if (t.mask & gate::kProxyStep) {
    for (int k = 0; k < nsteps; ++k) {
      const size_t len = size_t(std::min<uint64_t>(kNetChunk, bytes - uint64_t(k) * kNetChunk));
      for (const NetEdge& e : edges) {
        if (e.stuck && (e.down || k > 0 || self_hung || e.from_hung)) continue;
        one_step(prof, c.context(), e, k, len, c.rank(), release_ns + e.hold_ns * (k + 1) / nsteps,
                 e.hold_ns / nsteps);
      }
    }
    // Stuck channels: the crossing over the dead link never completes its first step; the others
    // starve at their second.
    for (const NetEdge& e : edges) {
      const bool first = e.down || self_hung || e.from_hung;  // stops at its first step
      if (!e.stuck || (!first && nsteps < 2)) continue;
      abi::DescrV5 d = blank_descr(abi::kEvProxyStep, e.op, c.rank());
      d.proxyStep.step = first ? 0 : 1;
      void* st = nullptr;
      prof.start(c.context(), &st, d);
      abi::StateArgs a;
      std::memset(&a, 0, sizeof(a));
      a.proxyStep.transSize = size_t(std::min<uint64_t>(kNetChunk, bytes));
      if (e.send) {
        prof.record(st, abi::kStateProxyStepSendGPUWait, nullptr);
        if (e.down && !self_hung) {
          prof.record(st, abi::kStateProxyStepSendPeerWait, nullptr);
          prof.record(st, abi::kStateProxyStepSendWait, &a);
        }
      } else {
        prof.record(st, abi::kStateProxyStepRecvWait, nullptr);
        if (self_hung && !e.down) {  // received and handed to a GPU that never consumes it
          prof.record(st, abi::kStateProxyStepRecvFlushWait, &a);
          prof.record(st, abi::kStateProxyStepRecvGPUWait, nullptr);
        }
      }
    }
  }
  for (NetEdge& e : edges)
    if (!e.stuck) prof.stop(e.op);
}

}  // namespace scout::sim
