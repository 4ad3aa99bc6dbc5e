// Stragglers (docs/observer.md#stragglers): a rank that arrives late persistently is named, the ranks
// that only waited for it are not, jitter is not a straggler, and the finding closes when the
// rank recovers.
#include <gtest/gtest.h>

#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
using scout::obs::FindingKind;
using scout::obs::Verdict;

// 4 ranks: TP pairs {0,1} {2,3}, DP pairs {0,2} {1,3}. Each step: compute (20 ms + extra[r]),
// TP AllReduce (1 ms), compute (10 ms), DP AllReduce (1 ms).
struct Job4 {
  ObserverHarness h{4};
  int tp0, tp1, dp0, dp1;
  std::vector<int64_t> tp_end = std::vector<int64_t>(4, 0);
  Job4() {
    tp0 = h.job.add_comm(0x70, {0, 1}, "tp0");
    tp1 = h.job.add_comm(0x71, {2, 3}, "tp1");
    dp0 = h.job.add_comm(0xd0, {0, 2}, "dp0");
    dp1 = h.job.add_comm(0xd1, {1, 3}, "dp1");
  }
  // Writes step `s` with per-rank extra delay before the TP op, then runs a pass.
  void step(int s, const std::vector<int64_t>& extra) {
    int64_t base = kT0 + int64_t(s) * 100 * kMs;
    auto coll = [&](int comm, const std::vector<int>& ranks, const std::vector<int64_t>& arrive, uint64_t seq) {
      FakeColl c;
      c.seq = seq;
      c.t0 = base;
      c.start = arrive;
      c.duration_ns = kMs;
      h.job.collective(comm, c);
      int64_t end = std::max(arrive[0], arrive[1]) + kMs;
      return end;
    };
    std::vector<int64_t> a(4);
    for (int r = 0; r < 4; ++r) a[r] = base + 20 * kMs + extra[r];
    int64_t e0 = coll(tp0, {0, 1}, {a[0], a[1]}, uint64_t(s));
    int64_t e1 = coll(tp1, {2, 3}, {a[2], a[3]}, uint64_t(s));
    std::vector<int64_t> tpe = {e0, e0, e1, e1};
    coll(dp0, {0, 2}, {tpe[0] + 10 * kMs, tpe[2] + 10 * kMs}, uint64_t(s));
    coll(dp1, {1, 3}, {tpe[1] + 10 * kMs, tpe[3] + 10 * kMs}, uint64_t(s));
    h.pass(base + 90 * kMs);
  }
};

TEST(Straggler, LateRankIsNamedItsVictimsAreNotAndItClosesOnRecovery) {
  Job4 j;
  j.h.opt.straggler.window = 16;
  // The counting rule in isolation: no warm-up, and a background test that min_late decides
  // (z = 3: Phi(-3) = 1.3e-3, above the tail of 4 late of tp1's 9 operations at the quiet
  // background 0.05, 6.4e-4).
  j.h.opt.straggler.warmup = 0;
  j.h.opt.straggler.z = 3;
  for (int s = 0; s < 5; ++s) j.step(s, {0, 0, 0, 0});
  EXPECT_TRUE(j.h.findings().empty());
  for (int s = 5; s < 8; ++s) j.step(s, {0, 0, 30 * kMs, 0});
  EXPECT_TRUE(j.h.findings().empty());  // 3 late ops: below min_late (4)
  j.step(8, {0, 0, 30 * kMs, 0});
  auto f = j.h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kStraggler);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_TRUE(f[0].open);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].comm_hash, 0x71u);
  EXPECT_EQ(f[0].key->seq, 5u);
  EXPECT_EQ(f[0].first_seen_ns, kT0 + 500 * kMs + 50 * kMs);
  const auto& c0 = f[0].evidence["comms"][0];
  EXPECT_EQ(c0["comm"]["name"], "tp1");
  EXPECT_EQ(c0["late_ops"], 4);
  EXPECT_EQ(c0["late_events"], 4);
  EXPECT_DOUBLE_EQ(c0["median_late_ms"].get<double>(), 30.0);
  EXPECT_NE(f[0].summary.find("rank 2 (node0, pid 3000002) arrives late by 30.0 ms"), std::string::npos)
      << f[0].summary;
  for (int s = 9; s < 15; ++s) j.step(s, {0, 0, 30 * kMs, 0});
  ASSERT_EQ(j.h.findings().size(), 1u);  // one finding while it lasts
  EXPECT_TRUE(j.h.findings()[0].open);
  for (int s = 15; s < 40; ++s) j.step(s, {0, 0, 0, 0});
  f = j.h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);
}

