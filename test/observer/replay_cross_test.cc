// Replay across nodes, the observer side (observer/replay/cross_store.h): the directed pairs
// of the spanning communicators, the members and plan JSON, and CrossStore over a FileStore
// (what a node sees of another's keys, plan k-2's keys removed with plan k, waiting for a key).
#include <time.h>

#include <gtest/gtest.h>

#include <set>

#include "observer/net/key_store.h"
#include "observer/replay/cross_store.h"
#include "test/net/proc_util.h"
#include "test/support/tmpdir.h"

namespace scout::obs {
namespace {

using scout::testing::TempDir;
using Pairs = std::vector<std::pair<int, int>>;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

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

// Node 0 holds ranks 0, 1 (and 4, in no spanning communicator); node 1 holds ranks 2, 3.
// "aa:4" spans both nodes; "bb:2" is node 0's alone.
std::vector<NodeMembers> two_nodes() {
  NodeMembers n0, n1;
  n0.node = 0;
  n0.ranks = {member(0, 0), member(1, 0), member(4, 0)};
  n0.comms = {{"aa:4", {0, 1}}, {"bb:2", {0, 1}}};
  n1.node = 1;
  n1.ranks = {member(2, 1), member(3, 1)};
  n1.comms = {{"aa:4", {2, 3}}};
  return {n0, n1};
}

TEST(ReplayCross, PairsOfTheSpanningCommunicatorAcrossNodes) {
  EXPECT_EQ(cross_pairs(two_nodes()), (Pairs{{0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 0}, {2, 1}, {3, 0}, {3, 1}}));
}

TEST(ReplayCross, RankInNoSpanningCommunicatorHasNoPair) {
  std::vector<NodeMembers> nodes = two_nodes();
  nodes[1].ranks.push_back(member(5, 1));
  nodes[1].comms["cc:2"] = {5};  // 5's communicator holds only 5 on node 1
  Pairs p = cross_pairs(nodes);
  EXPECT_EQ(p.size(), 8u);
  for (const auto& [a, b] : p) {
    EXPECT_NE(a, 4);
    EXPECT_NE(b, 4);
    EXPECT_NE(a, 5);
    EXPECT_NE(b, 5);
  }
}

TEST(ReplayCross, PairSharedByTwoCommunicatorsComesOnce) {
  std::vector<NodeMembers> nodes = two_nodes();
  nodes[0].comms["dd:2"] = {0};
  nodes[1].comms["dd:2"] = {2};
  EXPECT_EQ(cross_pairs(nodes), (Pairs{{0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 0}, {2, 1}, {3, 0}, {3, 1}}));
}

TEST(ReplayCross, OnlyCommunicatorOnOneNodeGivesNoPair) {
  std::vector<NodeMembers> nodes = two_nodes();
  nodes[1].comms.clear();
  EXPECT_EQ(cross_pairs(nodes), Pairs{});
}

TEST(ReplayCross, NodeMembersJsonRoundTrip) {
  const NodeMembers n = two_nodes()[0];
  NodeMembers back;
  std::string err;
  ASSERT_TRUE(from_json(nlohmann::json::parse(to_json(n).dump()), &back, &err)) << err;
  EXPECT_EQ(back, n);
  EXPECT_EQ(back.node, 0);
  ASSERT_EQ(back.ranks.size(), 3u);
  EXPECT_EQ(back.ranks[1].global_rank, 1);
  EXPECT_EQ(back.ranks[1].gpu, "GPU-sim-node0-1");
  EXPECT_EQ(back.ranks[1].cuda_dev, 1);
  EXPECT_EQ(back.ranks[1].host, "host0");
  EXPECT_EQ(back.ranks[1].pid, 1001);
  EXPECT_EQ(back.ranks[1].node, 0);
  EXPECT_EQ(back.comms, (std::map<std::string, std::vector<int>>{{"aa:4", {0, 1}}, {"bb:2", {0, 1}}}));
}

// Comm rank -> global rank maps survive the round trip, are merged across nodes, and a node
// that published before they existed (no "comm_ranks" key) reads as having none.
TEST(ReplayCross, CommRanksRoundTripMergeAndAbsentKey) {
  NodeMembers a = two_nodes()[0], b = two_nodes()[1];
  a.comm_ranks[cross_comm_key(0xaa, 4)] = {{0, 0}, {1, 1}};
  b.comm_ranks[cross_comm_key(0xaa, 4)] = {{2, 2}, {3, 3}};
  NodeMembers back;
  std::string err;
  ASSERT_TRUE(from_json(nlohmann::json::parse(to_json(a).dump()), &back, &err)) << err;
  EXPECT_EQ(back.comm_ranks, a.comm_ranks);
  EXPECT_EQ(cross_comm_key(0xaa, 4), "0x00000000000000aa:4");
  EXPECT_EQ(merged_comm_ranks({a, b}),
            (std::map<std::string, std::map<int, int>>{{"0x00000000000000aa:4", {{0, 0}, {1, 1}, {2, 2}, {3, 3}}}}));
  nlohmann::json old = to_json(two_nodes()[0]);
  old.erase("comm_ranks");
  ASSERT_TRUE(from_json(old, &back, &err)) << err;
  EXPECT_TRUE(back.comm_ranks.empty());
}

TEST(ReplayCross, CrossPlanJsonRoundTrip) {
  CrossPlan p;
  p.id = 7;
  p.seed = 0xfeedfacecafebeefull;
  p.pairs = {{1, 2}, {3, 0}};
  p.members = {member(1, 0), member(2, 1), member(3, 1), member(0, 0)};
  CrossPlan back;
  std::string err;
  ASSERT_TRUE(from_json(nlohmann::json::parse(to_json(p).dump()), &back, &err)) << err;
  EXPECT_EQ(back.id, 7u);
  EXPECT_EQ(back.seed, 0xfeedfacecafebeefull);
  EXPECT_EQ(back.pairs, (Pairs{{1, 2}, {3, 0}}));
  ASSERT_EQ(back.members.size(), 4u);
  for (size_t i = 0; i < p.members.size(); ++i) {
    EXPECT_EQ(back.members[i].global_rank, p.members[i].global_rank);
    EXPECT_EQ(back.members[i].gpu, p.members[i].gpu);
    EXPECT_EQ(back.members[i].cuda_dev, p.members[i].cuda_dev);
    EXPECT_EQ(back.members[i].host, p.members[i].host);
    EXPECT_EQ(back.members[i].pid, p.members[i].pid);
    EXPECT_EQ(back.members[i].node, p.members[i].node);
  }
  EXPECT_EQ(back.nodes(), (std::vector<int>{0, 1}));
  ASSERT_NE(back.member(3), nullptr);
  EXPECT_EQ(back.member(3)->host, "host1");
  EXPECT_EQ(back.member(9), nullptr);
}

TEST(ReplayCross, MalformedJsonNamesTheMissingKey) {
  nlohmann::json n = to_json(two_nodes()[1]);
  n.erase("comms");
  NodeMembers nm;
  nm.node = 42;
  std::string err;
  EXPECT_FALSE(from_json(n, &nm, &err));
  EXPECT_EQ(err, "replay members: [json.exception.out_of_range.403] key 'comms' not found");
  EXPECT_EQ(nm.node, 42);  // untouched

  CrossPlan p;
  p.id = 3;
  p.pairs = {{0, 2}};
  p.members = {member(0, 0), member(2, 1)};
  nlohmann::json j = to_json(p);
  j["members"][1].erase("host");
  CrossPlan out;
  err.clear();
  EXPECT_FALSE(from_json(j, &out, &err));
  EXPECT_EQ(err, "replay plan: [json.exception.out_of_range.403] key 'host' not found");
  EXPECT_EQ(out.id, 0u);
}

struct Stores {
  TempDir dir;
  std::unique_ptr<net::KeyStore> look = net::open_key_store("file:" + dir.path());  // another node's view
  CrossStore cross{net::open_key_store("file:" + dir.path()), "job-1"};
};

TEST(ReplayCross, MembersAreOnlyTheNodesThatPublished) {
  Stores s;
  EXPECT_TRUE(s.cross.members(3).empty());
  NodeMembers n2;
  n2.node = 2;
  n2.ranks = {member(6, 2)};
  n2.comms = {{"aa:8", {6}}};
  s.cross.put_members(n2);
  s.cross.put_members(two_nodes()[0]);
  EXPECT_TRUE(s.look->has("scout/job-1/replay/members/2"));
  std::vector<NodeMembers> got = s.cross.members(3);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], two_nodes()[0]);
  EXPECT_EQ(got[1], n2);
  EXPECT_EQ(s.cross.members(2).size(), 1u);  // node 2 is beyond 2 nodes
}

