// Hangs (docs/observer.md#hangs): absent rank, stuck collective, mismatch, the wait-for chain
// across communicators to the root, deadlock cycles, crashes, and "slow but progressing is not
// hung". The hang timeout of the harness is 10 s.
#include <gtest/gtest.h>

#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
using scout::obs::Finding;
using scout::obs::FindingKind;
using scout::obs::Verdict;
namespace shm = scout::shm;

// Enqueues a Recv #seq from comm rank `peer` on one rank at time t and starts it 10 us later.
FakeRec recv(FakeJob& job, int comm, int rank, uint64_t seq, int peer, int64_t t) {
  OpSpec r;
  r.kind = shm::kKindRecv;
  r.func = shm::kFuncRecv;
  r.key = seq;
  r.peer = peer;
  r.enqueue_ns = t;
  FakeRec rec = job.enqueue(comm, rank, r);
  FakeJob::start(rec, t + 10'000);
  return rec;
}

// Two communicators x (0x10) and y (0x20) of ranks {0, 1}, entered in crossed order: rank 0 runs
// x#0 then y#0, rank 1 y#0 then x#0, on one stream each (the second never starts): a deadlock.
void crossed_order(ObserverHarness& h) {
  int x = h.job.add_comm(0x10, {0, 1}, "x");
  int y = h.job.add_comm(0x20, {0, 1}, "y");
  op(h.job, x, 0, shm::kFuncAllReduce, 0, kT0);
  op(h.job, y, 0, shm::kFuncAllReduce, 0, kT0 + kMs, false);
  op(h.job, y, 1, shm::kFuncAllReduce, 0, kT0);
  op(h.job, x, 1, shm::kFuncAllReduce, 0, kT0 + kMs, false);
}

TEST(Hang, AbsentRankIsNamedAfterTheTimeoutAndClosesWhenItJoins) {
  ObserverHarness h(4);
  h.opt.hang.stall = false;  // the hang alone (its stall at the cold threshold: stall_test.cc)
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(h.job, dp, 5);
  int64_t t = kT0 + 100 * kMs;
  std::vector<FakeRec> w;
  for (int r = 0; r < 3; ++r) w.push_back(op(h.job, dp, r, shm::kFuncAllReduce, 5, t));
  h.pass(kT0 + 5 * kSec);
  EXPECT_TRUE(h.findings().empty());  // waiting, but not for longer than the timeout
  h.pass(t + 10 * kSec + kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kHang);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_TRUE(f[0].open);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
  EXPECT_EQ(f[0].suspects[0].comm_rank, 3);
  EXPECT_EQ(f[0].comm_hash, 0xd1u);
  EXPECT_EQ(f[0].key->func, "AllReduce");
  EXPECT_EQ(f[0].key->seq, 5u);
  EXPECT_EQ(f[0].evidence["class"], "absent");
  EXPECT_EQ(f[0].evidence["root"][0]["reason"], "idle");
  EXPECT_EQ(f[0].evidence["waiting_ranks"], (nlohmann::json{0, 1, 2}));
  EXPECT_EQ(f[0].evidence["chain"].size(), 3u);
  EXPECT_EQ(f[0].summary,
            "rank 3 (node0, pid 3000003) never entered AllReduce #5 of dp (0x00000000000000d1); 3 ranks wait for it");
  auto comms = h.sink.comms();
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].state, "hung");

  // Rank 3 finally joins and everyone completes: the hang closes.
  FakeRec late = op(h.job, dp, 3, shm::kFuncAllReduce, 5, t + 11 * kSec);
  for (auto& r : w) FakeJob::complete(r, t + 11 * kSec + kMs);
  FakeJob::complete(late, t + 11 * kSec + kMs);
  h.pass(t + 12 * kSec);
  f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);
  EXPECT_EQ(h.sink.comms()[0].state, "active");
}

TEST(Hang, SlowButProgressingIsNotHung) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  // Each AllReduce takes 6 s (more than half the timeout); 8 of them back to back: 48 s of a
  // communicator that always has ranks waiting inside a collective.
  std::vector<FakeRec> cur;
  for (int s = 0; s < 8; ++s) {
    int64_t t = kT0 + s * 6 * kSec;
    for (auto& r : cur) FakeJob::complete(r, t);
    cur.clear();
    for (int r = 0; r < 2; ++r) cur.push_back(op(h.job, tp, r, shm::kFuncAllReduce, uint64_t(s), t));
    for (int64_t p = 0; p < 6; ++p) h.pass(t + p * kSec + 500 * kMs);
  }
  EXPECT_TRUE(h.findings().empty());
  EXPECT_EQ(h.sink.comms()[0].state, "stalled");  // 5.5 s into a 6 s operation: slow, not hung
}

