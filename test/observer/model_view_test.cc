// The node-local core as the observer network reads it (net::LocalView over the Model): streams
// of communicators with ranks on other nodes, per-rank detail of an operation, identities, and
// that local-only communicators never appear.
#include "observer/core/model_view.h"

#include <gtest/gtest.h>

#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
namespace obs = scout::obs;
namespace shm = scout::shm;

TEST(ModelView, StreamsAreCrossNodeCommunicatorsWithLocalProgress) {
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
  obs::ModelView view(h.observer->model(), h.observer->mutex());
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

  std::vector<scout::net::RankOpView> ops;
  ASSERT_TRUE(view.op(0xd1, shm::kFuncAllReduce, 1, &ops));
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].comm_rank, 0);
  EXPECT_EQ(ops[0].global_rank, 2);
  EXPECT_EQ(ops[0].fp_recv, 0xf1u);
  EXPECT_EQ(ops[0].meta, ops[1].meta);
  EXPECT_NE(ops[0].meta, 0u);
  EXPECT_EQ(ops[0].arrival_ns, kT0 + kMs + 10'000);
  EXPECT_FALSE(view.op(0xd1, shm::kFuncAllReduce, 99, &ops));
  EXPECT_FALSE(view.op(0x71, shm::kFuncAllGather, 0, &ops));

  auto id = view.identity(3);
  EXPECT_EQ(id.host, "node0");
  EXPECT_EQ(id.pid, FakeJob::kPidBase + 3);
  EXPECT_EQ(id.gpu, "GPU-3");
}

TEST(ModelView, MetadataHashFollowsWhatMustAgree) {
  shm::RecordSnapshot a;
  a.kind = shm::kKindColl;
  a.func = shm::kFuncAllReduce;
  a.datatype = a.api_datatype = shm::kTypeFloat32;
  a.count = a.api_count = 1024;
  shm::RecordSnapshot b = a;
  b.gpu_start_ns = 12345;  // times do not matter
  EXPECT_EQ(obs::ModelView::meta_hash(a), obs::ModelView::meta_hash(b));
  b.api_count = 1000;
  EXPECT_NE(obs::ModelView::meta_hash(a), obs::ModelView::meta_hash(b));
  b = a;
  b.peer = 3;  // the root only matters for Broadcast and Reduce
  EXPECT_EQ(obs::ModelView::meta_hash(a), obs::ModelView::meta_hash(b));
  a.func = b.func = shm::kFuncBroadcast;
  EXPECT_NE(obs::ModelView::meta_hash(a), obs::ModelView::meta_hash(b));
}

}  // namespace