TEST(ReplayCross, NewerPlanOnlyAboveAfter) {
  Stores s;
  EXPECT_FALSE(s.cross.newer_plan(0).has_value());
  CrossPlan p;
  p.id = 4;
  p.seed = 99;
  p.pairs = {{0, 2}};
  p.members = {member(0, 0), member(2, 1)};
  s.cross.put_plan(p, 2);
  EXPECT_EQ(s.look->get_if("scout/job-1/replay/plan/latest"), "4");
  std::optional<CrossPlan> got = s.cross.newer_plan(3);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->id, 4u);
  EXPECT_EQ(got->seed, 99u);
  EXPECT_EQ(got->pairs, (Pairs{{0, 2}}));
  EXPECT_TRUE(s.cross.newer_plan(0).has_value());
  EXPECT_FALSE(s.cross.newer_plan(4).has_value());
  EXPECT_FALSE(s.cross.newer_plan(5).has_value());
}

TEST(ReplayCross, PlanRemovesTheKeysOfPlanTwoBefore) {
  Stores s;
  auto plan = [](uint64_t id, Pairs pairs) {
    CrossPlan p;
    p.id = id;
    p.pairs = std::move(pairs);
    p.members = {member(0, 0), member(1, 0), member(2, 1), member(3, 1)};
    return p;
  };
  const std::string x = "scout/job-1/replay/x/";
  s.cross.put_plan(plan(1, {{0, 2}, {3, 1}}), 2);
  for (const char* name : {"uid/0-2", "uid/3-1", "ready/0", "ready/1", "samples/0", "samples/1"})
    s.cross.put(1, name, "v1");
  s.cross.put_plan(plan(2, {{1, 3}}), 2);
  for (const char* name : {"uid/1-3", "ready/0", "ready/1", "samples/0", "samples/1"}) s.cross.put(2, name, "v2");
  const std::vector<std::string> plan1 = {
      "scout/job-1/replay/plan/1", x + "1/uid/0-2",  x + "1/uid/3-1", x + "1/ready/0", x + "1/ready/1",
      x + "1/samples/0",           x + "1/samples/1"};
  const std::vector<std::string> plan2 = {
      "scout/job-1/replay/plan/2", x + "2/uid/1-3",  x + "2/ready/0", x + "2/ready/1",
      x + "2/samples/0",           x + "2/samples/1"};
  for (const std::string& k : plan1) EXPECT_TRUE(s.look->has(k)) << k;

  s.cross.put_plan(plan(3, {{0, 3}}), 2);
  for (const std::string& k : plan1) EXPECT_FALSE(s.look->has(k)) << k;
  for (const std::string& k : plan2) EXPECT_TRUE(s.look->has(k)) << k;
  EXPECT_EQ(s.look->get_if(x + "2/uid/1-3"), "v2");
  EXPECT_TRUE(s.look->has("scout/job-1/replay/plan/3"));
  EXPECT_EQ(s.look->get_if("scout/job-1/replay/plan/latest"), "3");
  EXPECT_EQ(s.cross.newer_plan(2)->id, 3u);
}

