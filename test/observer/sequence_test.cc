// Sequence check (docs/observer.md, "Sequence"; docs/findings.md, "desync"): what each rank called
// at each position of a communicator's collective sequence, the class vote of a one-against-one,
// the frozen point of a deadlock, lost records, and the symptoms folded into the desync.
#include <gtest/gtest.h>

#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
using scout::obs::FindingKind;
using scout::obs::Verdict;
namespace shm = scout::shm;

// Enqueues an operation on one rank; completes it with receive fingerprint `fp` when fp != 0,
// else starts it (it stays running).
FakeRec op(FakeJob& job, int comm, int rank, uint8_t func, uint64_t seq, uint64_t count, int64_t t, uint64_t fp = 0,
           int32_t root = -1) {
  OpSpec s;
  s.func = func;
  s.key = seq;
  s.count = count;
  s.peer = root;
  s.enqueue_ns = t;
  FakeRec r = job.enqueue(comm, rank, s);
  FakeJob::start(r, t + 10'000);
  if (fp != 0) {
    FakeJob::fp_recv(r, fp);
    FakeJob::complete(r, t + 100'000);
  }
  return r;
}

nlohmann::json value(const char* func, uint64_t count, int root = -1) {
  return {{"func", func}, {"datatype", "float32"}, {"count", count}, {"root", root}};
}

// Position 3 of a 3-rank communicator: ranks 0 and 1 call AllReduce #3, rank 2 calls AllGather #0.
// Two of three is a strict majority: rank 2 is named. Its later records pair by key with other
// calls (its AllReduce #3 is at position 4): their fingerprints differ, but that follows from the
// desync and is not a finding of its own.
TEST(Sequence, AnotherCollectiveAtAPositionNamesTheMinority) {
  ObserverHarness h(3);
  int dp = h.job.add_comm(0xd1, {0, 1, 2}, "dp");
  history(h.job, dp, 3);
  const int64_t t = kT0 + kSec;
  op(h.job, dp, 0, shm::kFuncAllReduce, 3, 1024, t, 0xa);
  op(h.job, dp, 1, shm::kFuncAllReduce, 3, 1024, t, 0xa);
  op(h.job, dp, 2, shm::kFuncAllGather, 0, 512, t, 0xb);
  op(h.job, dp, 0, shm::kFuncAllGather, 0, 512, t + kMs, 0xc);
  op(h.job, dp, 1, shm::kFuncAllGather, 0, 512, t + kMs, 0xc);
  op(h.job, dp, 2, shm::kFuncAllReduce, 3, 1024, t + kMs, 0xd);
  h.pass(t + 2 * kSec);
  h.pass(t + 3 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].suspects[0].comm_rank, 2);
  EXPECT_EQ(f[0].key->func, "AllReduce");
  EXPECT_EQ(f[0].key->seq, 3u);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["source"], "sequence");
  EXPECT_EQ(ev["position"], 3);
  EXPECT_EQ(ev["fields"], "api");
  EXPECT_EQ(ev["op"], (nlohmann::json{{"func", "AllReduce"}, {"seq", 3}}));
  ASSERT_EQ(ev["sequence_votes"].size(), 2u);
  EXPECT_EQ(ev["sequence_votes"][0]["value"], value("AllReduce", 1024));
  EXPECT_EQ(ev["sequence_votes"][0]["ranks"], (nlohmann::json{0, 1}));
  EXPECT_EQ(ev["sequence_votes"][0]["comm_ranks"], (nlohmann::json{0, 1}));
  EXPECT_EQ(ev["sequence_votes"][1]["value"], value("AllGather", 512));
  EXPECT_EQ(ev["sequence_votes"][1]["ranks"], (nlohmann::json{2}));
  ASSERT_EQ(ev["agreed"].size(), 3u);
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(ev["agreed"][p]["position"], p);
    EXPECT_EQ(ev["agreed"][p]["value"], value("AllReduce", 1024));
  }
  EXPECT_FALSE(ev.contains("hang"));
}

