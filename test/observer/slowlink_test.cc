// Communication-slow channels (docs/observer.md#slow-links): a slow TP pair names the link, a rank
// whose every communicator is slow is the endpoint, a slow p2p pair names its link, and healthy
// channels give nothing. Over several hosts: a host whose every inter-host channel is slow is one
// endpoint naming the host (three or more hosts), a slow pair across hosts stays a link.
#include <gtest/gtest.h>

#include "observer/detect/slowlink.h"
#include "observer/model/finding_board.h"
#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
using scout::obs::FindingKind;
using scout::obs::Verdict;

// 8 ranks: TP pairs {0,1} {2,3} {4,5} {6,7}; DP groups {0,2,4,6} {1,3,5,7}; a step every
// 100 ms. With `time_rule` false a slow channel is confirmed by its operation count alone (the
// tests of the other rules); the time rule has its own tests below.
struct Job8 {
  ObserverHarness h{8};
  std::vector<int> tp, dp;
  explicit Job8(bool time_rule = false) {
    if (!time_rule) h.opt.slowlink.confirm_ns = 0;
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

// At the defaults a slow channel is confirmed only once it has stayed slow for 2 s of the job's
// time. tp1 is slow from step 0: slow at the pass after step 3 (4 samples), the run counted from
// step 0's operation (its end at +5 ms); step 20's ends at +2.005 s, so the finding opens at that
// pass (+2.09 s) and not before.
TEST(SlowLink, SlowChannelIsConfirmedAfterTwoSecondsSlow) {
  Job8 j(true);
  for (int s = 0; s < 20; ++s) j.step(s, {kMs, 5 * kMs, kMs, kMs}, {2 * kMs, 2 * kMs});
  EXPECT_TRUE(j.h.findings().empty());
  j.step(20, {kMs, 5 * kMs, kMs, kMs}, {2 * kMs, 2 * kMs});
  auto f = j.h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["class"], "link");
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].first_seen_ns, kT0 + 2090 * kMs);
}

