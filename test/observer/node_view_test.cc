// The node-local core as the observer network reads it (NodeView, net::LocalView over the
// Model): streams of communicators with ranks on other nodes, per-rank records of an operation
// kept after the Model dropped them, "completed" held back by a record still being written,
// identities, the wait snapshot of a hang drill-down, and that local-only communicators never
// appear.
#include "observer/cluster/node_view.h"

#include <gtest/gtest.h>

#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
namespace obs = scout::obs;
namespace shm = scout::shm;

TEST(NodeView, StreamsAreCrossNodeCommunicatorsWithLocalProgress) {
  ObserverHarness h(4);
  h.job.add_comm(0x71, {0, 1}, "tp");  // node-local: not a stream
  // dp: 4 ranks over 2 nodes; this node holds comm ranks 0 and 2 (processes 2 and 3).
  int dp = h.job.add_comm(0xd1, {2, 3}, "dp", 4, {0, 2}, 2);
  for (uint64_t s = 0; s < 3; ++s) {
    FakeColl c;
    c.seq = s;
    c.t0 = kT0 + int64_t(s) * kMs;
    c.fp_recv = {0xf0 + s, 0xf0 + s};
    h.job.collective(dp, c);
  }
  OpSpec o;
  o.key = 3;
  o.enqueue_ns = kT0 + 10 * kMs;
  FakeJob::start(h.job.enqueue(dp, 0, o), kT0 + 11 * kMs);  // comm rank 0 is inside #3
  h.pass(kT0 + kSec);
  obs::NodeView view(h.observer->model(), h.observer->mutex());
  view.capture(kT0 + kSec, false);
  auto streams = view.streams();
  ASSERT_EQ(streams.size(), 1u);
  const auto& s = streams[0];
  EXPECT_EQ(s.comm_hash, 0xd1u);
  EXPECT_EQ(s.func, shm::kFuncAllReduce);
  EXPECT_EQ(s.nranks, 4);
  EXPECT_EQ(s.comm_name, "dp");
  EXPECT_EQ(s.completed, 3u);
  EXPECT_EQ(s.enqueued, 4u);
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].comm_rank, 0);
  EXPECT_EQ(s.ranks[0].global_rank, 2);
  EXPECT_EQ(s.ranks[0].enqueued, 4u);
  EXPECT_EQ(s.ranks[0].started, 4u);
  EXPECT_EQ(s.ranks[0].completed, 3u);
  EXPECT_EQ(s.ranks[1].comm_rank, 2);
  EXPECT_EQ(s.ranks[1].enqueued, 3u);
  EXPECT_FALSE(view.locally_stalled());

  std::vector<scout::net::RankOpView> ops;
  ASSERT_TRUE(view.op(0xd1, shm::kFuncAllReduce, 1, &ops));
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].comm_rank, 0);
  EXPECT_EQ(ops[0].global_rank, 2);
  EXPECT_EQ(ops[0].fp_recv, 0xf1u);
  EXPECT_EQ(ops[0].meta, ops[1].meta);
  EXPECT_NE(ops[0].meta, 0u);
  EXPECT_EQ(ops[0].arrival_ns, kT0 + kMs + 10'000);
  EXPECT_EQ(ops[0].rec.key, 1u);
  EXPECT_EQ(ops[0].rec.fp_recv, 0xf1u);
  // Its previous GPU operation (#0) ended at kT0 + 10 us + 100 us.
  EXPECT_EQ(ops[0].gap_ns, kT0 + kMs + 10'000 - (kT0 + 110'000));
  EXPECT_FALSE(view.op(0xd1, shm::kFuncAllReduce, 99, &ops));
  EXPECT_FALSE(view.op(0x71, shm::kFuncAllGather, 0, &ops));

  auto id = view.identity(3);
  EXPECT_EQ(id.host, "node0");
  EXPECT_EQ(id.pid, FakeJob::kPidBase + 3);
  EXPECT_EQ(id.gpu, "GPU-3");

  // The Model drops the unjudged cross-node operations after the settle timeout (5 s here); the
  // view keeps their records for the digest.
  h.pass(kT0 + 20 * kSec);
  view.capture(kT0 + 20 * kSec, true);
  EXPECT_EQ(h.observer->judge_stats().dropped_unknown, 3u);
  ASSERT_TRUE(view.op(0xd1, shm::kFuncAllReduce, 1, &ops));
  EXPECT_EQ(ops.size(), 2u);
  EXPECT_EQ(view.retained(), 4u);  // #0..#2 and #3 (in flight)
  EXPECT_TRUE(view.locally_stalled());
}