TEST(Hang, StuckCollectiveIsInconclusive) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(h.job, dp, 2);
  for (int r = 0; r < 4; ++r) op(h.job, dp, r, shm::kFuncAllReduce, 2, kT0 + kSec);
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kHang);
  EXPECT_EQ(f[0].verdict, Verdict::kInconclusive);
  EXPECT_TRUE(f[0].suspects.empty());
  EXPECT_EQ(f[0].key->seq, 2u);
  EXPECT_EQ(f[0].evidence["class"], "stuck");
  EXPECT_EQ(f[0].evidence["root"][0]["reason"], "stuck");
  EXPECT_EQ(f[0].evidence["waiting_ranks"], (nlohmann::json{0, 1, 2, 3}));
}

// At position 3 of dp rank 3 called AllGather where 3 ranks called AllReduce: the sequence check
// names it (docs/findings.md, "desync"), and the hang of the mismatch is its `hang` evidence.
TEST(Hang, RanksInDifferentCollectivesAreADesync) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(h.job, dp, 3);
  for (int r = 0; r < 3; ++r) op(h.job, dp, r, shm::kFuncAllReduce, 3, kT0 + kSec);
  op(h.job, dp, 3, shm::kFuncAllGather, 0, kT0 + kSec);  // rank 3 called AllGather instead
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
  EXPECT_EQ(f[0].key->func, "AllReduce");
  EXPECT_EQ(f[0].key->seq, 3u);
  EXPECT_EQ(f[0].evidence["source"], "sequence");
  EXPECT_EQ(f[0].evidence["position"], 3);
  EXPECT_EQ(f[0].evidence["hang"]["class"], "mismatch");
  EXPECT_EQ(f[0].evidence["sequence_votes"][0]["value"]["func"], "AllReduce");
  EXPECT_EQ(f[0].evidence["sequence_votes"][0]["ranks"], (nlohmann::json{0, 1, 2}));
  EXPECT_EQ(f[0].evidence["sequence_votes"][1]["value"]["func"], "AllGather");
  EXPECT_EQ(f[0].evidence["sequence_votes"][1]["ranks"], (nlohmann::json{3}));
}

TEST(Hang, TwoRanksInDifferentCollectivesAreInconclusive) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  op(h.job, tp, 0, shm::kFuncAllReduce, 0, kT0);
  op(h.job, tp, 1, shm::kFuncBroadcast, 0, kT0);
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(f[0].verdict, Verdict::kInconclusive);
  EXPECT_TRUE(f[0].suspects.empty());
}

TEST(Hang, WaitForChainAcrossThreeCommunicatorsEndsAtTheRoot) {
  ObserverHarness h(4);
  int a = h.job.add_comm(0xa, {0, 1}, "a");
  int b = h.job.add_comm(0xb, {1, 2}, "b");
  int c = h.job.add_comm(0xc, {2, 3}, "c");
  // Rank 3 stopped issuing. Rank 2 waits for it in c; rank 1 waits for rank 2 in b (rank 2 never
  // got there); rank 0 waits for rank 1 in a.
  op(h.job, c, 0, shm::kFuncAllReduce, 0, kT0);            // comm rank 0 of c = rank 2
  op(h.job, b, 0, shm::kFuncAllReduce, 0, kT0 + kMs);      // comm rank 0 of b = rank 1
  op(h.job, a, 0, shm::kFuncAllReduce, 0, kT0 + 2 * kMs);  // comm rank 0 of a = rank 0
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kHang);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
  EXPECT_EQ(f[0].comm_hash, 0xcu);
  EXPECT_EQ(f[0].evidence["waiting_ranks"], (nlohmann::json{0, 1, 2}));
  const auto& chain = f[0].evidence["chain"];
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0]["rank"], 2);
  EXPECT_EQ(chain[0]["waits_for"], 3);
  EXPECT_EQ(chain[0]["comm"]["name"], "c");
  EXPECT_EQ(chain[1]["rank"], 1);
  EXPECT_EQ(chain[1]["waits_for"], 2);
  EXPECT_EQ(chain[1]["comm"]["name"], "b");
  EXPECT_EQ(chain[2]["rank"], 0);
  EXPECT_EQ(chain[2]["waits_for"], 1);
  EXPECT_EQ(chain[2]["why"], "absent");
  EXPECT_EQ(f[0].evidence["comms"].size(), 3u);
  EXPECT_NE(f[0].summary.find("3 ranks wait (through 3 communicators) for it"), std::string::npos) << f[0].summary;
}

