// Stall thresholds and repeat suppression (docs/observer.md, "Stalls"): exact thresholds from
// known gap series, and the memory of closed episodes.
#include <gtest/gtest.h>

#include "observer/detect/stall.h"
#include "test/support/observer_harness.h"

namespace {

using scout::obs::StallClock;
using scout::obs::StallMemory;
using scout::obs::StallSignature;

using scout::testing::kMs;
using scout::testing::kSec;
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

// A cold clock rests on what the job knows (docs/observer.md, "Stalls"): 3 x the longest time one of
// its operations was held (at least the floor, at most the cold 10 s), or a warm communicator of its
// class's threshold, whichever is larger; 10 s when neither is known.
TEST(StallThreshold, ColdRestsOnItsOwnOperationsAndItsClass) {
  using scout::obs::ColdBasis;
  StallClock c = with_gaps({{3, 100 * kMs}});
  EXPECT_EQ(c.threshold_ns(kHard, ColdBasis{}), 10 * kSec);
  EXPECT_STREQ(c.basis(ColdBasis{}), "none");
  EXPECT_EQ(c.threshold_ns(kHard, ColdBasis{20 * kMs, 0}), 3 * kSec);  // 60 ms: the floor
  EXPECT_STREQ(c.basis(ColdBasis{20 * kMs, 0}), "own");
  EXPECT_EQ(c.threshold_ns(kHard, ColdBasis{1500 * kMs, 0}), 4500 * kMs);
  EXPECT_EQ(c.threshold_ns(kHard, ColdBasis{8 * kSec, 0}), 10 * kSec);  // capped at the cold threshold
  EXPECT_EQ(c.threshold_ns(4 * kSec, ColdBasis{1500 * kMs, 0}), 4 * kSec);  // and at the hard timeout
  EXPECT_EQ(c.threshold_ns(kHard, ColdBasis{20 * kMs, 12 * kSec}), 12 * kSec);  // the class's, not capped at 10 s
  EXPECT_STREQ(c.basis(ColdBasis{20 * kMs, 12 * kSec}), "class");
  EXPECT_EQ(c.threshold_ns(kHard, ColdBasis{0, 3 * kSec}), 3 * kSec);
  EXPECT_EQ(c.threshold_ns(kHard, ColdBasis{2 * kSec, 3 * kSec}), 6 * kSec);  // own is larger
  EXPECT_STREQ(c.basis(ColdBasis{2 * kSec, 3 * kSec}), "own");
  // A warm clock ignores the cold basis.
  StallClock w = with_gaps({{16, 100 * kMs}});
  EXPECT_EQ(w.threshold_ns(kHard, ColdBasis{8 * kSec, 20 * kSec}), 3 * kSec);
  EXPECT_STREQ(w.basis(ColdBasis{8 * kSec, 20 * kSec}), "gaps");
  // A clock another observer computed: its threshold, capped at the hard timeout.
  StallClock g = StallClock::given(6 * kSec, 40, 2 * kSec);
  EXPECT_EQ(g.threshold_ns(kHard, ColdBasis{8 * kSec, 20 * kSec}), 6 * kSec);
  EXPECT_EQ(g.threshold_ns(5 * kSec), 5 * kSec);
  EXPECT_EQ(g.gaps(), 40u);
  EXPECT_EQ(g.p99_ns(), 2 * kSec);
  EXPECT_STREQ(g.basis(), "given");
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

TEST(StallThreshold, GapsAreCountedOnlyWhileTheCommunicatorIsBusy) {
  StallClock c;
  c.observe(1 * kSec, true);  // first pass: no earlier mark
  EXPECT_EQ(c.gaps(), 0u);
  c.observe(1500 * kMs, true);  // progressed after a pass with work in flight: 0.5 s
  EXPECT_EQ(c.gaps(), 1u);
  EXPECT_EQ(c.p99_ns(), 500 * kMs);
  c.observe(1500 * kMs, false);  // no progress
  c.observe(4 * kSec, false);    // progress after a pass with nothing in flight and no progress: idle
  EXPECT_EQ(c.gaps(), 1u);
  c.observe(5 * kSec, false);  // progress in two passes in a row: 1 s
  c.observe(5 * kSec, true);   // no progress
  c.observe(9 * kSec, false);  // 4 s with work in flight
  EXPECT_EQ(c.gaps(), 3u);     // 0.5 s, 1 s, 4 s
  EXPECT_EQ(c.p99_ns(), 4 * kSec);
}

StallSignature sig(std::string func, std::vector<int> roots) { return StallSignature{0xd1, 4, func, roots}; }

TEST(StallRepeat, SameSignatureAndSimilarLengthIsARepeat) {
  StallMemory m;
  EXPECT_FALSE(m.is_repeat(sig("AllReduce", {0}), 4 * kSec));  // nothing remembered
  m.remember(sig("AllReduce", {0}), 20 * kSec);
  EXPECT_TRUE(m.is_repeat(sig("AllReduce", {0}), 4 * kSec));
  EXPECT_TRUE(m.is_repeat(sig("AllReduce", {0}), 30 * kSec));                      // 1.5 x 20 s
  EXPECT_FALSE(m.is_repeat(sig("AllReduce", {0}), 30 * kSec + 1));                 // longer than the job has shown
  EXPECT_FALSE(m.is_repeat(sig("AllReduce", {1}), 4 * kSec));                      // another root
  EXPECT_FALSE(m.is_repeat(sig("AllGather", {0}), 4 * kSec));                      // another point of the step
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

// ---- The hang detector's stalls, on emulated segments (harness hang timeout: 10 s) ----

namespace shm = scout::shm;
using scout::obs::FindingKind;
using scout::testing::FakeJob;
using scout::testing::FakeRec;
using scout::testing::kT0;
using scout::testing::ObserverHarness;
using scout::testing::OpSpec;
using scout::testing::suspect_ranks;

// A 4-rank dp communicator that completed `n` AllReduces from seq `seq0` on, one every 200 ms
// from `t0`, each seen in flight by one pass and completed 100 ms later by the next: 2n - 1
// progress gaps of 99.999 ms (completion to the next enqueue) and 100.001 ms (enqueue to the
// completion record, which the fake job stamps 1 µs after the GPU end), one per pass after the
// first. Returns the time after the last one.
int64_t rhythm(ObserverHarness& h, int dp, uint64_t seq0, int n, int64_t t0) {
  for (int s = 0; s < n; ++s) {
    int64_t t = t0 + s * 200 * kMs;
    std::vector<FakeRec> recs;
    for (int r = 0; r < 4; ++r) {
      OpSpec o;
      o.func = shm::kFuncAllReduce;
      o.key = seq0 + uint64_t(s);
      o.enqueue_ns = t;
      recs.push_back(h.job.enqueue(dp, r, o));
      FakeJob::start(recs.back(), t + 10'000);
    }
    h.pass(t + 50 * kMs);
    for (auto& r : recs) FakeJob::complete(r, t + 100 * kMs);
    h.pass(t + 150 * kMs);
  }
  return t0 + n * 200 * kMs;
}

// Ranks 0-2 enter AllReduce `seq` at t; rank 3 does not.
std::vector<FakeRec> wait_for_rank3(ObserverHarness& h, int dp, uint64_t seq, int64_t t) {
  std::vector<FakeRec> w;
  for (int r = 0; r < 3; ++r) {
    OpSpec o;
    o.func = shm::kFuncAllReduce;
    o.key = seq;
    o.enqueue_ns = t;
    w.push_back(h.job.enqueue(dp, r, o));
    FakeJob::start(w.back(), t + 10'000);
  }
  return w;
}

// Rank 3 joins AllReduce `seq` at t and everyone completes.
void rank3_joins(ObserverHarness& h, int dp, uint64_t seq, int64_t t, std::vector<FakeRec>& w) {
  OpSpec o;
  o.func = shm::kFuncAllReduce;
  o.key = seq;
  o.enqueue_ns = t;
  w.push_back(h.job.enqueue(dp, 3, o));
  FakeJob::start(w.back(), t + 10'000);
  for (auto& r : w) FakeJob::complete(r, t + kMs);
}

TEST(Stall, RootIsNamedAtTheLearnedThresholdAndTheSameFindingBecomesTheHang) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  int64_t t = rhythm(h, dp, 0, 20, kT0);
  wait_for_rank3(h, dp, 20, t);
  h.pass(t + 2900 * kMs);
  EXPECT_TRUE(h.findings().empty());  // under the floor of 3 s
  EXPECT_EQ(h.sink.comms()[0].state, "active");
  h.pass(t + 3100 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kStall);
  EXPECT_TRUE(f[0].open);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
  EXPECT_EQ(f[0].key->seq, 20u);
  EXPECT_EQ(f[0].first_seen_ns, t);
  EXPECT_EQ(h.sink.comms()[0].state, "stalled");
  const auto& e = f[0].evidence;
  EXPECT_EQ(e["class"], "absent");
  EXPECT_EQ(e["root"][0]["global_rank"], 3);
  EXPECT_EQ(e["root"][0]["reason"], "idle");
  EXPECT_EQ(e["waiting_ranks"], (nlohmann::json{0, 1, 2}));
  EXPECT_EQ(e["threshold_ms"], 3000.0);
  EXPECT_EQ(e["timeout_ms"], 10000.0);
  EXPECT_EQ(e["stalled_ms"], 3100.0);
  EXPECT_EQ(e["named_ns"], t + 3100 * kMs);
  // 39 gaps of the rhythm, and the enqueues of AllReduce #20 seen by the pass at 2.9 s.
  EXPECT_EQ(e["rule"], (nlohmann::json{{"gaps", 40},
                                       {"p99_ms", 100.001},
                                       {"margin", 3.0},
                                       {"floor_ms", 3000.0},
                                       {"cold_ms", 10000.0},
                                       {"min_gaps", 16},
                                       {"basis", "gaps"}}));
  EXPECT_FALSE(e.contains("earlier_ms"));
  EXPECT_EQ(f[0].summary,
            "rank 3 (node0, pid 3000003) never entered AllReduce #20 of dp (0x00000000000000d1); 3 ranks wait for it "
            "(no progress for 3.1 s, beyond its stall threshold of 3.0 s; a hang at 10.0 s)");

  // At the hang timeout the same finding (same id) becomes the hang, and says when it was named.
  h.pass(t + 10 * kSec + kMs);
  auto g = h.findings();
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].id, f[0].id);
  EXPECT_EQ(g[0].kind, FindingKind::kHang);
  EXPECT_EQ(g[0].evidence["stall"], (nlohmann::json{{"named_ns", t + 3100 * kMs}, {"threshold_ms", 3000.0}}));
  EXPECT_EQ(h.sink.comms()[0].state, "hung");
}

TEST(Stall, ClosesWhenProgressResumesAndARepeatOfThePauseIsNotReported) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  int64_t t = rhythm(h, dp, 0, 20, kT0);
  // Pause 1: rank 3 away for 4 s. Named at 3.5 s, closed at 4.5 s: an episode of 4.5 s.
  auto w = wait_for_rank3(h, dp, 20, t);
  h.pass(t + 3500 * kMs);
  ASSERT_EQ(h.findings(FindingKind::kStall).size(), 1u);
  rank3_joins(h, dp, 20, t + 4 * kSec, w);
  h.pass(t + 4500 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);
  EXPECT_EQ(f[0].kind, FindingKind::kStall);

  // Pause 2, same communicator, function and root, as long: not reported. (260 operations in
  // between push pause 1's 4 s gap out of the window: the threshold is the 3 s floor again.)
  t = rhythm(h, dp, 21, 260, t + 5 * kSec);
  w = wait_for_rank3(h, dp, 281, t);
  h.pass(t + 3500 * kMs);
  h.pass(t + 4 * kSec);
  EXPECT_EQ(h.findings().size(), 1u);
  rank3_joins(h, dp, 281, t + 4 * kSec + kMs, w);
  h.pass(t + 4500 * kMs);
  EXPECT_EQ(h.findings().size(), 1u);

  // Pause 3 lasts longer than 1.5 x 4.5 s = 6.75 s: reported once it outlasts that.
  t = rhythm(h, dp, 282, 260, t + 5 * kSec);
  wait_for_rank3(h, dp, 542, t);
  h.pass(t + 3500 * kMs);
  h.pass(t + 6500 * kMs);
  EXPECT_EQ(h.findings().size(), 1u);
  h.pass(t + 7 * kSec);
  auto s = h.findings(FindingKind::kStall);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[1].open);
  EXPECT_EQ(s[1].key->seq, 542u);
  EXPECT_EQ(s[1].evidence["earlier_ms"], 4500.0);
}

// Every rank of dp entered AllReduce #20 and none completes (a kernel that never finishes): the
// stuck collective is a stall at the threshold, inconclusive (the records do not say whose
// transfer is missing), and the same finding becomes the stuck hang at the timeout.
TEST(Stall, StuckCollectiveIsAStallAtTheThresholdThenTheHang) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  int64_t t = rhythm(h, dp, 0, 20, kT0);
  auto w = wait_for_rank3(h, dp, 20, t);
  OpSpec o;
  o.func = shm::kFuncAllReduce;
  o.key = 20;
  o.enqueue_ns = t;
  w.push_back(h.job.enqueue(dp, 3, o));
  FakeJob::start(w.back(), t + 10'000);
  h.pass(t + 2900 * kMs);
  EXPECT_TRUE(h.findings().empty());
  h.pass(t + 3100 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kStall);
  EXPECT_EQ(f[0].verdict, scout::obs::Verdict::kInconclusive);
  EXPECT_TRUE(f[0].suspects.empty());
  EXPECT_EQ(f[0].key->seq, 20u);
  const auto& e = f[0].evidence;
  EXPECT_EQ(e["class"], "stuck");
  EXPECT_EQ(e["root"][0]["reason"], "stuck");
  EXPECT_EQ(e["root"][0]["comm"]["name"], "dp");
  EXPECT_EQ(e["waiting_ranks"], (nlohmann::json{0, 1, 2, 3}));
  EXPECT_EQ(e["blocked_elsewhere"], nlohmann::json::array());
  EXPECT_EQ(e["threshold_ms"], 3000.0);
  EXPECT_EQ(e["named_ns"], t + 3100 * kMs);
  EXPECT_EQ(f[0].summary,
            "AllReduce #20 of dp (0x00000000000000d1) is stuck: 4 ranks started it and none completed (no progress "
            "for 3.1 s, beyond its stall threshold of 3.0 s; a hang at 10.0 s)");
  EXPECT_EQ(h.sink.comms()[0].state, "stalled");

  h.pass(t + 10 * kSec + kMs);
  auto g = h.findings();
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].id, f[0].id);
  EXPECT_EQ(g[0].kind, FindingKind::kHang);
  EXPECT_EQ(g[0].evidence["class"], "stuck");
  EXPECT_EQ(g[0].evidence["stall"], (nlohmann::json{{"named_ns", t + 3100 * kMs}, {"threshold_ms", 3000.0}}));
  EXPECT_EQ(g[0].summary, "AllReduce #20 of dp (0x00000000000000d1) is stuck: 4 ranks started it and none completed for 10.0 s");
}