// A burst: tp1 is 5x slower for 15 steps (1.5 s; the operation count alone confirms it within 10
// steps, SlowTensorParallelPairNamesTheLink), then normal again. Never confirmed, no finding.
TEST(SlowLink, BurstShorterThanTwoSecondsGivesNoFinding) {
  Job8 j(true);
  for (int s = 0; s < 15; ++s) j.step(s, {kMs, 5 * kMs, kMs, kMs}, {2 * kMs, 2 * kMs});
  for (int s = 15; s < 40; ++s) j.step(s, {kMs, kMs, kMs, kMs}, {2 * kMs, 2 * kMs});
  EXPECT_TRUE(j.h.findings().empty());
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
  h.opt.slowlink.confirm_ns = 0;  // the operation count alone
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

// The default configuration with a slow channel confirmed by its operation count alone.
scout::obs::SlowLinkConfig count_rule() {
  scout::obs::SlowLinkConfig c;
  c.confirm_ns = 0;
  return c;
}

// The detector alone over a Model whose processes run on `hosts` hosts of `per_host` ranks each
// (global rank g on host "node<g / per_host>"), fed completed operations with chosen durations.
struct MultiHost {
  scout::obs::Model m;
  scout::obs::SlowLinkDetector d{count_rule()};
  scout::obs::FindingBoard board;
  std::vector<int> proc;  // global rank -> process id
  int per_host;
  MultiHost(int hosts, int per) : per_host(per) {
    for (int g = 0; g < hosts * per; ++g) {
      scout::obs::Proc p;
      p.host = "node" + std::to_string(g / per);
      p.pid = 1000 + g;
      p.global_rank = g;
      proc.push_back(m.upsert_proc(p, kT0));
    }
  }
  struct C {
    scout::obs::CommKey key;
    std::vector<int> ranks;  // global ranks by comm rank
  };
  C comm(uint64_t hash, const std::vector<int>& ranks, const std::string& name) {
    std::set<int> nodes;
    for (int g : ranks) nodes.insert(g / per_host);
    C c{{hash, int(ranks.size())}, ranks};
    scout::obs::Comm& cm = m.upsert_comm(c.key, name, int(nodes.size()));
    for (size_t i = 0; i < ranks.size(); ++i) m.set_member(cm, int(i), proc[size_t(ranks[i])], kT0, false);
    return c;
  }
  // One completed operation of `c` taking `dur_ns` once every rank arrived: its AllReduce of
  // 1 MiB, or with two ranks and `p2p` a Send of 1 MiB from comm rank 0 to 1.
  void op(const C& c, uint64_t seq, int64_t t0, int64_t dur_ns, bool p2p = false) {
    scout::obs::JudgedOp op;
    op.comm = c.key;
    op.id.cls = p2p ? scout::obs::OpClass::kP2p : scout::obs::OpClass::kColl;
    op.id.func = p2p ? scout::shm::kFuncSend : scout::shm::kFuncAllReduce;
    op.id.seq = seq;
    if (p2p) {
      op.id.src = 0;
      op.id.dst = 1;
    }
    op.bytes = 1 << 20;
    op.n = int(c.ranks.size());
    op.complete = true;
    for (size_t i = 0; i < c.ranks.size(); ++i) {
      scout::obs::JudgedOp::Part part;
      part.comm_rank = int(i);
      part.proc = proc[size_t(c.ranks[i])];
      part.start_ns = t0;
      part.end_ns = t0 + dur_ns;
      op.parts.push_back(part);
    }
    d.observe(m, op);
  }
  std::vector<scout::obs::Finding> findings() const {
    std::vector<scout::obs::Finding> out;
    for (const auto* f : board.all()) out.push_back(*f);
    return out;
  }
};

// 16 ranks on 4 hosts as scout-sim lays out --ranks 16 --tp 2 --pp 2 --nodes 4: TP pairs inside a
// host, DP groups {0,2,4,6} {1,3,5,7} (node0-node1) and {8,..,14} {9,..,15} (node2-node3), pipeline
// pairs {k, k+8} (node0-node2, node1-node3). From step 10 the operations of `slow_comms`
// (indices: tp 0-7, dp 8-11, pp 12-19) take 5 ms more; each DP group runs `dp_ops` AllReduces a
// step, the others one operation; evaluated after every step.
struct Job16 : MultiHost {
  std::vector<C> comms;
  int dp_ops;
  explicit Job16(int dp_ops_per_step = 1) : MultiHost(4, 4), dp_ops(dp_ops_per_step) {
    for (int p = 0; p < 8; ++p) comms.push_back(comm(0x70 + p, {2 * p, 2 * p + 1}, "tp" + std::to_string(p)));
    for (int d = 0; d < 4; ++d) {
      const int b = (d / 2) * 8 + d % 2;
      comms.push_back(comm(0xd0 + d, {b, b + 2, b + 4, b + 6}, "dp" + std::to_string(d)));
    }
    for (int k = 0; k < 8; ++k) comms.push_back(comm(0x90 + k, {k, k + 8}, "pp" + std::to_string(k)));
  }
  void run(int from, int to, const std::set<int>& slow_comms) {
    for (int s = from; s < to; ++s) {
      const int64_t base = kT0 + int64_t(s) * 100 * kMs;
      for (size_t i = 0; i < comms.size(); ++i) {
        const int64_t extra = s >= 10 && slow_comms.count(int(i)) ? 5 * kMs : 0;
        const int n = i >= 8 && i < 12 ? dp_ops : 1;
        for (int k = 0; k < n; ++k) {
          op(comms[i], uint64_t(s * n + k), base + int64_t(i) * kMs, (i < 8 ? kMs : 2 * kMs) + extra, i >= 12);
        }
      }
      d.evaluate(m, base + 90 * kMs, board);
    }
  }
};

// Host node2 (ranks 8-11) slows all its inter-host transfers: dp2, dp3 (to node3) and the pipeline
// pairs 0-8 .. 3-11 (to node0) are slow; dp0, dp1 and the pairs 4-12 .. 7-15 (between the other
// hosts) are normal. One finding: the host, its four ranks.
TEST(SlowLinkHosts, SlowHostAmongFourIsOneEndpointNamingTheHost) {
  Job16 j;
  j.run(0, 40, {10, 11, 12, 13, 14, 15});
  auto f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSlowLink);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(f[0].dedup_key, "slowlink:host:node2");
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{8, 9, 10, 11}));
  for (const auto& s : f[0].suspects) EXPECT_EQ(s.host, "node2");
  EXPECT_FALSE(f[0].peer);
  EXPECT_EQ(f[0].comm_hash, 0u);
  EXPECT_FALSE(f[0].key);
  EXPECT_EQ(f[0].evidence["class"], "endpoint");
  EXPECT_EQ(f[0].evidence["host"], "node2");
  ASSERT_EQ(f[0].evidence["slow"].size(), 6u);
  EXPECT_EQ(f[0].evidence["slow"][0]["comm"]["name"], "dp2");
  EXPECT_EQ(f[0].evidence["slow"][0]["ranks"], nlohmann::json::array({8, 10, 12, 14}));
  EXPECT_DOUBLE_EQ(f[0].evidence["slow"][0]["median_ms"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(f[0].evidence["slow"][0]["peer_median_ms"].get<double>(), 2.0);
  EXPECT_EQ(f[0].evidence["slow"][2]["comm"]["name"], "pp0");
  EXPECT_EQ(f[0].evidence["slow"][2]["ranks"], nlohmann::json::array({0, 8}));
  ASSERT_EQ(f[0].evidence["normal"].size(), 6u);  // dp0, dp1, pp4..pp7
  EXPECT_EQ(f[0].evidence["normal"][0]["comm"]["name"], "dp0");
  EXPECT_EQ(f[0].summary,
            "host node2 (ranks 8, 9, 10, 11) is a slow endpoint: all 6 of its compared inter-host channels, to 2 "
            "other hosts, are slow, while 6 between other hosts are normal (AllReduce of 1 MiB on dp2 "
            "(0x00000000000000d2) takes 7.00 ms (median) vs 2.00 ms on 3 peer channels)");
  EXPECT_TRUE(f[0].open);
  // The host recovers: once its channels' windows hold normal transfers, the finding closes.
  j.run(40, 70, {});
  f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);
}

