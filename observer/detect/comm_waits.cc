#include "observer/detect/comm_waits.h"

#include <algorithm>
#include <map>
#include <set>

#include "scout/shm_format.h"

namespace scout::obs {

bool has_issued(const Comm& c, const OpId& id, int rank) {
  auto it = c.ops.find(id);
  if (it != c.ops.end()) { return it->second.slot(it->second.index_of(rank)) != nullptr; }
  if (id.cls == OpClass::kColl && rank >= 0 && rank < int(c.ranks.size()) && id.func < shm::kNumNumberedFuncs) {
    return c.ranks[rank].issued[id.func] > id.seq;
  }
  return false;
}

CommWaits analyze_waits(const Comm& c, const Model* m) {
  CommWaits w;
  const int n = int(c.ranks.size());
  w.ranks.resize(n);
  std::vector<bool> is_waiting(n, false);
  // Per operation some rank runs: the participants a waiter may wait for (no record, enqueued but
  // not started, or present and incomplete: waited for as "dead" if its process died first), found
  // once per operation, so a communicator of N ranks all waiting costs O(N), not O(N^2).
  struct Candidate {
    int q;
    const char* why;  // "absent", "not-started", or nullptr: incomplete (waited for only if dead)
  };
  std::map<OpId, std::vector<Candidate>> candidates;
  auto candidates_of = [&](const OpId& id, const Op& op) -> const std::vector<Candidate>& {
    auto [it, added] = candidates.try_emplace(id);
    if (!added) return it->second;
    for (int t = 0; t < op.n; ++t) {
      const int q = op.comm_rank(t);
      const OpSlot* qs = op.slot(t);
      if (!qs) {
        it->second.push_back({q, "absent"});
      } else if (qs->rec.state == shm::kStateEnqueued) {
        it->second.push_back({q, "not-started"});
      } else if (m && qs->rec.state != shm::kStateComplete && q >= 0 && q < n && c.ranks[q].proc >= 0 &&
                 m->proc(c.ranks[q].proc).state == ProcState::kDead) {
        it->second.push_back({q, nullptr});
      }
    }
    return it->second;
  };
  for (int r = 0; r < n; ++r) {
    RankWaitState& rs = w.ranks[r];
    rs.state = "idle";
    for (const auto& [idx, id] : c.ranks[r].inflight) {
      auto it = c.ops.find(id);
      if (it == c.ops.end()) continue;
      const Op& op = it->second;
      const OpSlot* mine = op.slot(op.index_of(r));
      if (!mine) continue;
      bool running = mine->rec.state == shm::kStateRunning;
      if (rs.state == "idle") {
        rs.state = running ? "running" : "enqueued";
        rs.op = id;
      }
      if (!running) continue;
      is_waiting[r] = true;
      for (const Candidate& cd : candidates_of(id, op)) {
        const int q = cd.q;
        if (q == r) continue;
        if (cd.why) {
          w.edges.push_back(WaitEdge{r, q, id, cd.why});
          continue;
        }
        // A dead participant is waited for only if it died before the waiter (a job torn down
        // after a hang kills everyone; the earlier death is the cause, the later ones are not).
        const int qproc = c.ranks[q].proc, rproc = c.ranks[r].proc;
        if (rproc < 0 || m->proc(rproc).state == ProcState::kRunning || m->proc(qproc).gone_ns < m->proc(rproc).gone_ns)
          w.edges.push_back(WaitEdge{r, q, id, "dead"});
      }
    }
    if (is_waiting[r]) w.waiting.push_back(r);
  }
  if (w.waiting.empty()) return w;

  // The operation most waiting ranks are in (their oldest in-flight one).
  std::map<OpId, int> count;
  for (int r : w.waiting) count[w.ranks[r].op]++;
  w.op = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
           return a.second < b.second;
         })->first;

  // Mismatch: two waiting ranks in different collectives, neither having issued the other's.
  bool mismatch = false;
  for (size_t i = 0; i < w.waiting.size() && !mismatch; ++i) {
    for (size_t j = i + 1; j < w.waiting.size() && !mismatch; ++j) {
      int a = w.waiting[i], b = w.waiting[j];
      const OpId& fa = w.ranks[a].op;
      const OpId& fb = w.ranks[b].op;
      if (fa == fb || fa.cls != OpClass::kColl || fb.cls != OpClass::kColl) continue;
      if (!has_issued(c, fa, b) && !has_issued(c, fb, a)) mismatch = true;
    }
  }
  if (mismatch) {
    std::vector<std::pair<int, OpId>> ballots;
    for (int r = 0; r < n; ++r) {
      const RankWaitState& rs = w.ranks[r];
      ballots.emplace_back(r, rs.state != "idle" && rs.op.cls == OpClass::kColl ? rs.op : kIdleOp);
    }
    w.frontier_vote = strict_majority(ballots, n);
    w.cls = "mismatch";
    w.edges.clear();
    if (w.frontier_vote.has_majority && w.frontier_vote.groups[0].value != kIdleOp) {
      w.op = w.frontier_vote.groups[0].value;
      for (int a : w.frontier_vote.groups[0].voters) {
        if (!is_waiting[a]) continue;
        for (int d : w.frontier_vote.dissenters) w.edges.push_back(WaitEdge{a, d, w.op, "mismatch"});
      }
    }
    return w;
  }
  if (w.edges.empty()) {
    w.cls = "stuck";
    auto it = c.ops.find(w.op);
    w.meta_disagrees = it != c.ops.end() && it->second.meta_judged && it->second.meta_verdict != "agree" &&
                       it->second.meta_verdict != "partial";
  } else {
    w.cls = "absent";
  }
  return w;
}

}  // namespace scout::obs