TEST(Hang, ChainThroughARankWhoseGpuIsBusyElsewhere) {
  ObserverHarness h(3);
  int x = h.job.add_comm(0x10, {0, 1}, "x");
  int y = h.job.add_comm(0x20, {1, 2}, "y");
  // Rank 1 enqueued x#0 but its GPU is inside y#0, where it waits for rank 2 (absent).
  op(h.job, x, 0, shm::kFuncAllReduce, 0, kT0);
  op(h.job, y, 0, shm::kFuncAllReduce, 0, kT0);
  op(h.job, x, 1, shm::kFuncAllReduce, 0, kT0 + kMs, /*started=*/false);
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].comm_hash, 0x20u);
  EXPECT_EQ(f[0].evidence["waiting_ranks"], (nlohmann::json{0, 1}));
  EXPECT_EQ(f[0].evidence["chain"][1]["why"], "not-started");
}

TEST(Hang, CycleAcrossTwoCommunicatorsIsADeadlock) {
  ObserverHarness h(2);
  crossed_order(h);
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDeadlock);
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{0, 1}));
  EXPECT_EQ(f[0].evidence["cycle"].size(), 2u);
  EXPECT_EQ(f[0].evidence["cycle"][0]["why"], "not-started");
}

// At the default hang timeout (60 s) a cycle is named at the communicators' stall threshold
// (10 s while they have no progress history), not a minute later.
TEST(Hang, DeadlockIsNamedAtTheStallThresholdBeforeTheTimeout) {
  ObserverHarness h(2);
  h.opt.hang.timeout_ns = 60 * kSec;
  crossed_order(h);
  h.pass(kT0 + 9 * kSec);
  EXPECT_TRUE(h.findings().empty());  // below the 10 s threshold
  h.pass(kT0 + 11 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDeadlock);
  EXPECT_EQ(suspect_ranks(f[0]), (std::vector<int>{0, 1}));
}

// A root that made its API call (the communicator's last_api_ns moved past every record it
// enqueued) but never enqueued the operation is inside the NCCL call: reason "in-call", alive.
TEST(Hang, RootStuckInsideTheApiCallIsInCall) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(h.job, dp, 5);
  int64_t t = kT0 + 100 * kMs;
  for (int r = 0; r < 3; ++r) op(h.job, dp, r, shm::kFuncAllReduce, 5, t);
  h.job.ring(dp, 3)->header()->last_api_ns.store(t + kMs);
  h.pass(t + 10 * kSec + kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kHang);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
  EXPECT_EQ(f[0].evidence["root"][0]["reason"], "in-call");
  EXPECT_EQ(f[0].evidence["root"][0]["process"], "running");
}

TEST(Hang, DeadRankThatPeersWaitForIsACrashBeforeTheTimeout) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(h.job, dp, 5);
  int64_t t = kT0 + kSec;
  for (int r = 0; r < 3; ++r) op(h.job, dp, r, shm::kFuncAllReduce, 5, t);
  h.job.kill(3);  // died without finalizing
  h.pass(t + 100 * kMs);
  EXPECT_TRUE(h.findings().empty());  // within the crash grace
  h.pass(t + 1200 * kMs);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kCrash);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
  EXPECT_EQ(f[0].key->seq, 5u);
  EXPECT_EQ(f[0].evidence["waiting_ranks"], (nlohmann::json{0, 1, 2}));
  EXPECT_EQ(f[0].evidence["finalized"], false);
  // Past the hang timeout it is still one crash finding, not a crash plus a hang.
  h.pass(t + 30 * kSec);
  f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kCrash);
  bool dead = false;
  for (const auto& r : h.sink.ranks()) dead |= r.global_rank == 3 && r.state == "dead";
  EXPECT_TRUE(dead);
}

TEST(Hang, RankThatDiesInsideTheCollectiveIsACrash) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(h.job, dp, 2);
  for (int r = 0; r < 4; ++r) op(h.job, dp, r, shm::kFuncAllReduce, 2, kT0 + kSec);  // all started
  h.job.kill(1);
  h.pass(kT0 + 2 * kSec);
  h.pass(kT0 + 4 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kCrash);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{1});
  EXPECT_EQ(f[0].evidence["open_ops"][0]["state"], "running");
  EXPECT_EQ(f[0].evidence["chain"][0]["why"], "dead");
  h.pass(kT0 + 30 * kSec);  // not also a stuck hang
  EXPECT_EQ(h.findings().size(), 1u);
}