// The same slow host with four DP AllReduces a step: dp2 and dp3 are confirmed slow while the
// pipeline pairs' windows still hold mostly normal transfers. Their latest transfers are slow, so
// they do not clear node2: dp2 and dp3 wait, and the host is the only finding ever reported.
TEST(SlowLinkHosts, SlowHostWhoseChannelsConfirmAtDifferentPacesIsOneFinding) {
  Job16 j(4);
  bool host_before_pairs = false;
  for (int s = 0; s < 40; ++s) {
    j.run(s, s + 1, {10, 11, 12, 13, 14, 15});
    host_before_pairs |= s < 20 && !j.findings().empty();
  }
  EXPECT_FALSE(host_before_pairs);  // the pairs' windows are not slow before step 20
  auto f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dedup_key, "slowlink:host:node2");
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(f[0].evidence["slow"].size(), 6u);
  EXPECT_TRUE(f[0].open);
}

// The same slow host with four DP AllReduces a step, step by step. dp2 and dp3 look slow from
// step 10 (their last four transfers slow) and are confirmed at step 14 (12 of 16 slow at step
// 12, then 8 more operations). The pipeline pairs look slow from step 11 (two of their last four
// transfers slow: median 4.5 ms >= 2 x 2 ms) and are confirmed only at step 28 (12 of 16 slow at
// step 21, then 8 more). From step 11 node2 is suspected: held_hosts() names it and its channels
// are held, so the confirmed DP groups give no finding of their own; at step 28 the host is
// reported, and stays held while reported.
TEST(SlowLinkHosts, HostWithPendingChannelsIsSuspectedAndHeld) {
  Job16 j(4);
  std::vector<int> held_steps;
  int reported_at = -1;
  for (int s = 0; s < 40; ++s) {
    j.run(s, s + 1, {10, 11, 12, 13, 14, 15});
    if (j.d.held_hosts() == std::set<std::string>{"node2"}) held_steps.push_back(s);
    if (reported_at < 0 && !j.findings().empty()) reported_at = s;
  }
  ASSERT_FALSE(held_steps.empty());
  EXPECT_EQ(held_steps.front(), 11);
  EXPECT_EQ(held_steps.back(), 39);
  EXPECT_EQ(held_steps.size(), 29u);  // every step from 11
  EXPECT_EQ(reported_at, 28);
  auto f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dedup_key, "slowlink:host:node2");
  EXPECT_EQ(f[0].first_seen_ns, kT0 + 28 * 100 * kMs + 90 * kMs);
}

