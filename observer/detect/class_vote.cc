#include "observer/detect/class_vote.h"

#include <algorithm>

#include "common/vote.h"
#include "observer/detect/finding_util.h"

namespace scout::obs {

void ClassVote::record(const Model& m, const Comm& c, const Op& op, const MetaOutcome& meta) {
  if (op.id.cls != OpClass::kColl || c.key.nranks < 2) return;
  if (!class_of_.count(c.key)) class_of_[c.key] = comm_class(c);
  const Key key{op.id.func, op.id.seq};
  if (meta.vote.verdict == VoteVerdict::kAgree) {
    if (meta.partial || meta.vote.groups.empty()) return;
    History& h = history_[c.key];
    if (h.agreed.emplace(key, Value{meta.vote.groups[0].value, meta.api_fields}).second) {
      h.order.push_back(key);
      while (h.order.size() > kHistoryPerComm) {
        h.agreed.erase(h.order.front());
        h.order.pop_front();
      }
    }
    return;
  }
  if (meta.vote.verdict == VoteVerdict::kInconclusive) pending_.push_back(Pending{c.key, op, meta, 0});
}

bool ClassVote::equivalent(const History& mine, const History& peer) {
  int common = 0;
  for (const auto& [k, v] : mine.agreed) {
    auto it = peer.agreed.find(k);
    if (it == peer.agreed.end()) continue;
    if (!(it->second == v)) return false;
    ++common;
  }
  return common > 0;
}

void ClassVote::resolve(const Model& m, int64_t now_ns, FindingBoard& board) {
  std::vector<Pending> keep;
  for (Pending& p : pending_) {
    auto cit = m.comms().find(p.comm);
    if (cit == m.comms().end()) continue;
    const Comm& c = cit->second;
    const Key key{p.op.id.func, p.op.id.seq};
    const History& mine = history_[p.comm];
    // Ballots: this communicator's ranks (ids = comm ranks), then each equivalent peer's ranks
    // (ids beyond nranks, one block per peer) with the value the peer agreed on.
    std::vector<std::pair<int, MetaValue>> ballots;
    for (const auto& g : p.meta.vote.groups) {
      for (int r : g.voters) ballots.emplace_back(r, g.value);
    }
    int electorate = c.key.nranks;
    nlohmann::json peers = nlohmann::json::array();
    for (const auto& [other, h] : history_) {
      if (other == p.comm || class_of_[other] != class_of_[p.comm]) continue;
      auto it = h.agreed.find(key);
      if (it == h.agreed.end() || it->second.api != p.meta.api_fields || !equivalent(mine, h)) continue;
      for (int r = 0; r < other.nranks; ++r) ballots.emplace_back(electorate + r, it->second.v);
      electorate += other.nranks;
      auto oc = m.comms().find(other);
      peers.push_back(oc != m.comms().end() ? to_json(ev_comm(oc->second)) : nlohmann::json(hex64(other.hash)));
    }
    VoteResult<MetaValue> vote = strict_majority(ballots, electorate);
    if (peers.empty() || vote.verdict != VoteVerdict::kAttributed) {
      if (++p.passes < kMaxPasses) keep.push_back(std::move(p));
      continue;
    }
    // The communicator's own ranks, split by the class majority.
    const MetaValue& majority = vote.groups[0].value;
    MetaOutcome out = p.meta;
    out.vote = VoteResult<MetaValue>{};
    out.vote.verdict = VoteVerdict::kAttributed;
    out.vote.has_majority = true;
    VoteGroup<MetaValue> agree{majority, {}};
    std::map<MetaValue, std::vector<int>> rest;
    for (const auto& g : p.meta.vote.groups) {
      for (int r : g.voters) (g.value == majority ? agree.voters : rest[g.value]).push_back(r);
    }
    std::sort(agree.voters.begin(), agree.voters.end());
    out.vote.groups.push_back(agree);
    for (auto& [v, rs] : rest) {
      out.vote.groups.push_back(VoteGroup<MetaValue>{v, rs});
      out.vote.dissenters.insert(out.vote.dissenters.end(), rs.begin(), rs.end());
    }
    std::sort(out.vote.dissenters.begin(), out.vote.dissenters.end());
    auto f = desync_finding(m, c, p.op, out, now_ns);
    if (!f) continue;
    f->evidence["class"] = {{"class", class_of_[p.comm]},
                            {"peers", peers},
                            {"majority_ranks", int(vote.groups[0].voters.size())},
                            {"electorate", electorate}};
    f->summary += "; " + std::to_string(peers.size()) + " equivalent " +
                  (peers.size() == 1 ? "communicator agrees" : "communicators agree") + " with the majority";
    board.report(*f);
  }
  pending_ = std::move(keep);
}

}  // namespace scout::obs