TEST(Hang, ObserverStartedAfterACrashDecidesAtOnce) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  op(h.job, tp, 0, shm::kFuncAllReduce, 0, kT0);
  h.job.header(1)->last_event_ns.store(kT0, std::memory_order_relaxed);
  h.job.kill(1);
  h.pass(kT0 + 3 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kCrash);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{1});
}

TEST(Hang, ExitWithNobodyWaitingIsNoFinding) {
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(h.job, dp, 5);
  h.job.kill(2);                      // exited without destroying communicators
  h.job.kill(3, /*finalized=*/true);  // clean exit
  h.pass(kT0 + 30 * kSec);
  EXPECT_TRUE(h.findings().empty());
  std::map<int, std::string> state;
  for (const auto& r : h.sink.ranks()) state[r.global_rank] = r.state;
  EXPECT_EQ(state[1], "running");
  EXPECT_EQ(state[2], "dead");
  EXPECT_EQ(state[3], "exited");
}

TEST(Hang, RootThatDiesAfterTheHangWasReportedStaysOneHangFinding) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  op(h.job, tp, 0, shm::kFuncAllReduce, 0, kT0);
  h.pass(kT0 + 11 * kSec);
  ASSERT_EQ(h.findings().size(), 1u);
  EXPECT_EQ(h.findings()[0].kind, FindingKind::kHang);
  h.job.kill(1);  // the launcher kills the stopped rank
  h.pass(kT0 + 15 * kSec);
  h.pass(kT0 + 17 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kHang);
  EXPECT_TRUE(f[0].open);
  EXPECT_NE(f[0].summary.find("(the process has since exited)"), std::string::npos) << f[0].summary;
}

// The root is missing from two operations; the hang was named under the one whose wait appeared
// first, the other's wait (enqueued earlier, seen later) appears after. The launcher then kills
// the root: it stays the one hang finding, not a crash in the other operation as well.
TEST(Hang, RootKilledAfterItsHangUnderAnotherOperationIsNoCrash) {
  ObserverHarness h(4);
  h.opt.hang.stall = false;
  int tp = h.job.add_comm(0x71, {2, 3}, "tp1");
  int pp = h.job.add_comm(0x93, {3, 1}, "pp3");
  recv(h.job, pp, 1, 0, 0, kT0 + 50 * kMs);
  h.pass(kT0 + 11 * kSec);
  ASSERT_EQ(h.findings().size(), 1u);
  EXPECT_EQ(h.findings()[0].comm_hash, 0x93u);
  op(h.job, tp, 0, shm::kFuncAllReduce, 0, kT0 + 10 * kMs);
  h.pass(kT0 + 12 * kSec);
  h.job.kill(3);
  h.pass(kT0 + 14 * kSec);
  h.pass(kT0 + 16 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u) << f.back().summary;
  EXPECT_EQ(f[0].kind, FindingKind::kHang);
  EXPECT_EQ(f[0].comm_hash, 0x93u);
  EXPECT_TRUE(f[0].open);
}

TEST(Hang, JobKilledWhileHungLeavesTheHangOpen) {
  // The launcher kills every rank of a hung job (a timeout, scancel): nobody waits any more, but
  // nothing completed either. The hang is not over; it stays open and names its root.
  ObserverHarness h(4);
  int dp = h.job.add_comm(0xd1, {0, 1, 2, 3}, "dp");
  history(h.job, dp, 5);
  const int64_t t = kT0 + kSec;
  for (int r = 0; r < 3; ++r) op(h.job, dp, r, shm::kFuncAllReduce, 5, t);
  h.pass(t + 11 * kSec);
  ASSERT_EQ(h.findings().size(), 1u);
  ASSERT_TRUE(h.findings()[0].open);
  for (int r = 0; r < 4; ++r) h.job.kill(r);
  h.pass(t + 13 * kSec);
  h.pass(t + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kHang);
  EXPECT_TRUE(f[0].open);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
  EXPECT_EQ(h.sink.comms()[0].state, "hung");  // not "active": nothing progressed
  // The root is dead now, and the finding says so: never shown running.
  EXPECT_EQ(f[0].evidence["root"][0]["process"], "dead");
  EXPECT_EQ(f[0].summary,
            "rank 3 (node0, pid 3000003) never entered AllReduce #5 of dp (0x00000000000000d1); 3 ranks wait for it (the "
            "process has since exited)");
}