// node2's DP groups look slow but are never confirmed: from step 10 every other AllReduce of dp2
// and dp3 takes 5 ms more, so their latest four transfers' median is 4.5 ms, at least twice their
// peers' 2 ms, while their lower quartiles are not. The pipeline pairs 0-8 .. 3-11 are slow and
// confirmed at step 28, but reach node0 only. node2 is suspected from step 12 and reported at
// step 35, once each of its channels has completed confirm + window (24) operations while it was
// suspected; nothing is reported before, and nothing else.
TEST(SlowLinkHosts, HostWhoseNoisyChannelsAreNeverConfirmedIsReportedAfterAWindow) {
  Job16 j;
  int suspected_at = -1, reported_at = -1;
  for (int s = 0; s < 50; ++s) {
    const int64_t base = kT0 + int64_t(s) * 100 * kMs;
    for (size_t i = 0; i < j.comms.size(); ++i) {
      int64_t extra = 0;
      if (s >= 10 && i >= 12 && i < 16) extra = 5 * kMs;
      if (s >= 10 && (i == 10 || i == 11) && s % 2 == 0) extra = 5 * kMs;
      j.op(j.comms[i], uint64_t(s), base + int64_t(i) * kMs, (i < 8 ? kMs : 2 * kMs) + extra, i >= 12);
    }
    j.d.evaluate(j.m, base + 90 * kMs, j.board);
    if (suspected_at < 0 && j.d.held_hosts() == std::set<std::string>{"node2"}) suspected_at = s;
    if (reported_at < 0 && !j.findings().empty()) reported_at = s;
  }
  EXPECT_EQ(suspected_at, 12);
  EXPECT_EQ(reported_at, 35);
  auto f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dedup_key, "slowlink:host:node2");
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{8, 9, 10, 11}));
  ASSERT_EQ(f[0].evidence["slow"].size(), 4u);  // the confirmed pipeline pairs
  EXPECT_EQ(f[0].evidence["slow"][0]["comm"]["name"], "pp0");
  EXPECT_TRUE(f[0].open);
}

// A reported host whose fault ends at step 40: five steps later its channels are no longer slow
// (their lower quartiles are normal) while their medians are still at least twice their peers':
// undecided, none normal. The host stays open through those passes and through passes that bring
// no new operations (late passes); it closes at step 48, when the ninth normal transfer brings
// every channel's median below twice its peers' (none looks slow, all are normal).
TEST(SlowLinkHosts, HostStaysOpenThroughUndecidedPasses) {
  Job16 j;
  j.run(0, 40, {10, 11, 12, 13, 14, 15});
  ASSERT_EQ(j.findings().size(), 1u);
  j.run(40, 45, {});
  auto f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f[0].open);
  EXPECT_EQ(f[0].summary,
            "host node2 (ranks 8, 9, 10, 11) is a slow endpoint: 0 of its compared inter-host channels, to 2 other "
            "hosts, are slow and 6 undecided, none normal, while 6 between other hosts are normal (AllReduce of 1 "
            "MiB on dp2 (0x00000000000000d2) takes 7.00 ms (median) vs 2.00 ms on 3 peer channels)");
  ASSERT_EQ(f[0].evidence["slow"].size(), 6u);  // the undecided channels, none being slow
  EXPECT_EQ(f[0].evidence["slow"][0]["comm"]["name"], "dp2");
  for (int k = 1; k <= 5; ++k) j.d.evaluate(j.m, kT0 + 44 * 100 * kMs + 90 * kMs + int64_t(k) * kMs, j.board);
  f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f[0].open);
  EXPECT_EQ(j.d.held_hosts(), std::set<std::string>{"node2"});
  j.run(45, 48, {});
  ASSERT_EQ(j.findings().size(), 1u);
  EXPECT_TRUE(j.findings()[0].open);
  j.run(48, 49, {});
  f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);
  EXPECT_EQ(f[0].last_seen_ns, kT0 + 48 * 100 * kMs + 90 * kMs);
  EXPECT_TRUE(j.d.held_hosts().empty());
}

// A reported host that recovers at step 40 except for one real slow link (pipeline pair 1-9,
// pp1): the link keeps looking slow, so the host stays open, one finding (1 slow, 5 normal), and
// the link is not reported on its own. pp1 recovers at step 70; at step 78 (its ninth normal
// transfer) none of node2's channels looks slow and all are normal: the host closes, and nothing
// else is ever reported.
TEST(SlowLinkHosts, HostClosesWhenNoneLooksSlowAndOneIsNormal) {
  Job16 j;
  j.run(0, 40, {10, 11, 12, 13, 14, 15});
  j.run(40, 70, {13});
  auto f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dedup_key, "slowlink:host:node2");
  EXPECT_TRUE(f[0].open);
  EXPECT_EQ(f[0].summary,
            "host node2 (ranks 8, 9, 10, 11) is a slow endpoint: 1 of its compared inter-host channels, to 2 other "
            "hosts, are slow, 0 undecided and 5 normal, while 6 between other hosts are normal (send/recv of 1 MiB "
            "on pp1 (0x0000000000000091) takes 7.00 ms (median) vs 2.00 ms on 7 peer channels)");
  EXPECT_EQ(j.d.held_hosts(), std::set<std::string>{"node2"});
  j.run(70, 78, {});
  ASSERT_EQ(j.findings().size(), 1u);
  EXPECT_TRUE(j.findings()[0].open);
  j.run(78, 79, {});
  f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);
  EXPECT_EQ(f[0].last_seen_ns, kT0 + 78 * 100 * kMs + 90 * kMs);
  EXPECT_TRUE(j.d.held_hosts().empty());
  j.run(79, 90, {});
  EXPECT_EQ(j.findings().size(), 1u);
}