// Four TP pairs; in tp2 comm rank 1 (global rank 5) calls AllGather at position 2 where comm rank 0
// calls AllReduce #2: one against one. The three other pairs, which agreed with tp2 at positions
// 0 and 1, called AllReduce there: 7 of the 8 ranks of the class, so rank 5 is named.
TEST(Sequence, OneAgainstOneIsDecidedByTheEquivalentPairs) {
  ObserverHarness h(8);
  std::vector<int> tp;
  for (int g = 0; g < 4; ++g) tp.push_back(h.job.add_comm(0x70 + g, {2 * g, 2 * g + 1}, "tp" + std::to_string(g)));
  for (int g = 0; g < 4; ++g) history(h.job, tp[g], 2);
  const int64_t t = kT0 + kSec;
  for (int g = 0; g < 4; ++g) {
    op(h.job, tp[g], 0, shm::kFuncAllReduce, 2, 1024, t, 0xa);
    if (g == 2) {
      op(h.job, tp[g], 1, shm::kFuncAllGather, 0, 512, t, 0xb);
    } else {
      op(h.job, tp[g], 1, shm::kFuncAllReduce, 2, 1024, t, 0xa);
    }
  }
  h.pass(t + kSec);
  h.pass(t + 2 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{5});
  EXPECT_EQ(f[0].comm_name, "tp2");
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["source"], "sequence");
  EXPECT_EQ(ev["position"], 2);
  EXPECT_EQ(ev["sequence_votes"][0]["value"], value("AllReduce", 1024));
  EXPECT_EQ(ev["sequence_votes"][0]["ranks"], (nlohmann::json{4}));
  EXPECT_EQ(ev["sequence_votes"][1]["value"], value("AllGather", 512));
  EXPECT_EQ(ev["sequence_votes"][1]["ranks"], (nlohmann::json{5}));
  EXPECT_EQ(ev["class"]["class"], "tp/2/1");
  EXPECT_EQ(ev["class"]["electorate"], 8);
  EXPECT_EQ(ev["class"]["majority_ranks"], 7);
  EXPECT_EQ(ev["class"]["peers"].size(), 3u);
}

// The same datatype/count disagreement at a position where every rank is at the same key is the
// metadata check's desync (source "metadata"), not a second one.
TEST(Sequence, ArgumentsDifferingAtTheSameKeyAreLeftToTheMetadataCheck) {
  ObserverHarness h(3);
  int dp = h.job.add_comm(0xd1, {0, 1, 2}, "dp");
  history(h.job, dp, 2);
  const int64_t t = kT0 + kSec;
  op(h.job, dp, 0, shm::kFuncAllReduce, 2, 1024, t, 0xa);
  op(h.job, dp, 1, shm::kFuncAllReduce, 2, 1024, t, 0xa);
  op(h.job, dp, 2, shm::kFuncAllReduce, 2, 512, t, 0xa);
  h.pass(t + kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].evidence["source"], "metadata");
}

// Rank 2's ring (16 slots) wraps before the observer reads it: it wrote 19 records since the last
// pass, so 3 are lost. Its calls alternate AllReduce and AllGather, so counting the records read
// as positions would put its AllGathers against the others' AllReduces. Its position is unknown
// instead (only the functions it has called since have a known count): it does not vote, and
// nothing is reported.
TEST(Sequence, LostRecordsStopTheRankWithoutAFinding) {
  ObserverHarness h(3, 16);
  int dp = h.job.add_comm(0xd1, {0, 1, 2}, "dp");
  auto step = [&](int rank, int i) {
    // Position i: AllReduce #i/2 (even) or AllGather #i/2 (odd).
    const bool ar = i % 2 == 0;
    op(h.job, dp, rank, ar ? shm::kFuncAllReduce : shm::kFuncAllGather, uint64_t(i / 2), ar ? 1024 : 512,
       kT0 + i * kMs, 0xa + uint64_t(ar));
  };
  for (int i = 0; i < 4; ++i) {
    for (int r = 0; r < 3; ++r) step(r, i);
  }
  h.pass(kT0 + kSec);
  for (int i = 4; i < 23; ++i) step(2, i);  // rank 2 runs ahead: 19 records, 3 overwritten unread
  for (int i = 4; i < 23; ++i) {
    for (int r = 0; r < 2; ++r) step(r, i);
    if (i % 4 == 0) h.pass(kT0 + kSec + i * kMs);
  }
  h.pass(kT0 + 2 * kSec);
  h.pass(kT0 + 3 * kSec);
  EXPECT_TRUE(h.findings().empty());
  const auto& c = h.observer->model().comms().begin()->second;
  EXPECT_EQ(c.ranks[2].seq_gaps, 1u);
  EXPECT_FALSE(c.ranks[2].seq_synced());
  EXPECT_EQ(c.ranks[0].seq_gaps, 0u);
  EXPECT_TRUE(c.ranks[0].seq_synced());
  EXPECT_EQ(c.ranks[0].seq_next_pos(), 23u);
}

