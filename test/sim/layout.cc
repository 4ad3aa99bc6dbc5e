#include "test/sim/layout.h"

#include <algorithm>
#include <set>

namespace scout::sim {

const char* comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::kWorld: return "world";
    case CommKind::kTp: return "tp";
    case CommKind::kDp: return "dp";
    case CommKind::kPp: return "pp";
    case CommKind::kEp: return "ep";
    case CommKind::kCp: return "cp";
  }
  return "?";
}

int CommSpec::rank_of(int g) const {
  auto it = std::lower_bound(members.begin(), members.end(), g);
  return it != members.end() && *it == g ? static_cast<int>(it - members.begin()) : -1;
}

Layout::Layout(const SimOptions& o)
    : n_(o.ranks), t_(o.tp), p_(o.pp), d_(o.dp()), e_(o.ep), m_(o.nodes), c_(o.cp) {
  index_.assign(static_cast<size_t>(n_) * kNumCommKinds, -1);
  // Group index of each kind for every rank, then members per (kind, index).
  auto group_of = [&](int g, CommKind k) -> int {
    RankCoord c = coord(g);
    switch (k) {
      case CommKind::kWorld: return 0;
      case CommKind::kTp: return c.cp + c_ * (c.dp + d_ * c.pp);
      case CommKind::kDp: return c.tp + t_ * c.pp;
      case CommKind::kPp: return c.tp + t_ * (c.cp + c_ * c.dp);
      case CommKind::kEp: return (c.tp + t_ * (c.cp + c_ * c.pp)) * (d_ / e_) + c.dp / e_;
      case CommKind::kCp: return c.tp + t_ * (c.dp + d_ * c.pp);
    }
    return 0;
  };
  int split_count = 0;  // world's split counter: every rank splits world once per kind
  for (int ki = 0; ki < kNumCommKinds; ++ki) {
    CommKind k = static_cast<CommKind>(ki);
    int n_groups = 0;
    for (int g = 0; g < n_; ++g) n_groups = std::max(n_groups, group_of(g, k) + 1);
    std::vector<std::vector<int>> members(n_groups);
    for (int g = 0; g < n_; ++g) members[group_of(g, k)].push_back(g);
    for (int gi = 0; gi < n_groups; ++gi) {
      if (members[gi].size() < 2) continue;
      CommSpec s;
      s.id = static_cast<int>(comms_.size());
      s.kind = k;
      s.index = gi;
      s.name = k == CommKind::kWorld ? std::string("world") : comm_kind_name(k) + std::to_string(gi);
      s.members = members[gi];
      std::set<int> hosts;
      for (int g : s.members) hosts.insert(coord(g).node);
      s.n_nodes = static_cast<int>(hosts.size());
      s.split_count = k == CommKind::kWorld ? -1 : split_count;
      for (int g : s.members) index_[static_cast<size_t>(g) * kNumCommKinds + ki] = s.id;
      comms_.push_back(std::move(s));
    }
    if (k != CommKind::kWorld) ++split_count;
  }
}

RankCoord Layout::coord(int g) const {
  RankCoord c;
  c.tp = g % t_;
  c.cp = (g / t_) % c_;
  c.dp = (g / (t_ * c_)) % d_;
  c.pp = g / (t_ * c_ * d_);
  int per_node = n_ / m_;
  c.node = g / per_node;
  c.local_rank = g % per_node;
  return c;
}

std::string Layout::host_name(int node) { return "node" + std::to_string(node); }

const CommSpec* Layout::comm_of(int g, CommKind kind) const {
  if (g < 0 || g >= n_) return nullptr;
  int id = index_[static_cast<size_t>(g) * kNumCommKinds + static_cast<int>(kind)];
  return id < 0 ? nullptr : &comms_[id];
}

bool Layout::share_comm(int a, int b) const {
  for (const CommSpec& c : comms_)
    if (c.rank_of(a) >= 0 && c.rank_of(b) >= 0) return true;
  return false;
}

}  // namespace scout::sim
