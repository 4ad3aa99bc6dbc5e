// Communication-slow channels (docs/observer.md#slow-links): a slow TP pair names the link, a rank
// whose every communicator is slow is the endpoint, a slow p2p pair names its link, and healthy
// channels give nothing.
#include <gtest/gtest.h>

#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
using scout::obs::FindingKind;
using scout::obs::Verdict;

// 8 ranks: TP pairs {0,1} {2,3} {4,5} {6,7}; DP groups {0,2,4,6} {1,3,5,7}.
struct Job8 {
  ObserverHarness h{8};
  std::vector<int> tp, dp;
  Job8() {
    for (int p = 0; p < 4; ++p) tp.push_back(h.job.add_comm(0x70 + p, {2 * p, 2 * p + 1}, "tp" + std::to_string(p)));
    dp.push_back(h.job.add_comm(0xd0, {0, 2, 4, 6}, "dp0"));
    dp.push_back(h.job.add_comm(0xd1, {1, 3, 5, 7}, "dp1"));
  }
  // One step: every TP pair then every DP group, with the given transfer times.
  void step(int s, const std::vector<int64_t>& tp_ns, const std::vector<int64_t>& dp_ns) {
    int64_t base = kT0 + int64_t(s) * 100 * kMs;
    for (int p = 0; p < 4; ++p) {
      FakeColl c;
      c.seq = uint64_t(s);
      c.t0 = base;
      c.count = 1 << 20;
      c.duration_ns = tp_ns[p];
      h.job.collective(tp[p], c);
    }
    for (int d = 0; d < 2; ++d) {
      FakeColl c;
      c.seq = uint64_t(s);
      c.t0 = base + 20 * kMs;
      c.count = 1 << 22;
      c.duration_ns = dp_ns[d];
      h.job.collective(dp[d], c);
    }
    h.pass(base + 90 * kMs);
  }
};

TEST(SlowLink, SlowTensorParallelPairNamesTheLink) {
  Job8 j;
  for (int s = 0; s < 10; ++s) j.step(s, {kMs, 5 * kMs, kMs, kMs}, {2 * kMs, 2 * kMs});
  auto f = j.h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSlowLink);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  ASSERT_TRUE(f[0].peer);
  EXPECT_EQ(f[0].peer->global_rank, 3);
  EXPECT_EQ(f[0].comm_hash, 0x71u);
  EXPECT_EQ(f[0].evidence["class"], "link");
  EXPECT_DOUBLE_EQ(f[0].evidence["slow"][0]["median_ms"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(f[0].evidence["slow"][0]["peer_median_ms"].get<double>(), 1.0);
  EXPECT_EQ(f[0].evidence["slow"][0]["peers"], 3);
  EXPECT_EQ(f[0].evidence["normal"].size(), 2u);  // dp0 and dp1 clear ranks 2 and 3 as endpoints
  EXPECT_TRUE(f[0].open);
  // The link recovers: once its window holds normal transfers, the finding closes.
  for (int s = 10; s < 30; ++s) j.step(s, {kMs, kMs, kMs, kMs}, {2 * kMs, 2 * kMs});
  f = j.h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);
}

TEST(SlowLink, RankWhoseEveryCommunicatorIsSlowIsTheEndpoint) {
  Job8 j;
  for (int s = 0; s < 10; ++s) j.step(s, {kMs, kMs, 5 * kMs, kMs}, {2 * kMs, 6 * kMs});
  auto f = j.h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSlowLink);
  EXPECT_EQ(f[0].evidence["class"], "endpoint");
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{5});
  EXPECT_FALSE(f[0].peer);
  EXPECT_EQ(f[0].evidence["slow"].size(), 2u);
}

TEST(SlowLink, SlowGroupThatNoRankExplainsIsInconclusive) {
  Job8 j;
  // dp1 = {1,3,5,7} is slow, but each of its ranks has a normal TP pair: no endpoint, no single
  // link can be named from communicator timings.
  for (int s = 0; s < 10; ++s) j.step(s, {kMs, kMs, kMs, kMs}, {2 * kMs, 8 * kMs});
  auto f = j.h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSlowLink);
  EXPECT_EQ(f[0].verdict, Verdict::kInconclusive);
  EXPECT_TRUE(f[0].suspects.empty());
  EXPECT_EQ(f[0].comm_hash, 0xd1u);
  EXPECT_EQ(f[0].evidence["class"], "comm");
}

TEST(SlowLink, HealthyChannelsGiveNothing) {
  Job8 j;
  for (int s = 0; s < 12; ++s) {
    int64_t wobble = (s % 3) * 100'000;  // 0.1 ms noise
    j.step(s, {kMs + wobble, kMs, kMs + wobble, kMs}, {2 * kMs, 2 * kMs + wobble});
  }
  EXPECT_TRUE(j.h.findings().empty());
}

TEST(SlowLink, SlowPointToPointPairNamesTheLink) {
  ObserverHarness h(8);
  std::vector<int> pp;
  for (int p = 0; p < 4; ++p) pp.push_back(h.job.add_comm(0x90 + p, {2 * p, 2 * p + 1}, "pp" + std::to_string(p)));
  for (int s = 0; s < 8; ++s) {
    int64_t base = kT0 + s * 100 * kMs;
    for (int p = 0; p < 4; ++p) h.job.p2p(pp[p], 0, 1, uint64_t(s), base, base + kMs, p == 3 ? 8 * kMs : kMs);
    h.pass(base + 90 * kMs);
  }
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSlowLink);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{6});
  EXPECT_EQ(f[0].peer->global_rank, 7);
  EXPECT_EQ(f[0].evidence["slow"][0]["kind"], "p2p");
}

}  // namespace
