// Stalls of the communicators that span nodes, seen from one node (docs/observer-network.md,
// "Hangs across nodes"; the rule is docs/observer.md, "Stalls").
//
// The node-local hang detector follows only communicators whose members this node all sees; a
// rank waiting in a communicator with ranks elsewhere is left to the leader, which judges the
// whole job only from the nodes' wait snapshots. So each pass this watch keeps a stall clock
// (observer/detect/stall.h) for every communicator with a local member that is not finalized,
// and when a communicator that spans nodes has a local rank with an operation in flight and no
// progress for longer than its stall threshold, that is a stall episode: the node asks the leader
// for a hang drill-down, once per episode (an episode ends when the communicator progresses; the
// hang timeout's drill-downs remain the backstop). The wait snapshot the node
// sends carries each communicator's threshold, gap count and p99 gap (rule()), so the leader judges
// the stall by the same clocks.
#pragma once

#include <cstdint>
#include <map>

#include "observer/detect/stall.h"
#include "observer/model/model.h"

namespace scout::obs {

// One communicator's stall rule on this node: threshold (ns; 0: not watched), gaps it was computed
// from and their p99 (ns).
struct StallRule {
  int64_t threshold_ns = 0;
  uint32_t gaps = 0;
  int64_t p99_ns = 0;
};

class StallWatch {
 public:
  // `hard_ns`: the hang timeout (caps every threshold).
  explicit StallWatch(int64_t hard_ns) : hard_ns_(hard_ns) {}

  // One pass over this node's Model at observer time `now_ns` (the Model's clock): feeds the clocks,
  // ends the episodes of communicators that progressed, begins those newly stalled.
  void observe(const Model& m, int64_t now_ns);
  // Stall episodes begun so far (a new one asks for a drill-down).
  uint64_t episodes() const { return episodes_; }
  // True while some communicator that spans nodes is stalled past its threshold (at the last pass).
  bool stalled() const { return stalled_; }
  // The rule of communicator `k` at the last pass (all 0 if it is not watched).
  StallRule rule(const CommKey& k) const;

 private:
  struct Watched {
    StallClock clock;
    int64_t threshold_ns = 0;       // at the last pass (stall.h: a cold clock's rests on its class and operations)
    int64_t episode_progress = -1;  // last progress of the current episode's communicator (-1: none)
  };
  int64_t hard_ns_;
  std::map<CommKey, Watched> comms_;
  uint64_t episodes_ = 0;
  bool stalled_ = false;
};

}  // namespace scout::obs
