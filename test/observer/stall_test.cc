// Stall thresholds and repeat suppression (docs/observer.md, "Stalls"): exact thresholds from
// known gap series, and the memory of closed episodes.
#include <gtest/gtest.h>

#include "observer/detect/stall.h"

namespace {

using scout::obs::StallClock;
using scout::obs::StallMemory;
using scout::obs::StallSignature;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kHard = 60 * kSec;

StallClock with_gaps(std::initializer_list<std::pair<int, int64_t>> runs) {
  StallClock c;
  for (auto [n, gap] : runs) {
    for (int i = 0; i < n; ++i) c.add_gap(gap);
  }
  return c;
}

TEST(StallThreshold, ColdUntilSixteenGaps) {
  StallClock c = with_gaps({{15, 100 * kMs}});
  EXPECT_TRUE(c.cold());
  EXPECT_EQ(c.threshold_ns(kHard), 10 * kSec);
  EXPECT_EQ(c.threshold_ns(4 * kSec), 4 * kSec);  // capped at the hard timeout
  c.add_gap(100 * kMs);
  EXPECT_FALSE(c.cold());
  EXPECT_EQ(c.threshold_ns(kHard), 3 * kSec);  // p99 100 ms x 3 = 300 ms: the floor
}

TEST(StallThreshold, NearestRankP99TimesTheMargin) {
  // 20 gaps: the p99 is the ceil(19.8) = 20th smallest, the 2 s gap: 6 s.
  StallClock c = with_gaps({{19, 100 * kMs}, {1, 2 * kSec}});
  EXPECT_EQ(c.p99_ns(), 2 * kSec);
  EXPECT_EQ(c.threshold_ns(kHard), 6 * kSec);
  EXPECT_EQ(c.threshold_ns(5 * kSec), 5 * kSec);
  // 256 gaps: the p99 is the 254th smallest. Three long gaps reach it, two do not.
  StallClock three = with_gaps({{253, 100 * kMs}, {3, 1500 * kMs}});
  EXPECT_EQ(three.p99_ns(), 1500 * kMs);
  EXPECT_EQ(three.threshold_ns(kHard), 4500 * kMs);
  StallClock two = with_gaps({{254, 100 * kMs}, {2, 1500 * kMs}});
  EXPECT_EQ(two.p99_ns(), 100 * kMs);
  EXPECT_EQ(two.threshold_ns(kHard), 3 * kSec);
  // Beyond the margin's reach of the hard timeout: capped.
  StallClock slow = with_gaps({{20, 25 * kSec}});
  EXPECT_EQ(slow.threshold_ns(kHard), kHard);
}

TEST(StallThreshold, WindowKeepsTheLast256Gaps) {
  StallClock c = with_gaps({{44, 50 * kSec}, {256, 200 * kMs}});
  EXPECT_EQ(c.gaps(), 256u);
  EXPECT_EQ(c.p99_ns(), 200 * kMs);
  EXPECT_EQ(c.threshold_ns(kHard), 3 * kSec);
}

TEST(StallThreshold, GapsAreCountedOnlyAfterAPassWithWorkInFlight) {
  StallClock c;
  c.observe(1 * kSec, true);  // first pass: no earlier mark
  EXPECT_EQ(c.gaps(), 0u);
  c.observe(1500 * kMs, true);  // progressed after a pass with work in flight: 0.5 s
  EXPECT_EQ(c.gaps(), 1u);
  EXPECT_EQ(c.p99_ns(), 500 * kMs);
  c.observe(1500 * kMs, false);  // no progress
  c.observe(4 * kSec, false);    // progress, but nothing was in flight: the communicator was idle
  EXPECT_EQ(c.gaps(), 1u);
  c.observe(5 * kSec, true);   // progress after an idle pass: not a gap either
  c.observe(9 * kSec, false);  // 4 s with work in flight
  EXPECT_EQ(c.gaps(), 2u);     // 0.5 s and 4 s
  EXPECT_EQ(c.p99_ns(), 4 * kSec);
}

StallSignature sig(std::string func, std::vector<int> roots) { return StallSignature{0xd1, 4, func, roots}; }

TEST(StallRepeat, SameSignatureAndSimilarLengthIsARepeat) {
  StallMemory m;
  EXPECT_FALSE(m.is_repeat(sig("AllReduce", {0}), 4 * kSec));  // nothing remembered
  m.remember(sig("AllReduce", {0}), 20 * kSec);
  EXPECT_TRUE(m.is_repeat(sig("AllReduce", {0}), 4 * kSec));
  EXPECT_TRUE(m.is_repeat(sig("AllReduce", {0}), 30 * kSec));    // 1.5 x 20 s
  EXPECT_FALSE(m.is_repeat(sig("AllReduce", {0}), 30 * kSec + 1));  // longer than the job has shown
  EXPECT_FALSE(m.is_repeat(sig("AllReduce", {1}), 4 * kSec));      // another root
  EXPECT_FALSE(m.is_repeat(sig("AllGather", {0}), 4 * kSec));      // another point of the step
  EXPECT_FALSE(m.is_repeat(StallSignature{0xd2, 4, "AllReduce", {0}}, 4 * kSec));  // another communicator
  m.remember(sig("AllReduce", {0}), 40 * kSec);
  EXPECT_EQ(m.longest_ns(sig("AllReduce", {0})), 40 * kSec);
  EXPECT_TRUE(m.is_repeat(sig("AllReduce", {0}), 60 * kSec));
}

TEST(StallRepeat, RemembersTheLast64Episodes) {
  StallMemory m;
  m.remember(sig("AllReduce", {7}), 10 * kSec);
  for (int i = 0; i < 64; ++i) m.remember(sig("AllReduce", {0}), 10 * kSec);
  EXPECT_EQ(m.size(), 64u);
  EXPECT_FALSE(m.is_repeat(sig("AllReduce", {7}), kSec));  // forgotten
  EXPECT_TRUE(m.is_repeat(sig("AllReduce", {0}), kSec));
}

}  // namespace