// A stuck collective that completes after 4 s closes its stall; the same pause later (same
// communicator, function and ranks, as long) is not reported again.
TEST(Stall, StuckCollectiveThatResumesIsRememberedAsAPause) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  int64_t t = rhythm(h, dp, 0, 20, kT0);
  auto stuck = [&](uint64_t seq, int64_t at) {
    std::vector<FakeRec> w;
    for (int r = 0; r < 4; ++r) {
      OpSpec o;
      o.func = shm::kFuncAllReduce;
      o.key = seq;
      o.enqueue_ns = at;
      w.push_back(h.job.enqueue(dp, r, o));
      FakeJob::start(w.back(), at + 10'000);
    }
    return w;
  };
  auto w = stuck(20, t);
  h.pass(t + 3500 * kMs);
  ASSERT_EQ(h.findings(FindingKind::kStall).size(), 1u);
  for (auto& r : w) FakeJob::complete(r, t + 4 * kSec);
  h.pass(t + 4500 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);

  t = rhythm(h, dp, 21, 260, t + 5 * kSec);
  w = stuck(281, t);
  h.pass(t + 3500 * kMs);
  h.pass(t + 4 * kSec);
  for (auto& r : w) FakeJob::complete(r, t + 4 * kSec + kMs);
  h.pass(t + 4500 * kMs);
  EXPECT_EQ(h.findings().size(), 1u);
}