TEST(NodeView, CompletedWaitsForFingerprintsBeingWritten) {
  ObserverHarness h(2);
  int dp = h.job.add_comm(0xd2, {0, 1}, "dp", 4, {1, 3}, 2);
  FakeColl c;
  c.seq = 0;
  c.fp_recv = {0xa, 0xa};
  h.job.collective(dp, c);
  // #1 is complete on both local ranks, but rank 3's receive fingerprint is still pending.
  OpSpec o;
  o.key = 1;
  o.enqueue_ns = kT0 + kMs;
  FakeRec a = h.job.enqueue(dp, 0, o), b = h.job.enqueue(dp, 1, o);
  for (FakeRec r : {a, b}) {
    FakeJob::start(r, kT0 + 2 * kMs);
    FakeJob::complete(r, kT0 + 3 * kMs);
  }
  FakeJob::fp_recv(a, 0xb);
  FakeJob::fp_pending(b);
  h.pass(kT0 + kSec);
  obs::NodeView view(h.observer->model(), h.observer->mutex());
  view.capture(kT0 + kSec, false);
  auto s = view.streams();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].ranks[1].completed, 2u);  // the rank's own counter
  EXPECT_EQ(s[0].completed, 1u);           // what the digest may cover: #1 is not settled
  FakeJob::fp_recv(b, 0xb);
  h.pass(kT0 + 2 * kSec);
  view.capture(kT0 + 2 * kSec, false);
  EXPECT_EQ(view.streams()[0].completed, 2u);
  std::vector<scout::net::RankOpView> ops;
  ASSERT_TRUE(view.op(0xd2, shm::kFuncAllReduce, 1, &ops));
  EXPECT_EQ(ops[1].fp_recv, 0xbu);
}

TEST(NodeView, WaitSnapshotHoldsMembersCountersAndInFlightRecords) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  int dp = h.job.add_comm(0xd3, {1}, "dp", 2, {0}, 2);
  FakeColl c;
  c.seq = 0;
  h.job.collective(tp, c);
  OpSpec o;
  o.key = 1;
  o.enqueue_ns = kT0 + kMs;
  FakeJob::start(h.job.enqueue(tp, 0, o), kT0 + 2 * kMs);  // rank 0 waits in tp #1 for rank 1
  o.key = 0;
  FakeJob::start(h.job.enqueue(dp, 0, o), kT0 + 2 * kMs);  // rank 1 waits in dp #0 (remote peer)
  h.pass(kT0 + kSec);
  obs::NodeView view(h.observer->model(), h.observer->mutex());
  scout::net::WaitSnapshot w = view.wait_snapshot();
  ASSERT_EQ(w.procs.size(), 2u);
  ASSERT_EQ(w.comms.size(), 2u);
  for (const auto& cv : w.comms) {
    if (cv.comm_hash == 0x71) {
      EXPECT_EQ(cv.nranks, 2);
      ASSERT_EQ(cv.members.size(), 2u);
      EXPECT_EQ(cv.members[0].issued[shm::kFuncAllReduce], 2u);
      EXPECT_EQ(cv.members[0].completed[shm::kFuncAllReduce], 1u);
      ASSERT_EQ(cv.members[0].records.size(), 1u);  // its slot of #1
      EXPECT_EQ(cv.members[0].records[0].key, 1u);
      EXPECT_EQ(cv.members[0].records[0].state, shm::kStateRunning);
      EXPECT_TRUE(cv.members[1].records.empty());  // rank 1 never issued #1
      EXPECT_EQ(cv.members[1].issued[shm::kFuncAllReduce], 1u);
    } else {
      EXPECT_EQ(cv.comm_hash, 0xd3u);
      EXPECT_EQ(cv.nranks, 2);
      ASSERT_EQ(cv.members.size(), 1u);
      EXPECT_EQ(cv.members[0].comm_rank, 0);
      EXPECT_EQ(w.procs[cv.members[0].proc].global_rank, 1);
      ASSERT_EQ(cv.members[0].records.size(), 1u);
    }
  }
}

