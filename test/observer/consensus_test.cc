// Consensus (docs/observer.md#consensus): metadata agreement (desync), receive-fingerprint agreement
// (sdc), NaN/Inf origin, equivalent communicators, and the per-collective summaries, on
// synthetic multi-rank segments with exact expected findings.
#include <gtest/gtest.h>

#include "observer/detect/equiv.h"
#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
using scout::obs::Finding;
using scout::obs::FindingKind;
using scout::obs::Verdict;
namespace shm = scout::shm;

constexpr uint64_t kA = 0xaaaa000000000001ull, kB = 0xbbbb000000000002ull;

TEST(Consensus, HealthyCollectivesGiveNoFindingAndAgreeingSummaries) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  for (uint64_t s = 0; s < 10; ++s) h.job.collective(dp, allreduce_with(s, {kA + s, kA + s, kA + s, kA + s}));
  h.pass(kT0 + kSec);
  EXPECT_TRUE(h.findings().empty());
  auto ops = h.sink.ops();
  ASSERT_EQ(ops.size(), 10u);
  for (const auto& o : ops) {
    EXPECT_EQ(o.fp_verdict, "agree");
    EXPECT_EQ(o.meta_verdict, "agree");
    EXPECT_EQ(o.ranks_reported, 4);
    EXPECT_EQ(o.ranks_complete, 4);
  }
  EXPECT_EQ(h.sink.timings().size(), 40u);
  EXPECT_TRUE(h.observer->model().comms().begin()->second.ops.empty());  // judged ops dropped
}

TEST(Consensus, CorruptedReceiveOnOneOfFourIsAttributed) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  h.job.collective(dp, allreduce_with(0, {kA, kA, kA, kA}));
  h.job.collective(dp, allreduce_with(1, {kA, kA, kB, kA}));
  h.pass(kT0 + kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSdc);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].suspects[0].host, "node0");
  EXPECT_EQ(f[0].suspects[0].pid, FakeJob::kPidBase + 2);
  EXPECT_EQ(f[0].suspects[0].gpu, "GPU-2");
  EXPECT_EQ(f[0].comm_hash, 0xd1u);
  EXPECT_EQ(f[0].comm_name, "dp");
  ASSERT_TRUE(f[0].key);
  EXPECT_EQ(f[0].key->func, "AllReduce");
  EXPECT_EQ(f[0].key->seq, 1u);
  EXPECT_EQ(f[0].evidence["check"], "recv");
  EXPECT_EQ(f[0].evidence["majority"], "0xaaaa000000000001");
  EXPECT_EQ(f[0].evidence["votes"][0]["ranks"], (nlohmann::json{0, 1, 3}));
  EXPECT_EQ(f[0].evidence["votes"][1]["ranks"], (nlohmann::json{2}));
  EXPECT_EQ(f[0].evidence["partial"], false);
  auto ops = h.sink.ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[1].fp_verdict, "attributed");
}

TEST(Consensus, TwoRanksDisagreeingIsInconclusive) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  h.job.collective(tp, allreduce_with(0, {kA, kB}));
  h.pass(kT0 + kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSdc);
  EXPECT_EQ(f[0].verdict, Verdict::kInconclusive);
  EXPECT_TRUE(f[0].suspects.empty());
  EXPECT_TRUE(f[0].evidence["majority"].is_null());
}

TEST(Consensus, ReduceScatterReceivesAreNotCompared) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  FakeColl c = allreduce_with(0, {kA, kB});
  c.func = shm::kFuncReduceScatter;
  h.job.collective(tp, c);
  h.pass(kT0 + kSec);
  EXPECT_TRUE(h.findings().empty());
  ASSERT_EQ(h.sink.ops().size(), 1u);
  EXPECT_EQ(h.sink.ops()[0].fp_verdict, "n/a");
}