// Rank 2 ran ahead: it waits in world Broadcast #1 (world position 1) for ranks 0 and 1, which
// have not called it and wait for rank 2 in their pairs with it. The values never differ; at this
// frozen point 2 of the 3 ranks have not called position 1: rank 2 is named, and the deadlock is
// the desync's `hang` evidence, not a finding of its own.
TEST(Sequence, ARankThatRanAheadIntoADeadlockIsADesync) {
  ObserverHarness h(3);
  int world = h.job.add_comm(0x30, {0, 1, 2}, "world");
  int b = h.job.add_comm(0xb0, {0, 2}, "b");
  int c = h.job.add_comm(0xc0, {1, 2}, "c");
  FakeColl bc;
  bc.func = shm::kFuncBroadcast;
  bc.root = 0;
  h.job.collective(world, bc);
  history(h.job, b, 2);
  history(h.job, c, 2);
  const int64_t t = kT0 + kSec;
  op(h.job, world, 2, shm::kFuncBroadcast, 1, 1024, t, 0, 0);
  op(h.job, b, 0, shm::kFuncAllReduce, 2, 1024, t);
  op(h.job, c, 0, shm::kFuncAllReduce, 2, 1024, t);
  h.pass(t + kSec);
  EXPECT_TRUE(h.findings().empty());
  h.pass(t + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{2});
  EXPECT_EQ(f[0].comm_name, "world");
  EXPECT_EQ(f[0].key->func, "Broadcast");
  EXPECT_EQ(f[0].key->seq, 1u);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["source"], "sequence");
  EXPECT_EQ(ev["position"], 1);
  ASSERT_EQ(ev["sequence_votes"].size(), 2u);
  EXPECT_TRUE(ev["sequence_votes"][0]["value"].is_null());
  EXPECT_EQ(ev["sequence_votes"][0]["ranks"], (nlohmann::json{0, 1}));
  EXPECT_EQ(ev["sequence_votes"][1]["value"], value("Broadcast", 1024, 0));
  EXPECT_EQ(ev["sequence_votes"][1]["ranks"], (nlohmann::json{2}));
  EXPECT_EQ(ev["agreed"].size(), 1u);
  EXPECT_EQ(ev["hang"]["class"], "deadlock");
}

// A one-against-one without equivalent pairs stays inconclusive; when its pair then hangs in
// different collectives, the hang is folded into it (one finding, source "sequence").
TEST(Sequence, AHangAfterASequenceDesyncIsItsEvidence) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  history(h.job, tp, 2);
  const int64_t t = kT0 + kSec;
  op(h.job, tp, 0, shm::kFuncAllReduce, 2, 1024, t);
  op(h.job, tp, 1, shm::kFuncBroadcast, 0, 1024, t, 0, 0);
  h.pass(t + kSec);
  EXPECT_TRUE(h.findings().empty());  // waiting for a class vote
  h.pass(t + 20 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kDesync);
  EXPECT_EQ(f[0].verdict, Verdict::kInconclusive);
  EXPECT_TRUE(f[0].suspects.empty());
  EXPECT_EQ(f[0].evidence["source"], "sequence");
  EXPECT_EQ(f[0].evidence["position"], 2);
  EXPECT_EQ(f[0].evidence["hang"]["class"], "mismatch");
}

}  // namespace