TEST(NodeView, WaitSnapshotCarriesEachCommunicatorsStallRuleAndStallsAskOncePerEpisode) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  int dp = h.job.add_comm(0xd6, {1}, "dp", 2, {0}, 2);
  h.pass(kT0 - kSec);  // creates the observer
  obs::NodeViewOptions opt;
  opt.hang_timeout_ns = 10 * kSec;
  obs::NodeView view(h.observer->model(), h.observer->mutex(), opt);
  // 20 steps, one every 250 ms, a pass and a capture after each: 18 gaps of 250 ms.
  for (int s = 0; s < 20; ++s) {
    FakeColl c;
    c.seq = uint64_t(s);
    c.t0 = kT0 + s * 250 * kMs;
    h.job.collective(tp, c);
    h.job.collective(dp, c);
    h.pass(c.t0 + 100 * kMs);
    view.capture(c.t0 + 100 * kMs, false);
  }
  scout::net::WaitSnapshot w = view.wait_snapshot();
  ASSERT_EQ(w.comms.size(), 2u);
  for (const auto& cv : w.comms) {
    EXPECT_EQ(cv.stall_threshold_ns, 3 * kSec) << cv.name;  // max(3 s, 3 x 250 ms)
    EXPECT_EQ(cv.stall_gaps, 18u) << cv.name;
    EXPECT_EQ(cv.stall_p99_ns, 250 * kMs) << cv.name;
  }
  EXPECT_EQ(view.stalls().episodes, 0u);
  EXPECT_FALSE(view.stalls().now);
  // dp #20 runs on rank 1 and its peer on the other node never comes: one episode past 3 s.
  OpSpec o;
  o.key = 20;
  o.enqueue_ns = kT0 + 20 * 250 * kMs;
  FakeJob::start(h.job.enqueue(dp, 0, o), o.enqueue_ns + kMs);
  for (int64_t after : {kSec, 3 * kSec, 4 * kSec, 8 * kSec}) {
    h.pass(o.enqueue_ns + after);
    view.capture(o.enqueue_ns + after, false);
    EXPECT_EQ(view.stalls().now, after > 3 * kSec) << after;
    EXPECT_EQ(view.stalls().episodes, after > 3 * kSec ? 1u : 0u) << after;
  }
  // Switched off (HangConfig::stall false): no rule is learned, no drill-down is asked.
  opt.stall = false;
  obs::NodeView off(h.observer->model(), h.observer->mutex(), opt);
  off.capture(o.enqueue_ns + 9 * kSec, false);
  EXPECT_EQ(off.stalls().episodes, 0u);
  EXPECT_EQ(off.wait_snapshot().comms[0].stall_threshold_ns, 0);
}

TEST(NodeView, MetadataHashFollowsWhatMustAgree) {
  shm::RecordSnapshot a;
  a.kind = shm::kKindColl;
  a.func = shm::kFuncAllReduce;
  a.datatype = a.api_datatype = shm::kTypeFloat32;
  a.count = a.api_count = 1024;
  shm::RecordSnapshot b = a;
  b.gpu_start_ns = 12345;  // times do not matter
  EXPECT_EQ(obs::NodeView::meta_hash(a), obs::NodeView::meta_hash(b));
  b.api_count = 1000;
  EXPECT_NE(obs::NodeView::meta_hash(a), obs::NodeView::meta_hash(b));
  b = a;
  b.peer = 3;  // the root only matters for Broadcast and Reduce
  EXPECT_EQ(obs::NodeView::meta_hash(a), obs::NodeView::meta_hash(b));
  a.func = b.func = shm::kFuncBroadcast;
  EXPECT_NE(obs::NodeView::meta_hash(a), obs::NodeView::meta_hash(b));
}

}  // namespace