TEST(ReplayCross, WaitReturnsAValuePutBefore) {
  Stores s;
  s.cross.put(5, "uid/0-2", std::string("\x00\x01hex", 5));
  const int64_t t0 = now_ns();
  EXPECT_EQ(s.cross.wait(5, "uid/0-2", t0 + 5'000'000'000), std::string("\x00\x01hex", 5));
  EXPECT_LT(now_ns() - t0, 1'000'000'000);
  EXPECT_EQ(s.look->get_if("scout/job-1/replay/x/5/uid/0-2"), std::string("\x00\x01hex", 5));
}

TEST(ReplayCross, WaitForAMissingKeyEndsAtTheDeadline) {
  Stores s;
  s.cross.put(5, "uid/0-2", "there");
  const int64_t deadline = now_ns() + 50'000'000;
  EXPECT_EQ(s.cross.wait(5, "uid/2-0", deadline), std::nullopt);
  const int64_t end = now_ns();
  EXPECT_GE(end, deadline);
  EXPECT_LT(end - deadline, 500'000'000);
  EXPECT_EQ(s.cross.wait(4, "uid/0-2", 0), std::nullopt);  // another plan's key
}

TEST(ReplayCross, KeyStorePutOverwrites) {
  TempDir dir;
  std::unique_ptr<net::KeyStore> k = net::open_key_store("file:" + dir.path());
  EXPECT_EQ(k->get_if("a/b"), std::nullopt);
  k->put("a/b", "first value");
  EXPECT_EQ(k->get_if("a/b"), "first value");
  k->put("a/b", "2nd");
  EXPECT_EQ(k->get_if("a/b"), "2nd");
  std::unique_ptr<net::KeyStore> other = net::open_key_store("file:" + dir.path());
  EXPECT_EQ(other->get_if("a/b"), "2nd");
  k->erase("a/b");
  EXPECT_FALSE(other->has("a/b"));
  EXPECT_EQ(other->get_if("a/b"), std::nullopt);
}

}  // namespace
}  // namespace scout::obs

namespace scout::obs {
namespace {

// The second adversarial trial: after a redis restart the leader's cross-node replay never
// reconnected ("Server closed the connection" about five times a second). The store's calls fail
// while redis is down, reconnect() fails while it is still down, and once it is back a new
// connection works again (the worker calls it with backoff, observer/replay/worker_cross.cc).
TEST(ReplayCross, ReconnectsToARedisThatRestarted) {
  TempDir dir;
  net::testing::RedisServer redis(dir.path());
  if (!redis.ok()) GTEST_SKIP() << redis.why();
  const std::string spec = "redis:127.0.0.1:" + std::to_string(redis.port());
  CrossStore cross{net::open_key_store(spec), "job-1"};
  cross.put_members(two_nodes()[0]);
  ASSERT_EQ(cross.members(2).size(), 1u);
  const int port = redis.port();
  redis.kill();
  EXPECT_ANY_THROW(cross.put_members(two_nodes()[0]));
  EXPECT_ANY_THROW(cross.reconnect(spec));
  net::testing::RedisServer again(dir.path(), port);
  ASSERT_TRUE(again.ok()) << again.why();
  EXPECT_ANY_THROW(cross.members(2));  // the old connection stays closed
  ASSERT_NO_THROW(cross.reconnect(spec));
  EXPECT_TRUE(cross.members(2).empty());  // the restarted server lost the keys: published again
  cross.put_members(two_nodes()[0]);
  EXPECT_EQ(cross.members(2).size(), 1u);
}

}  // namespace
}  // namespace scout::obs