TEST(Consensus, CountMismatchIsAttributedDesync) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  FakeColl c = allreduce_with(7, {});
  c.counts = {1024, 1024, 1000, 1024};
  h.job.collective(dp, c);
  h.pass(kT0 + kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].key->seq, 7u);
  EXPECT_EQ(f[0].evidence["source"], "metadata");
  EXPECT_EQ(f[0].evidence["majority"]["count"], 1024);
  EXPECT_EQ(f[0].evidence["votes"][1]["value"]["count"], 1000);
  EXPECT_EQ(f[0].evidence["votes"][1]["value"]["datatype"], "float32");
  EXPECT_NE(f[0].summary.find("rank 2 (node0, pid 3000002) called it with count 1000 of float32"), std::string::npos)
      << f[0].summary;
  EXPECT_EQ(h.sink.ops()[0].meta_verdict, "attributed");
  EXPECT_EQ(h.sink.ops()[0].fp_verdict, "not-sampled");
}

TEST(Consensus, RootMismatchOfTwoRanksIsInconclusiveDesync) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  OpSpec s;
  s.func = shm::kFuncBroadcast;
  s.key = 0;
  s.enqueue_ns = kT0;
  s.peer = 0;
  auto a = h.job.enqueue(tp, 0, s);
  s.peer = 1;
  auto b = h.job.enqueue(tp, 1, s);
  for (auto* r : {&a, &b}) {
    FakeJob::start(*r, kT0 + 10);
    FakeJob::complete(*r, kT0 + 1000);
  }
  h.pass(kT0 + kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(f[0].verdict, Verdict::kInconclusive);
  EXPECT_TRUE(f[0].suspects.empty());
  EXPECT_EQ(f[0].key->func, "Broadcast");
}

TEST(Consensus, PendingFingerprintWaitsThenVotesPartially) {
  ObserverHarness h(5);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3, 4}, "dp");
  std::vector<FakeRec> recs;
  for (int r = 0; r < 5; ++r) {
    OpSpec s;
    s.key = 0;
    s.enqueue_ns = kT0;
    FakeRec rec = h.job.enqueue(dp, r, s);
    FakeJob::start(rec, kT0 + 10);
    FakeJob::complete(rec, kT0 + 1000);
    if (r == 4) {
      FakeJob::fp_pending(rec);  // never finishes
    } else {
      FakeJob::fp_recv(rec, r == 3 ? kB : kA);
    }
  }
  h.pass(kT0 + kSec);
  EXPECT_TRUE(h.findings().empty());  // still waiting for rank 4
  EXPECT_TRUE(h.sink.ops().empty());
  h.pass(kT0 + 10 * kSec);  // past the 5 s settle timeout
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);  // 3 of 5 agree: a strict majority of the comm
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
  EXPECT_EQ(f[0].evidence["partial"], true);
  EXPECT_EQ(f[0].evidence["voters"], 4);
}

TEST(Consensus, PartialVotesCannotOutvoteMissingRanks) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  for (int r = 0; r < 4; ++r) {
    OpSpec s;
    s.enqueue_ns = kT0;
    FakeRec rec = h.job.enqueue(dp, r, s);
    FakeJob::start(rec, kT0 + 10);
    FakeJob::complete(rec, kT0 + 1000);
    if (r < 3) FakeJob::fp_recv(rec, r == 2 ? kB : kA);  // rank 3 not fingerprinted
  }
  h.pass(kT0 + kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].verdict, Verdict::kInconclusive);  // 2 of 4 is no strict majority
  EXPECT_TRUE(f[0].suspects.empty());
}

TEST(Consensus, NanOriginNamesTheFirstCarrierEvenWhenJudgedLate) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  FakeColl c0 = allreduce_with(0, {});
  c0.send_nan = {0, 0, 0, 0};
  h.job.collective(dp, c0);
  // Op 2 (everyone carries NaN after it spread) is written and judged before op 1.
  FakeColl c2 = allreduce_with(2, {});
  c2.send_nan = {4, 4, 4, 4};
  h.job.collective(dp, c2);
  h.pass(kT0 + kSec);
  auto f = h.findings(FindingKind::kNan);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{0, 1, 2, 3}));
  FakeColl c1 = allreduce_with(1, {});
  c1.send_nan = {0, 0, 3, 0};
  h.job.collective(dp, c1);
  h.pass(kT0 + 2 * kSec);
  f = h.findings(FindingKind::kNan);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].key->seq, 1u);
  EXPECT_EQ(f[0].evidence["origin"]["carriers"][0]["send_nan"], 3);
  EXPECT_EQ(f[0].evidence["ops_with_nonfinite"], 2);
  EXPECT_EQ(f[0].evidence["origin"]["time_ns"], kT0 + 10 * kMs);
}