// Two hosts: every inter-host channel touches both, so a slow NIC on node1 slows all of them and
// none has a normal peer to be compared with: nothing is named, in particular no host.
TEST(SlowLinkHosts, TwoHostsNameNoHost) {
  MultiHost h(2, 4);
  std::vector<MultiHost::C> tp, dp;
  for (int p = 0; p < 4; ++p) tp.push_back(h.comm(0x70 + p, {2 * p, 2 * p + 1}, "tp" + std::to_string(p)));
  for (int d = 0; d < 4; ++d) dp.push_back(h.comm(0xd0 + d, {d, d + 4}, "dp" + std::to_string(d)));
  for (int s = 0; s < 40; ++s) {
    const int64_t base = kT0 + int64_t(s) * 100 * kMs;
    for (int p = 0; p < 4; ++p) h.op(tp[size_t(p)], uint64_t(s), base, kMs);
    for (int d = 0; d < 4; ++d) h.op(dp[size_t(d)], uint64_t(s), base + 10 * kMs, (s >= 10 ? 7 : 2) * kMs);
    h.d.evaluate(h.m, base + 90 * kMs, h.board);
  }
  EXPECT_TRUE(h.findings().empty());
}

// One slow pipeline pair across hosts (1-9, node0-node2) among four hosts: both hosts have normal
// inter-host channels, so it is the link, suspect 1 and peer 9, named as soon as it is confirmed.
TEST(SlowLinkHosts, SlowPairAcrossHostsStaysALink) {
  Job16 j;
  j.run(0, 40, {13});
  auto f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(f[0].evidence["class"], "link");
  EXPECT_FALSE(f[0].evidence.contains("host"));
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{1});
  ASSERT_TRUE(f[0].peer);
  EXPECT_EQ(f[0].peer->global_rank, 9);
  EXPECT_EQ(f[0].comm_name, "pp1");
}

}  // namespace

namespace {

// Replay's link sweep found the pair 1-9 first (its finding has no communicator and replay's
// evidence); the live detector then reports the same pair under the same key: the finding takes
// the detector's communicator, operation and channels and keeps replay's measurement as
// `evidence.replay`, through every later report (docs/findings.md, "slowlink").
TEST(SlowLinkHosts, LinkThatReplayFoundFirstKeepsReplaysMeasurement) {
  Job16 j;
  scout::obs::Finding r;
  r.kind = FindingKind::kSlowLink;
  r.verdict = Verdict::kAttributed;
  r.suspects.push_back({1, "node0", 1001, "", -1});
  r.peer = scout::obs::Suspect{9, "node2", 1009, "", -1};
  r.dedup_key = "slowlink:link:node0:1001:node2:1009";
  r.first_seen_ns = kT0;
  r.evidence = {{"class", "link"},
                {"source", "replay"},
                {"cycle", 1},
                {"recipes", {"link:1->9"}},
                {"ms", 6.1},
                {"median_ms", 0.2},
                {"thresholds", {{"min_ratio", 3.0}, {"min_ms", 2.0}}}};
  j.board.report(r);
  j.run(0, 40, {13});
  auto f = j.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dedup_key, r.dedup_key);
  EXPECT_EQ(f[0].comm_name, "pp1");
  ASSERT_TRUE(f[0].key);
  EXPECT_EQ(f[0].key->func, "Send");
  EXPECT_EQ(f[0].evidence["class"], "link");
  EXPECT_FALSE(f[0].evidence.contains("source"));
  EXPECT_EQ(f[0].evidence["replay"],
            (nlohmann::json{{"cycle", 1}, {"recipes", {"link:1->9"}}, {"ms", 6.1}, {"median_ms", 0.2}}));
  EXPECT_EQ(f[0].first_seen_ns, kT0);
}

}  // namespace
