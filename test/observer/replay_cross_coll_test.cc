// Collective recipes across nodes, the observer side (observer/replay/cross_store.h,
// worker.h): the classes of the communicators spanning nodes with their membership filled in
// from every node's members, round-robin across plans, the members and plan JSON with classes,
// plan k-2's collective bootstrap keys removed with plan k, and the leader's skipped samples for
// members a node sent nothing for.
#include <gtest/gtest.h>

#include "observer/net/key_store.h"
#include "observer/replay/cross_store.h"
#include "observer/replay/worker.h"
#include "replay/judge.h"
#include "test/support/tmpdir.h"

namespace scout::obs {
namespace {

using replay::CollClass;
using scout::testing::TempDir;

CrossMember member(int rank, int node) {
  CrossMember m;
  m.global_rank = rank;
  m.gpu = "GPU-sim-node" + std::to_string(node) + "-" + std::to_string(rank);
  m.cuda_dev = rank % 2;
  m.host = "host" + std::to_string(node);
  m.pid = 1000 + rank;
  m.node = node;
  return m;
}

CollClass cls(const std::string& func, uint64_t count, std::vector<int> ranks = {}) {
  CollClass c;
  c.func = func;
  c.datatype = func == "Broadcast" ? "int8" : "float32";
  c.elem_bytes = func == "Broadcast" ? 1 : 4;
  c.count = count;
  c.proto = "LL128";
  c.ranks = std::move(ranks);
  return c;
}

// "0xaa:4" spans node 0 (comm ranks 0, 1 = global 0, 1) and node 1 (comm ranks 2, 3 = global
// 6, 7); node 0 saw an AllReduce and a Broadcast there, node 1 the same AllReduce and another
// AllReduce. "0xbb:3" spans both too, but its third member (comm rank 2) is on no node that
// published. "0xcc:2" is node 0's alone (one node).
std::vector<NodeMembers> two_nodes() {
  NodeMembers n0, n1;
  n0.node = 0;
  n0.ranks = {member(0, 0), member(1, 0)};
  n0.comms = {{"0xaa:4", {0, 1}}, {"0xbb:3", {0}}, {"0xcc:2", {0, 1}}};
  n0.comm_ranks = {{"0xaa:4", {{0, 0}, {1, 1}}}, {"0xbb:3", {{0, 0}}}, {"0xcc:2", {{0, 0}, {1, 1}}}};
  n0.colls = {{"0xaa:4", {cls("AllReduce", 1024), cls("Broadcast", 64)}},
              {"0xbb:3", {cls("AllReduce", 8)}},
              {"0xcc:2", {cls("AllReduce", 16)}}};
  n1.node = 1;
  n1.ranks = {member(6, 1), member(7, 1)};
  n1.comms = {{"0xaa:4", {6, 7}}, {"0xbb:3", {6}}};
  n1.comm_ranks = {{"0xaa:4", {{2, 6}, {3, 7}}}, {"0xbb:3", {{1, 6}}}};
  n1.colls = {{"0xaa:4", {cls("AllReduce", 1024), cls("AllReduce", 2048)}}, {"0xbb:3", {cls("AllReduce", 8)}}};
  return {n0, n1};
}

TEST(ReplayCrossColl, ClassesOfTheSpanningCommunicatorWithEveryMemberOnce) {
  const std::vector<CollClass> got = cross_colls(two_nodes());
  // 0xaa:4 only: 0xbb:3 misses a member, 0xcc:2 is on one node. First seen first, each once.
  const std::vector<CollClass> want = {cls("AllReduce", 1024, {0, 1, 6, 7}), cls("Broadcast", 64, {0, 1, 6, 7}),
                                       cls("AllReduce", 2048, {0, 1, 6, 7})};
  EXPECT_EQ(got, want);
}

TEST(ReplayCrossColl, ACommunicatorOnOneNodeOrWithoutClassesGivesNone) {
  std::vector<NodeMembers> one = {two_nodes()[0]};
  one[0].comm_ranks["0xaa:4"] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};  // all four on node 0
  EXPECT_TRUE(cross_colls(one).empty());
  std::vector<NodeMembers> bare = two_nodes();
  for (NodeMembers& n : bare) n.colls.clear();
  EXPECT_TRUE(cross_colls(bare).empty());
}

TEST(ReplayCrossColl, ACommunicatorOfMoreThanTheMostMembersGivesNone) {
  // 257 members, 128 on node 0 and 129 on node 1: every member published, still left out.
  NodeMembers n0, n1;
  n0.node = 0;
  n1.node = 1;
  const std::string key = "0xdd:" + std::to_string(kMaxCrossCollMembers + 1);
  for (int g = 0; g <= kMaxCrossCollMembers; ++g) {
    NodeMembers& n = g < 128 ? n0 : n1;
    n.ranks.push_back(member(g, n.node));
    n.comms[key].push_back(g);
    n.comm_ranks[key][g] = g;
  }
  n0.colls[key] = {cls("AllReduce", 4)};
  EXPECT_TRUE(cross_colls({n0, n1}).empty());
  n1.comm_ranks[key].erase(kMaxCrossCollMembers);  // 256 members: replayed
  n1.comms[key].pop_back();
  n1.ranks.pop_back();
  const std::string k256 = "0xdd:" + std::to_string(kMaxCrossCollMembers);
  for (NodeMembers* n : {&n0, &n1}) {
    n->comms[k256] = n->comms[key];
    n->comm_ranks[k256] = n->comm_ranks[key];
  }
  n0.colls[k256] = {cls("AllReduce", 4)};
  ASSERT_EQ(cross_colls({n0, n1}).size(), 1u);
  EXPECT_EQ(cross_colls({n0, n1})[0].ranks.size(), size_t(kMaxCrossCollMembers));
}

TEST(ReplayCrossColl, PlansTakeTheClassesRoundRobin) {
  size_t cursor = 0;
  const std::vector<NodeMembers> all = two_nodes();
  const std::vector<int> m = {0, 1, 6, 7};
  EXPECT_EQ(next_cross_colls(all, 2, &cursor), (std::vector<CollClass>{cls("AllReduce", 1024, m), cls("Broadcast", 64, m)}));
  EXPECT_EQ(cursor, 2u);
  EXPECT_EQ(next_cross_colls(all, 2, &cursor),
            (std::vector<CollClass>{cls("AllReduce", 2048, m), cls("AllReduce", 1024, m)}));
  EXPECT_EQ(cursor, 1u);
  EXPECT_EQ(next_cross_colls(all, 8, &cursor).size(), 3u);  // never a class twice in one plan
  EXPECT_EQ(cursor, 1u);
  size_t none = 5;
  EXPECT_TRUE(next_cross_colls({}, 8, &none).empty());
  EXPECT_EQ(none, 5u);
}

TEST(ReplayCrossColl, MembersAndPlanJsonCarryTheClasses) {
  const NodeMembers n = two_nodes()[1];
  NodeMembers back;
  std::string err;
  ASSERT_TRUE(from_json(nlohmann::json::parse(to_json(n).dump()), &back, &err)) << err;
  EXPECT_EQ(back.colls, n.colls);
  EXPECT_EQ(back, n);
  CrossPlan p;
  p.id = 4;
  p.seed = 4;
  p.pairs = {{0, 6}};
  p.colls = cross_colls(two_nodes());
  p.members = {member(0, 0), member(1, 0), member(6, 1), member(7, 1)};
  CrossPlan q;
  ASSERT_TRUE(from_json(nlohmann::json::parse(to_json(p).dump()), &q, &err)) << err;
  EXPECT_EQ(q.colls, p.colls);
  EXPECT_EQ(q.nodes(), (std::vector<int>{0, 1}));
  // An observer of before the classes reads members and plans without them.
  nlohmann::json old = to_json(p);
  old.erase("colls");
  ASSERT_TRUE(from_json(old, &q, &err)) << err;
  EXPECT_TRUE(q.colls.empty());
  nlohmann::json bad = to_json(n);
  bad["colls"]["0xaa:4"][0]["elem_bytes"] = 3000;
  EXPECT_FALSE(from_json(bad, &back, &err));
  EXPECT_NE(err.find("replay members: "), std::string::npos) << err;
}

TEST(ReplayCrossColl, PlanRemovesTheCollectiveBootstrapKeysOfPlanTwoBefore) {
  TempDir dir;
  auto look = net::open_key_store("file:" + dir.path());
  CrossStore cross(net::open_key_store("file:" + dir.path()), "job-1");
  const std::string x = "scout/job-1/replay/x/";
  for (uint64_t id = 1; id <= 3; ++id) {
    CrossPlan p;
    p.id = id;
    p.colls = cross_colls(two_nodes());
    p.members = {member(0, 0), member(6, 1)};
    cross.put_plan(p, 2);
    if (id == 1)
      for (const char* name : {"uid/coll-0", "uid/coll-1", "uid/coll-2"}) cross.put(1, name, "v1");
    if (id == 2) cross.put(2, "uid/coll-0", "v2");
  }
  for (const char* k : {"1/uid/coll-0", "1/uid/coll-1", "1/uid/coll-2"}) EXPECT_FALSE(look->has(x + k)) << k;
  EXPECT_EQ(look->get_if(x + "2/uid/coll-0"), "v2");
}

TEST(ReplayCrossColl, MembersANodeSentNothingForAreSkippedSamples) {
  replay::RecipePlan rp;
  rp.colls = {cls("AllReduce", 1024, {0, 1, 6, 7})};
  rp.links = {{0, 6}};
  const std::vector<replay::Recipe> recipes = replay::build_recipes(rp);
  std::vector<replay::Sample> samples;
  for (int g : {0, 1})
    for (int round = 0; round < 2; ++round) samples.push_back(replay::sample_of(recipes[0], {g, "", -1}, round));
  add_missing_members(recipes, &samples);
  ASSERT_EQ(samples.size(), 8u);  // links are never filled in: their receiver's sample is the verdict
  for (size_t i = 4; i < 8; ++i) {
    EXPECT_EQ(samples[i].recipe, recipes[0].id);
    EXPECT_EQ(samples[i].global_rank, i < 6 ? 6 : 7);
    EXPECT_EQ(samples[i].round, int(i % 2));
    EXPECT_EQ(samples[i].status, replay::SampleStatus::kSkipped);
    EXPECT_EQ(samples[i].reason, "no sample from rank " + std::to_string(i < 6 ? 6 : 7) + "'s node");
  }
  // Judged, the collective is inconclusive, not a pass on half its members.
  const replay::CycleVerdict v = replay::judge(recipes, {}, samples, {}, replay::OutlierRule{});
  ASSERT_EQ(v.recipes.size(), 2u);
  EXPECT_EQ(v.recipes[0].outcome, replay::Outcome::kInconclusive);
  EXPECT_EQ(v.recipes[0].reason, "skipped: no sample from rank 6's node");
}

}  // namespace
}  // namespace scout::obs
