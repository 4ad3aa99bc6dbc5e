// The rank layout, communicators and commHash derivation of scout-sim (docs/scout-sim.md,
// "Rank layout" and "Communicators and commHash"), and how fault specs resolve to operations.
#include <gtest/gtest.h>

#include <set>

#include "test/sim/comm_hash.h"
#include "test/sim/layout.h"
#include "test/sim/workload.h"

namespace {

using namespace scout::sim;

SimOptions shape(int n, int tp, int pp, int ep = 1, int nodes = 1) {
  SimOptions o;
  o.ranks = n;
  o.tp = tp;
  o.pp = pp;
  o.ep = ep;
  o.nodes = nodes;
  return o;
}

TEST(Layout, MegatronOrderTpFastestThenDpThenPp) {
  Layout L(shape(8, 2, 2, 1, 2));
  ASSERT_EQ(L.comms().size(), 13u);  // world + 4 tp + 4 dp + 4 pp
  auto members = [&](int g, CommKind k) { return L.comm_of(g, k)->members; };
  EXPECT_EQ(members(0, CommKind::kTp), (std::vector<int>{0, 1}));
  EXPECT_EQ(members(6, CommKind::kTp), (std::vector<int>{6, 7}));
  EXPECT_EQ(members(0, CommKind::kDp), (std::vector<int>{0, 2}));
  EXPECT_EQ(members(5, CommKind::kDp), (std::vector<int>{5, 7}));
  EXPECT_EQ(members(1, CommKind::kPp), (std::vector<int>{1, 5}));
  EXPECT_EQ(L.comm_of(5, CommKind::kDp)->name, "dp3");
  EXPECT_EQ(L.comm_of(2, CommKind::kPp)->name, "pp2");
  EXPECT_EQ(L.comm_of(3, CommKind::kTp)->name, "tp1");
  // Two hosts of four ranks: TP groups stay inside a host, PP groups span both.
  EXPECT_EQ(L.coord(5).node, 1);
  EXPECT_EQ(L.coord(5).local_rank, 1);
  EXPECT_EQ(L.comm_of(0, CommKind::kTp)->n_nodes, 1);
  EXPECT_EQ(L.comm_of(0, CommKind::kPp)->n_nodes, 2);
  EXPECT_EQ(L.comm_of(0, CommKind::kWorld)->n_nodes, 2);
  EXPECT_EQ(L.comm_of(0, CommKind::kWorld)->split_count, -1);
  EXPECT_EQ(L.comm_of(0, CommKind::kTp)->split_count, 0);
  EXPECT_EQ(L.comm_of(0, CommKind::kPp)->split_count, 2);
  EXPECT_EQ(L.comm_of(3, CommKind::kPp)->rank_of(7), 1);
  EXPECT_TRUE(L.share_comm(0, 5));  // world
}

// Context parallelism: CP after TP in the rank order; CP groups share (tp, dp, pp), the DP
// (gradient) group spans DP and CP, and the CP groups come last so every other communicator's
// split counter (and so its commHash) is the one it has without --cp.
TEST(Layout, ContextParallelGroupsFollowTpAndTheDpGroupSpansThem) {
  SimOptions o = shape(16, 2, 2);
  o.cp = 2;  // DP = 16 / (2 * 2 * 2) = 2
  Layout L(o);
  ASSERT_EQ(L.dp(), 2);
  auto members = [&](int g, CommKind k) { return L.comm_of(g, k)->members; };
  EXPECT_EQ(L.coord(6).tp, 0);
  EXPECT_EQ(L.coord(6).cp, 1);
  EXPECT_EQ(L.coord(6).dp, 1);
  EXPECT_EQ(L.coord(6).pp, 0);
  EXPECT_EQ(L.coord(9).pp, 1);
  EXPECT_EQ(members(6, CommKind::kTp), (std::vector<int>{6, 7}));
  EXPECT_EQ(members(6, CommKind::kCp), (std::vector<int>{4, 6}));
  EXPECT_EQ(members(6, CommKind::kDp), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(members(6, CommKind::kPp), (std::vector<int>{6, 14}));
  EXPECT_EQ(L.comm_of(6, CommKind::kCp)->name, "cp2");
  // world + 8 tp + 4 dp + 8 pp + 8 cp
  EXPECT_EQ(L.comms().size(), 29u);
  EXPECT_EQ(L.comm_of(6, CommKind::kCp)->split_count, 4);
  EXPECT_EQ(L.comm_of(6, CommKind::kPp)->split_count, 2);
}

// The interleaved pipeline (--vpp 2, --pp 2): each chunk exchanges with the next stage, and the
// last stage hands chunk 0 to the first stage's chunk 1 (and gradients back): per step the first
// stage sends 3 times to the last (forward chunk 0 and 1, backward wrap) and receives 3 times.
TEST(Layout, InterleavedPipelineWrapsFromTheLastStageToTheFirst) {
  SimOptions o = shape(4, 1, 2);
  o.vpp = 2;
  Layout L(o);
  auto count = [&](int g, ActionKind k) {
    int n = 0;
    for (const Action& a : step_actions(L, o, g, 1)) n += a.kind == k && a.comm == CommKind::kPp;
    return n;
  };
  EXPECT_EQ(count(0, ActionKind::kSend), 3);
  EXPECT_EQ(count(0, ActionKind::kRecv), 3);
  EXPECT_EQ(count(2, ActionKind::kSend), 3);
  EXPECT_EQ(count(2, ActionKind::kRecv), 3);
  std::vector<int> first_stage_peers;  // the first stage's forward: send, then send + wrap recv
  for (const Action& a : step_actions(L, o, 0, 1))
    if (a.comm == CommKind::kPp && (a.kind == ActionKind::kSend || a.kind == ActionKind::kRecv))
      first_stage_peers.push_back(a.kind == ActionKind::kSend ? a.peer : -1 - a.peer);
  // send to 1 (chunk 0); send to 1 + receive from 1 (chunk 1, wrap); backward: send to 1 (wrap)
  // + receive from 1 (chunk 1); receive from 1 (chunk 0).
  EXPECT_EQ(first_stage_peers, (std::vector<int>{1, 1, -2, 1, -2, -2}));
}

TEST(Layout, ExpertGroupsAreConsecutiveDpRanksAndSizeOneGroupsAreNotCreated) {
  Layout L(shape(8, 1, 1, 4));  // DP = 8, EP = 4
  EXPECT_EQ(L.comm_of(0, CommKind::kTp), nullptr);
  EXPECT_EQ(L.comm_of(0, CommKind::kPp), nullptr);
  EXPECT_EQ(L.comm_of(5, CommKind::kEp)->members, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(L.comm_of(5, CommKind::kEp)->name, "ep1");
  EXPECT_EQ(L.comm_of(5, CommKind::kEp)->split_count, 3);
  Layout one(shape(1, 1, 1));
  EXPECT_TRUE(one.comms().empty());
}

TEST(CommHash, SameOnMembersDifferentBetweenCommunicators) {
  UniqueId a = make_unique_id(1), b = make_unique_id(2);
  EXPECT_EQ(a, make_unique_id(1));
  EXPECT_NE(a, b);
  uint64_t w = root_comm_hash(a);
  EXPECT_NE(w, root_comm_hash(b));
  std::set<uint64_t> children;
  for (uint64_t split = 0; split < 4; ++split)
    for (int64_t color = 0; color < 16; ++color) children.insert(split_comm_hash(w, split, color));
  EXPECT_EQ(children.size(), 64u);
  EXPECT_EQ(hash_hex(0xf62356e8173f71c8ull), "0xf62356e8173f71c8");
}

TEST(Workload, OperationIndicesOfARankStep) {
  SimOptions o = shape(8, 2, 2);
  o.steps = 20;
  Layout L(o);
  // Stage 0: PPF Send, TP AllReduce, AllGather, ReduceScatter, PPB Recv, TP AllReduce, 4 DP
  // buckets; plus the Broadcast in steps 0 and 10.
  EXPECT_EQ(total_ops(L, o, 0), 20u * 10 + 2);
  EXPECT_EQ(first_op_of_step(L, o, 0, 1), 11u);
  EXPECT_EQ(first_op_of_step(L, o, 0, 11), 11u + 9 * 10 + 11);
  int64_t step = -1;
  Action a;
  ASSERT_TRUE(find_op(L, o, 0, 11 + 5, &step, &a));
  EXPECT_EQ(step, 1);
  EXPECT_EQ(a.comm, CommKind::kTp);
  EXPECT_EQ(a.func, Func::kAllReduce);
  ASSERT_TRUE(find_op(L, o, 0, 10, &step, &a));
  EXPECT_EQ(a.func, Func::kBroadcast);
  EXPECT_FALSE(find_op(L, o, 0, 202, &step, &a));
}

}  // namespace