TEST(Straggler, JitterAndOneOffHiccupsAreNotStragglers) {
  Job4 j;
  uint64_t x = 12345;
  auto rnd = [&]() {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return int64_t((x >> 33) % 2000) * 1000;  // 0 .. 2 ms
  };
  for (int s = 0; s < 60; ++s) {
    std::vector<int64_t> extra{rnd(), rnd(), rnd(), rnd()};
    if (s == 10 || s == 25 || s == 40) extra[s % 4] += 40 * kMs;  // rare hiccups, different ranks
    j.step(s, extra);
  }
  EXPECT_TRUE(j.h.findings().empty());
}

// A busy host: every rank is 30 ms late now and then (about one step in six, at random), which
// the 5 ms floor alone would call late. Nobody stands out from that background: no finding. A
// rank late by 30 ms in every step on top of the same noise does stand out and is named.
TEST(Straggler, NoiseEveryRankSharesIsNotAStragglerAPersistentOutlierIs) {
  Job4 j;
  uint64_t x = 777;
  auto rnd = [&]() {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return (x >> 33) % 6 == 0 ? 30 * kMs : int64_t((x >> 40) % 1000) * 1000;
  };
  for (int s = 0; s < 120; ++s) j.step(s, {rnd(), rnd(), rnd(), rnd()});
  EXPECT_TRUE(j.h.findings().empty());
  for (int s = 120; s < 170; ++s) j.step(s, {rnd(), rnd(), 30 * kMs, rnd()});
  auto f = j.h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kStraggler);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_GT(f[0].evidence["thresholds"]["background_rate"].get<double>(), 0.05);
}

TEST(Straggler, LatenessSignalSubtractsTimeSpentWaitingElsewhere) {
  Job4 j;
  for (int s = 0; s < 3; ++s) j.step(s, {0, 0, 0, 0});
  j.step(3, {0, 0, 30 * kMs, 0});
  // In dp1 (ranks 1 and 3), rank 3 arrived 30 ms after rank 1, but only because it waited for
  // rank 2 in tp1: its own gap since its previous operation equals rank 1's.
  scout::obs::JudgedOp op;
  op.comm = {0xd1, 2};
  op.id = {scout::obs::OpClass::kColl, scout::shm::kFuncAllReduce, 3, -1, -1};
  op.complete = true;
  int64_t base = kT0 + 300 * kMs;
  op.parts.resize(2);
  op.parts[0].proc = 1;
  op.parts[0].comm_rank = 0;
  op.parts[0].start_ns = base + 21 * kMs + 10 * kMs;
  op.parts[0].end_ns = base + 51 * kMs + 10 * kMs + kMs;
  op.parts[1].proc = 3;
  op.parts[1].comm_rank = 1;
  op.parts[1].start_ns = base + 51 * kMs + 10 * kMs;
  op.parts[1].end_ns = op.parts[0].end_ns;
  auto e = scout::obs::StragglerDetector::score(j.h.observer->model(), op, j.h.opt.straggler);
  EXPECT_EQ(e.lateness[1], 30 * kMs);
  EXPECT_EQ(e.signal[1], 0);
  EXPECT_FALSE(e.late[1]);
}

// The gap runs on through a send or receive that did not hold the rank (its peer had posted
// long before), and stops at one the rank waited in, or at a collective.
TEST(Straggler, GapPassesPointToPointOperationsThatDidNotHoldTheRank) {
  scout::obs::Proc p;
  p.timeline.push_back({0, 10 * kMs, -1});                   // a collective, ends at 10 ms
  p.timeline.push_back({80 * kMs, 81 * kMs, 1 * kMs});       // a receive posted at 80 ms, data there
  EXPECT_EQ(scout::obs::gap_before(p, 90 * kMs, 91 * kMs, 5 * kMs), 80 * kMs);
  p.timeline.back().p2p_held_ns = 40 * kMs;                  // posted at 41 ms, waited for its peer
  EXPECT_EQ(scout::obs::gap_before(p, 90 * kMs, 91 * kMs, 5 * kMs), 9 * kMs);
  // Only the operation itself is skipped, and nothing before the timeline is invented: a rank
  // whose timeline holds only passed operations gets the gap to the earliest of them.
  scout::obs::Proc q;
  q.timeline.push_back({80 * kMs, 81 * kMs, 1 * kMs});
  q.timeline.push_back({90 * kMs, 91 * kMs, -1});
  EXPECT_EQ(scout::obs::gap_before(q, 90 * kMs, 91 * kMs, 5 * kMs), 9 * kMs);
}

}  // namespace