// A young communicator (5 gaps: cold) whose operations were each held 100 ms takes the 3 s floor
// from them: a stall at its fourth operation is named after 3 s, not 10.
TEST(Stall, ColdCommunicatorTakesItsThresholdFromItsFirstOperations) {
  ObserverHarness h(4);
  h.opt.hang.timeout_ns = 60 * kSec;
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  int64_t t = rhythm(h, dp, 0, 3, kT0);  // 5 gaps: cold
  wait_for_rank3(h, dp, 3, t);
  h.pass(t + 2900 * kMs);
  EXPECT_TRUE(h.findings().empty());
  h.pass(t + 3100 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kStall);
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{3}));
  EXPECT_EQ(f[0].evidence["threshold_ms"], 3000.0);
  EXPECT_EQ(f[0].evidence["rule"]["gaps"], 6);  // and the enqueues of AllReduce #3
  EXPECT_EQ(f[0].evidence["rule"]["basis"], "own");
  EXPECT_EQ(f[0].evidence["rule"]["held_ms"], 100.001);  // enqueue to the completion record
  EXPECT_FALSE(f[0].evidence["rule"].contains("class_ms"));
}

// A communicator whose first operation is the one that stops knows nothing: 10 s.
TEST(Stall, ColdCommunicatorThatCompletedNothingWaitsTenSecondsOrTheTimeout) {
  ObserverHarness h(4);
  h.opt.hang.timeout_ns = 60 * kSec;
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  wait_for_rank3(h, dp, 0, kT0);
  h.pass(kT0 + 9900 * kMs);
  EXPECT_TRUE(h.findings().empty());
  h.pass(kT0 + 10100 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["threshold_ms"], 10000.0);
  EXPECT_EQ(f[0].evidence["rule"]["basis"], "none");
  ObserverHarness h2(4);
  h2.opt.hang.timeout_ns = 8 * kSec;
  dp = h2.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  wait_for_rank3(h2, dp, 0, kT0);
  h2.pass(kT0 + 7900 * kMs);
  EXPECT_TRUE(h2.findings().empty());
  h2.pass(kT0 + 8100 * kMs);
  ASSERT_EQ(h2.findings(FindingKind::kHang).size(), 1u);  // capped at the timeout: the hang
}