TEST(Consensus, EquivalentReplicaWithDifferentAllGatherIsAttributed) {
  ObserverHarness h(6);
  std::string err;
  ASSERT_TRUE(scout::obs::parse_equiv("recv: shard0, shard1 0xa3", ';', &h.opt.equiv, &err)) << err;
  int c0 = h.job.add_comm(0xa1, {0, 1}, "shard0");
  int c1 = h.job.add_comm(0xa2, {2, 3}, "shard1");
  int c2 = h.job.add_comm(0xa3, {4, 5}, "shard2");
  for (int c : {c0, c1, c2}) {
    FakeColl g = allreduce_with(0, {});
    g.func = shm::kFuncAllGather;
    uint64_t v = c == c2 ? kB : kA;
    g.fp_recv = {v, v};  // each replica agrees internally
    h.job.collective(c, g);
  }
  h.pass(kT0 + kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSdc);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{4, 5}));
  EXPECT_EQ(f[0].comm_hash, 0xa3u);
  EXPECT_EQ(f[0].evidence["check"], "recv-equiv");
  EXPECT_EQ(f[0].evidence["disagreements"].size(), 2u);
  EXPECT_EQ(f[0].key->func, "AllGather");
}

TEST(Consensus, EquivDeclarationsParseAndRejectMistakes) {
  std::vector<scout::obs::EquivGroup> g;
  std::string err;
  ASSERT_TRUE(scout::obs::parse_equiv("# replicas\nsend: a b\n\nboth: 0x1f,0x2f c  # x\n", '\n', &g, &err)) << err;
  ASSERT_EQ(g.size(), 2u);
  EXPECT_TRUE(g[0].send);
  EXPECT_FALSE(g[0].recv);
  EXPECT_EQ(g[1].members, (std::vector<std::string>{"0x1f", "0x2f", "c"}));
  EXPECT_FALSE(scout::obs::parse_equiv("recv: onlyone", ';', &g, &err));
  EXPECT_EQ(err, "equivalence group 'recv: onlyone' needs at least two members");
  EXPECT_FALSE(scout::obs::parse_equiv("maybe: a b", ';', &g, &err));
  EXPECT_FALSE(scout::obs::parse_equiv("a 0xzz", ';', &g, &err));
}

TEST(Consensus, SummaryHasArrivalsDurationAndBusBandwidth) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  FakeColl c = allreduce_with(0, {kA, kA, kA, kA});
  c.count = 1'000'000;  // 4 MB of float32
  c.start = {kT0 + 10'000, kT0 + 30'000, kT0 + 20'000, kT0 + 10'000};
  c.duration_ns = kMs;
  h.job.collective(dp, c);
  h.pass(kT0 + kSec);
  auto ops = h.sink.ops();
  ASSERT_EQ(ops.size(), 1u);
  const auto& o = ops[0];
  EXPECT_EQ(o.func, "AllReduce");
  EXPECT_EQ(o.datatype, "float32");
  EXPECT_EQ(o.bytes, 4'000'000u);
  EXPECT_EQ(o.first_arrival_ns, kT0 + 10'000);
  EXPECT_EQ(o.last_arrival_ns, kT0 + 30'000);
  EXPECT_EQ(o.last_rank, 1);
  EXPECT_EQ(o.duration_ns, kMs);
  // algbw = 4e6 B / 1 ms = 4 GB/s; busbw = 4 * 2 * 3 / 4 = 6 GB/s.
  EXPECT_DOUBLE_EQ(o.busbw_gbps, 6.0);
  EXPECT_EQ(o.algo, "RING");
  EXPECT_EQ(o.proto, "SIMPLE");
}

}  // namespace
