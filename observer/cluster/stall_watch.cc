#include "observer/cluster/stall_watch.h"

#include <algorithm>

namespace scout::obs {

void StallWatch::observe(const Model& m, int64_t now_ns) {
  stalled_ = false;
  for (auto it = comms_.begin(); it != comms_.end();) {
    auto c = m.comms().find(it->first);
    it = c == m.comms().end() || c->second.finalized() || c->second.known_ranks.empty() ? comms_.erase(it)
                                                                                        : std::next(it);
  }
  for (const auto& [k, c] : m.comms()) {
    if (c.finalized() || c.known_ranks.empty()) continue;
    bool inflight = false;
    for (int r : c.known_ranks) inflight = inflight || !c.ranks[r].inflight.empty();
    Watched& w = comms_[k];
    w.clock.observe(c.last_progress_ns, inflight);
    const bool spans = c.nnodes > 1 || !c.members_known();
    const int64_t idle = now_ns - c.last_progress_ns;
    const bool stalled = spans && inflight && c.last_progress_ns > 0 && idle > w.clock.threshold_ns(hard_ns_);
    if (!stalled) {
      if (w.episode_progress != c.last_progress_ns) w.episode_progress = -1;
      continue;
    }
    stalled_ = true;
    if (w.episode_progress != c.last_progress_ns) {
      w.episode_progress = c.last_progress_ns;
      ++episodes_;
    }
  }
}

StallRule StallWatch::rule(const CommKey& k) const {
  auto it = comms_.find(k);
  if (it == comms_.end()) return {};
  const StallClock& c = it->second.clock;
  return StallRule{c.threshold_ns(hard_ns_), uint32_t(c.gaps()), c.p99_ns()};
}

}  // namespace scout::obs