// An operation held long early on (ranks arriving 2 s apart at the first collective) raises the
// cold threshold: a later 5 s wait is not a stall, a 6.5 s one is.
TEST(Stall, ColdCommunicatorWhoseFirstOperationWaitedLongWaitsLonger) {
  ObserverHarness h(4);
  h.opt.hang.timeout_ns = 60 * kSec;
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  auto w = wait_for_rank3(h, dp, 0, kT0);
  h.pass(kT0 + 1 * kSec);
  rank3_joins(h, dp, 0, kT0 + 2 * kSec, w);
  h.pass(kT0 + 2100 * kMs);
  wait_for_rank3(h, dp, 1, kT0 + 3 * kSec);
  h.pass(kT0 + 8 * kSec);
  EXPECT_TRUE(h.findings().empty());
  h.pass(kT0 + 9100 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["threshold_ms"], 6003.003);  // 3 x 2.001001 s (enqueue to the completion record)
  EXPECT_EQ(f[0].evidence["rule"]["basis"], "own");
}

// A new communicator of the class of a warm one (a second dp group with the same function mix)
// takes the threshold the warm one learned before it has any operation of its own.
TEST(Stall, ColdCommunicatorTakesTheThresholdOfAWarmOneOfItsClass) {
  ObserverHarness h(8);
  h.opt.hang.timeout_ns = 60 * kSec;
  int dp0 = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp0");
  // dp0: 12 AllReduces 2 s apart, each held 2 s: gaps of 2 s, p99 2 s, threshold 6 s.
  int64_t t = kT0;
  for (int s = 0; s < 12; ++s, t += 2 * kSec) {
    std::vector<FakeRec> recs;
    for (int r = 0; r < 4; ++r) {
      OpSpec o;
      o.func = shm::kFuncAllReduce;
      o.key = uint64_t(s);
      o.enqueue_ns = t;
      recs.push_back(h.job.enqueue(dp0, r, o));
      FakeJob::start(recs.back(), t + 10'000);
    }
    h.pass(t + kMs);
    for (auto& r : recs) FakeJob::complete(r, t + 2 * kSec - kMs);
    h.pass(t + 2 * kSec);
  }
  int dp1 = h.job.add_comm(0xd2, {4, 5, 6, 7}, "dp1");
  std::vector<FakeRec> w;
  for (int r = 0; r < 3; ++r) {
    OpSpec o;
    o.func = shm::kFuncAllReduce;
    o.key = 0;
    o.enqueue_ns = t;
    w.push_back(h.job.enqueue(dp1, r, o));
    FakeJob::start(w.back(), t + 10'000);
  }
  h.pass(t + 5900 * kMs);
  EXPECT_TRUE(h.findings().empty());
  h.pass(t + 6100 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].comm_name, "dp1");
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{7}));
  EXPECT_EQ(f[0].evidence["rule"]["basis"], "class");
  EXPECT_EQ(f[0].evidence["threshold_ms"], f[0].evidence["rule"]["class_ms"]);
  EXPECT_GE(f[0].evidence["threshold_ms"].get<double>(), 5990.0);
  EXPECT_LE(f[0].evidence["threshold_ms"].get<double>(), 6000.0);
}

TEST(Stall, OffGivesOnlyTheHang) {
  ObserverHarness h(4);
  h.opt.hang.stall = false;
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  int64_t t = rhythm(h, dp, 0, 20, kT0);
  wait_for_rank3(h, dp, 20, t);
  h.pass(t + 5 * kSec);
  EXPECT_TRUE(h.findings().empty());
  h.pass(t + 10 * kSec + kMs);
  ASSERT_EQ(h.findings(FindingKind::kHang).size(), 1u);
  EXPECT_FALSE(h.findings()[0].evidence.contains("stall"));
}

}  // namespace