TEST(Hang, TwoIndependentHangsAreTwoFindings) {
  ObserverHarness h(4);
  int a = h.job.add_comm(0xa, {0, 1}, "a");
  int b = h.job.add_comm(0xb, {2, 3}, "b");
  op(h.job, a, 0, shm::kFuncAllReduce, 0, kT0);
  op(h.job, b, 1, shm::kFuncAllGather, 0, kT0);
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{1});
  EXPECT_EQ(suspect_ranks(f[1]), std::vector<int>{2});
}

// The operation a hang names is the first its root never entered in its own program order, not
// the one its peers happened to reach first (docs/observer.md, "One key per stopped rank"). Rank 3
// runs a step of: pipeline Send to rank 1 (pp), then two tp AllReduces with rank 2. It stops
// before the Send of step 5. Its tp peer gets to AllReduce #10 40 ms before its pp peer posts the
// receive: the earliest wait is in tp, but rank 3's history says the pp Send comes first.
TEST(Hang, RootIsNamedByTheFirstOperationItNeverEnteredInProgramOrder) {
  for (const bool tp_first : {true, false}) {
    ObserverHarness h(4);
    h.opt.hang.stall = false;
    int tp = h.job.add_comm(0x71, {2, 3}, "tp1");
    int pp = h.job.add_comm(0x93, {3, 1}, "pp3");
    const int64_t step = 100 * kMs;
    for (int s = 0; s < 5; ++s) {
      const int64_t t = kT0 + s * step;
      h.job.p2p(pp, 0, 1, uint64_t(s), t, t + kMs, kMs);
      for (int k = 0; k < 2; ++k) {
        FakeColl c;
        c.seq = uint64_t(2 * s + k);
        c.t0 = t + (10 + 10 * k) * kMs;
        h.job.collective(tp, c);
      }
    }
    const int64_t t5 = kT0 + 5 * step;
    // The peers' waits, in either order of arrival.
    const int64_t t_tp = t5 + (tp_first ? 10 : 50) * kMs, t_pp = t5 + (tp_first ? 50 : 10) * kMs;
    op(h.job, tp, 0, shm::kFuncAllReduce, 10, t_tp);
    recv(h.job, pp, 1, 5, 0, t_pp);
    h.pass(t5 + 20 * kSec);
    auto f = h.findings();
    ASSERT_EQ(f.size(), 1u) << tp_first;
    EXPECT_EQ(f[0].kind, FindingKind::kHang);
    EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{3});
    EXPECT_EQ(f[0].comm_hash, 0x93u) << f[0].summary;
    EXPECT_EQ(f[0].key->func, "Send");
    EXPECT_EQ(f[0].key->seq, 5u);
    EXPECT_EQ(f[0].summary,
              "rank 3 (node0, pid 3000003) never entered Send 0->1 #5 of pp3 (0x0000000000000093); 2 ranks wait "
              "(through 2 communicators) for it");
  }
}

// Without history to go by (it stops in its first step), the operation its peers reached first.
TEST(Hang, RootWithoutHistoryIsNamedByTheOperationItsPeersReachedFirst) {
  ObserverHarness h(4);
  h.opt.hang.stall = false;
  int tp = h.job.add_comm(0x71, {2, 3}, "tp1");
  int pp = h.job.add_comm(0x93, {3, 1}, "pp3");
  op(h.job, tp, 0, shm::kFuncAllReduce, 0, kT0 + 10 * kMs);
  recv(h.job, pp, 1, 0, 0, kT0 + 50 * kMs);
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].comm_hash, 0x71u) << f[0].summary;
  EXPECT_EQ(f[0].key->func, "AllReduce");
  EXPECT_EQ(f[0].key->seq, 0u);
}

TEST(Hang, PointToPointReceiverThatNeverPostsIsTheRoot) {
  ObserverHarness h(2);
  int pp = h.job.add_comm(0x99, {0, 1}, "pp");
  OpSpec s;
  s.kind = shm::kKindSend;
  s.func = shm::kFuncSend;
  s.key = 4;
  s.peer = 1;
  s.enqueue_ns = kT0;
  FakeJob::start(h.job.enqueue(pp, 0, s), kT0 + 10);
  h.pass(kT0 + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kHang);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{1});
  EXPECT_EQ(f[0].key->func, "Recv");  // the receive it never posted
  EXPECT_EQ(f[0].key->seq, 4u);
}

}  // namespace
