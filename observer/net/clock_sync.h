// Clock offsets between observers: clocks of different nodes are aligned by the observers, not
// assumed (docs/observer-network.md, "Clock alignment").
//
// Every node estimates offset = (its clock) - (the leader's clock), so that a local timestamp t
// reads t - offset on the leader's time line. Method: a binomial tree rooted at the leader
// (node r's parent is r minus its highest set bit); on each tree edge the child sends a ping
// stamped t0 (its clock), the parent stamps arrival t1 and reply t2 (its clock), the child stamps
// the reply's arrival t3. One sample gives
//     offset_to_parent = ((t0 - t1) + (t3 - t2)) / 2,   round trip = (t3 - t0) - (t2 - t1),
// and, whatever the path delays, |offset_to_parent - true| <= round trip / 2 (t1 and t2 lie
// between t0 and t3 in true time). Of `samples` pings the one with the smallest round trip is
// kept. Offsets compose down the tree: offset = offset_to_parent + parent's offset, error bounds
// add. Accuracy stated per estimate (ClockEstimate::error_ns): the sum over the path to the
// leader (at most ceil(log2 N) edges) of half the best round trip; on loopback TCP a few tens of
// microseconds per edge, on a datacenter network typically 10-100 us per edge.
// Cost per node: 2 * samples messages of 8/16 bytes per edge it is on (one edge to its parent,
// at most ceil(log2 N) to children), plus one 16-byte message per child: O(log N), flat in
// practice. Clocks that drift (NTP slews at most ~500 ppm) are re-synchronised periodically.
#pragma once

#include <cstdint>

#include "observer/net/channel.h"

namespace scout::net {

// The clock this observer reads: wall-clock ns (the plugin's timestamps are CLOCK_REALTIME).
// A seam for tests, which shift it by a known offset.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_ns() const = 0;
};

// CLOCK_REALTIME.
class RealtimeClock : public Clock {
 public:
  int64_t now_ns() const override;
};

// CLOCK_MONOTONIC (tests: immune to NTP steps while they measure).
class MonotonicClock : public Clock {
 public:
  int64_t now_ns() const override;
};

// `base` shifted by a constant: now_ns() = base.now_ns() + shift_ns. Tests inject offsets with it.
class ShiftedClock : public Clock {
 public:
  ShiftedClock(const Clock& base, int64_t shift_ns) : base_(base), shift_(shift_ns) {}
  int64_t now_ns() const override { return base_.now_ns() + shift_; }

 private:
  const Clock& base_;
  int64_t shift_;
};

// One ping-pong: child clock t0, t3; parent clock t1, t2.
struct PingSample {
  int64_t offset_ns;  // child - parent
  int64_t rtt_ns;     // round trip without the parent's turnaround (>= 0 for sane clocks)
};
PingSample ping_sample(int64_t t0, int64_t t1, int64_t t2, int64_t t3);

struct ClockEstimate {
  int64_t offset_ns = 0;  // this node's clock - the leader's clock
  int64_t error_ns = 0;   // |offset_ns - true offset| <= error_ns (0 on the leader)
  int64_t rtt_ns = 0;     // best round trip to the parent (0 on the leader)
  int parent = -1;        // tree parent (-1 on the leader)
  int hops = 0;           // edges to the leader
  int64_t taken_ns = 0;   // local clock when the estimate was made

  // The leader's time line for a local timestamp (ns).
  int64_t to_leader(int64_t local_ns) const { return local_ns - offset_ns; }
};

// Estimates this node's offset to the leader. Collective: every endpoint of `ch` calls it at the
// same point of its call sequence. `samples` >= 1 pings per tree edge. Throws ChannelError.
ClockEstimate sync_clocks(Channel& ch, const Clock& clock, int samples = 8);

}  // namespace scout::net
