// Which link, GPU or host stopped a stuck collective (stuck_trace.h).
#include "observer/detect/stuck_trace.h"

#include <algorithm>
#include <map>
#include <set>

namespace scout::obs {
namespace {

constexpr size_t kMaxPaths = 64;

// The process of comm rank `comm_rank` (a progress entry's peer, as the segment says: any value),
// -1 when it is out of the communicator or its process is unknown.
int proc_of(const Comm& c, int comm_rank) {
  return comm_rank >= 0 && comm_rank < int(c.ranks.size()) ? c.ranks[comm_rank].proc : -1;
}

int global_of(const Model& m, const Comm& c, int comm_rank) {
  const int p = proc_of(c, comm_rank);
  return p >= 0 ? m.proc(p).global_rank : -1;
}

// Rank of a path state: what the evidence lists first.
int order(const std::string& state) {
  if (state == "stopped") return 0;
  if (state == "gpu") return 1;
  if (state == "starved") return 2;
  return 3;
}

// Of the processes `gpus` holding received data their GPU never consumed, the ones whose GPU
// stopped: a GPU blocked behind the stopped one (its sends to it over NVLink or PCIe, which have no
// steps, are full) also holds data it does not consume, but it moved data of the operation before
// that (consumed a receive, handed a send to the network); the GPU that stopped moved none. Those
// that moved none when some did, else all. `entries`: (proc, entry) of the operation.
std::set<int> stopped_gpus(const std::set<int>& gpus,
                           const std::vector<std::pair<int, const shm::ProgressSnapshot*>>& entries) {
  std::set<int> idle;
  for (int p : gpus) {
    bool moved = false;
    for (const auto& [q, e] : entries)
      if (q == p) moved = moved || (e->dir == shm::kProgressSend ? e->in_net : e->consumed) > 0;
    if (!moved) idle.insert(p);
  }
  return idle.empty() ? gpus : idle;
}

}  // namespace

StuckVerdict trace_stuck(const Model& m, const Comm& c, const OpId& op) {
  StuckVerdict v;
  v.trace.source = "none";
  v.trace.verdict = "none";
  // KernelCh per channel, over the members' records of the operation.
  if (auto it = c.ops.find(op); it != c.ops.end()) {
    uint64_t started = 0, stopped_all = ~0ull, stopped_any = 0;
    bool any = false;
    for (const OpSlot& s : it->second.slots) {
      if (s.rec.ch_started_mask == 0) continue;
      any = true;
      started |= s.rec.ch_started_mask;
      stopped_all &= s.rec.ch_stopped_mask | ~s.rec.ch_started_mask;
      stopped_any |= s.rec.ch_stopped_mask;
    }
    if (any) {
      std::vector<int> stuck, done;
      for (int ch = 0; ch < 64; ++ch) {
        if (!((started >> ch) & 1)) continue;
        if (!((stopped_any >> ch) & 1)) stuck.push_back(ch);
        if ((stopped_all >> ch) & 1) done.push_back(ch);
      }
      v.trace.channels_stuck = stuck;
      v.trace.channels_done = done;
    }
  }
  // The progress table entries of the members' ProxyOps of this operation.
  std::vector<std::pair<int, const shm::ProgressSnapshot*>> entries;  // (proc, entry)
  for (int r : c.known_ranks) {
    const int p = c.ranks[r].proc;
    if (p < 0 || !m.proc(p).has_progress) continue;
    for (const shm::ProgressSnapshot& e : m.proc(p).progress) {
      if (e.comm_hash != c.key.hash || e.comm_nranks != c.key.nranks || e.comm_rank != r) continue;
      if (op.cls != OpClass::kColl || e.op_func != op.func || e.op_key != op.seq) continue;
      entries.emplace_back(p, &e);
    }
  }
  if (entries.empty()) return v;
  v.trace.source = "proxy";
  std::set<std::pair<int, int>> stopped;  // (sender proc, receiver proc) of sends that never complete
  std::set<int> gpus;                     // procs whose GPU never consumed what it received
  for (const auto& [p, e] : entries) {
    EvStuckPath path;
    path.global_rank = m.proc(p).global_rank;
    path.peer = global_of(m, c, e->peer);
    path.dir = shm::progress_dir_name(e->dir);
    path.channel = e->channel;
    path.steps = int(e->n_steps);
    path.posted = int(e->posted);
    path.in_net = int(e->in_net);
    path.done = int(e->net_done);
    path.gpu = int(e->gpu_wait);
    path.consumed = int(e->consumed);
    path.last_ns = e->last_ns;
    const bool send = e->dir == shm::kProgressSend;
    if (send && e->in_net > e->net_done) {
      path.state = "stopped";
      stopped.emplace(p, proc_of(c, e->peer));
    } else if (!send && e->gpu_wait > e->consumed) {
      path.state = "gpu";
      gpus.insert(p);
    } else if (e->op_stopped || (e->n_steps > 0 && (send ? e->net_done : e->consumed) >= e->n_steps)) {
      path.state = "done";
    } else {
      path.state = "starved";
    }
    v.trace.paths.push_back(std::move(path));
  }
  std::stable_sort(v.trace.paths.begin(), v.trace.paths.end(),
                   [](const EvStuckPath& a, const EvStuckPath& b) { return order(a.state) < order(b.state); });
  if (v.trace.paths.size() > kMaxPaths) v.trace.paths.resize(kMaxPaths);
  auto by_rank = [&](std::vector<int> procs) {
    std::sort(procs.begin(), procs.end(), [&](int a, int b) { return m.proc(a).global_rank < m.proc(b).global_rank; });
    procs.erase(std::unique(procs.begin(), procs.end()), procs.end());
    return procs;
  };
  if (stopped.empty()) {
    if (!gpus.empty()) {
      const std::set<int> named = stopped_gpus(gpus, entries);
      v.trace.verdict = "gpu";
      v.suspects = by_rank(std::vector<int>(named.begin(), named.end()));
    }
    return v;
  }
  // Stopped links. One host touched by all, reaching two other hosts: that host's network.
  std::map<std::string, std::set<std::string>> reach;  // host -> other hosts its stopped links reach
  for (const auto& [a, b] : stopped) {
    if (b < 0) continue;
    const std::string& ha = m.proc(a).host;
    const std::string& hb = m.proc(b).host;
    if (ha == hb) continue;
    reach[ha].insert(hb);
    reach[hb].insert(ha);
  }
  for (const auto& [host, others] : reach) {
    bool all = true;
    for (const auto& [a, b] : stopped) all = all && b >= 0 && (m.proc(a).host == host || m.proc(b).host == host);
    if (!all || others.size() < 2) continue;
    v.trace.verdict = "host";
    v.trace.host = host;
    std::vector<int> on;
    for (int r : c.known_ranks) {
      const int p = c.ranks[r].proc;
      if (p >= 0 && m.proc(p).host == host) on.push_back(p);
    }
    v.suspects = by_rank(on);
    return v;
  }
  v.trace.verdict = "link";
  std::vector<int> ends;
  for (const auto& [a, b] : stopped) {
    ends.push_back(a);
    if (b >= 0) ends.push_back(b);
  }
  v.suspects = by_rank(ends);
  return v;
}

}  // namespace scout::obs
