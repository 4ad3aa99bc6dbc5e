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
  std::map<CommKey, bool> inflight;
  for (const auto& [k, c] : m.comms()) {
    if (c.finalized() || c.known_ranks.empty()) continue;
    bool busy = false;
    for (int r : c.known_ranks) busy = busy || !c.ranks[r].inflight.empty();
    comms_[k].clock.observe(c.last_progress_ns, busy);
    inflight[k] = busy;
  }
  // A cold clock's threshold rests on its class and its own operations (stall.h).
  const auto bases = cold_bases(
      m,
      [&](const CommKey& k) -> const StallClock* {
        auto it = comms_.find(k);
        return it == comms_.end() ? nullptr : &it->second.clock;
      },
      hard_ns_);
  for (auto& [k, w] : comms_) {
    auto b = bases.find(k);
    w.threshold_ns = w.clock.threshold_ns(hard_ns_, b == bases.end() ? ColdBasis{} : b->second);
  }
  for (const auto& [k, c] : m.comms()) {
    if (c.finalized() || c.known_ranks.empty()) continue;
    Watched& w = comms_[k];
    const bool spans = c.nnodes > 1 || !c.members_known();
    const int64_t idle = now_ns - c.last_progress_ns;
    const bool stalled = spans && inflight[k] && c.last_progress_ns > 0 && idle > w.threshold_ns;
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
  return StallRule{it->second.threshold_ns, uint32_t(c.gaps()), c.p99_ns()};
}

}  // namespace scout::obs
