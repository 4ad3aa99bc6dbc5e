// Replay across nodes, the observer side (observer/replay/cross_store.h): the directed pairs
// of the spanning communicators, the members and plan JSON, and CrossStore over a FileStore
// (what a node sees of another's keys, plan k-2's keys removed with plan k, waiting for a key).
#include <time.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <regex>
#include <set>
#include <thread>

#include "observer/net/key_store.h"
#include "observer/replay/cross_store.h"
#include "observer/replay/worker.h"
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

namespace scout::obs {
namespace {

// One line of the worker's "store failed" log: "replay across nodes: WHAT (N failure[s];
// reconnecting in X s)", as the count N and the wait X in seconds; false for another line.
bool failure_line(const std::string& line, uint64_t* n, double* wait_s) {
  static const std::regex re(R"(^replay across nodes: .+ \((\d+) failures?; reconnecting in ([0-9.]+) s\)$)");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  *n = std::stoull(m[1].str());
  *wait_s = std::stod(m[2].str());
  return true;
}

// The replay worker's side of a redis restart (observer/replay/worker_cross.cc), its retry and
// say-again times shortened for the test (100 ms doubling to 400 ms, said again at most every
// 1 s; the observer's are 1 s, 30 s and 60 s): while redis is down the failure is said at once
// with "1 failure; reconnecting in 0.1 s", then at most once per second with the growing count,
// the wait never above 400 ms; once redis is back the worker says it reconnected after the number
// of failed attempts and publishes its members again (the restarted redis lost them).
TEST(ReplayCross, WorkerBacksOffAndSaysTheFailureAtMostOncePerPeriod) {
  TempDir dir;
  auto redis = std::make_unique<net::testing::RedisServer>(dir.path());
  if (!redis->ok()) GTEST_SKIP() << redis->why();
  const int port = redis->port();
  const std::string spec = "redis:127.0.0.1:" + std::to_string(port);
  ReplayOptions opt;
  opt.enabled = true;
  opt.nodes = 2;
  opt.rdzv = spec;
  opt.program = {dir.path() + "/scout-replay-never-started"};  // node 1 holds no end of any plan
  opt.cross_retry_first_ns = 100'000'000;
  opt.cross_retry_max_ns = 400'000'000;
  opt.cross_say_every_ns = 1'000'000'000;
  std::atomic<uint64_t> next_cycle{1};
  ReplayWorker worker(opt, "job-1", dir.path(), 1, &next_cycle, nullptr);
  ASSERT_TRUE(worker.across_nodes());
  const NodeMembers mine = two_nodes()[1];
  worker.set_members(mine);
  const std::string key = "scout/job-1/replay/members/1";
  auto published = [&](int64_t limit_ns) {  // members/1 as node 1's worker wrote it, within limit
    std::unique_ptr<net::KeyStore> look = net::open_key_store(spec);
    for (const int64_t end = now_ns() + limit_ns; now_ns() < end;) {
      if (std::optional<std::string> v = look->get_if(key)) return nlohmann::json::parse(*v) == to_json(mine);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  ASSERT_TRUE(published(5'000'000'000));
  EXPECT_TRUE(worker.take_log().empty());

  redis->kill();
  const int64_t killed = now_ns();
  std::vector<std::string> lines;
  auto collect_until = [&](int64_t end, const std::string& stop_at) {
    while (now_ns() < end) {
      for (std::string& l : worker.take_log()) lines.push_back(std::move(l));
      if (!stop_at.empty() && !lines.empty() && lines.back().find(stop_at) != std::string::npos) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  collect_until(killed + 3'500'000'000, "");
  redis = std::make_unique<net::testing::RedisServer>(dir.path(), port);
  ASSERT_TRUE(redis->ok()) << redis->why();
  const int64_t up = now_ns();
  collect_until(up + 5'000'000'000, "reconnected");
  ASSERT_FALSE(lines.empty());

  // Every line but the last says the failure; the last says the reconnection.
  std::string all;
  for (const std::string& l : lines) all += l + "\n";
  const std::string& last = lines.back();
  const std::string again = "replay across nodes: the rendezvous store answers again after ";
  ASSERT_EQ(last.rfind(again, 0), 0u) << all;
  ASSERT_EQ(last.substr(last.size() - std::string(" failed attempts; reconnected").size()),
            " failed attempts; reconnected")
      << all;
  const uint64_t attempts = std::strtoull(last.c_str() + again.size(), nullptr, 10);
  std::vector<uint64_t> counts;
  std::vector<double> waits;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    uint64_t n = 0;
    double w = 0;
    ASSERT_TRUE(failure_line(lines[i], &n, &w)) << lines[i];
    counts.push_back(n);
    waits.push_back(w);
  }
  ASSERT_GE(counts.size(), 2u) << all;  // said at once, and again with the count
  EXPECT_EQ(counts[0], 1u) << all;
  EXPECT_NE(lines[0].find("(1 failure; reconnecting in 0.1 s)"), std::string::npos) << all;
  // At most once per second: the outage lasted (up - killed) + the reconnection wait.
  const double outage_s = double(now_ns() - killed) / 1e9;
  EXPECT_LE(double(counts.size()), 1 + outage_s) << all;
  for (size_t i = 1; i < counts.size(); ++i) {
    EXPECT_GT(counts[i], counts[i - 1] + 1) << all;  // failures in between were not said
    EXPECT_GE(waits[i], waits[i - 1]) << all;
    EXPECT_LE(waits[i], 0.4) << all;
  }
  EXPECT_EQ(waits.back(), 0.4) << all;
  // Attempts: one per wait (0.1, 0.2, then 0.4 s, each rounded up to the 200 ms poll), so about
  // one every 0.4 s of the outage, not one every poll (5 a second).
  EXPECT_GT(attempts, counts.back()) << all;
  EXPECT_LE(double(attempts), 2 + outage_s / 0.4) << all;
  EXPECT_TRUE(published(5'000'000'000)) << "members not published again after the restart\n" << all;
}

// The first cross-node sweep (docs/replay.md, "Across nodes"): the leader writes its first plan
// as soon as every node's members are in the store, not after the 5 s pacing interval. Node 0's
// worker (the leader, with the observer's 5 s period) publishes its members; node 1's appear in
// the store 1.5 s later (after the leader's first look found only node 0's: the old rule then
// waited 5 s). The first plan must follow node 1's members within 2 s and hold every pair across
// the nodes; the next plan keeps the pacing (none within the following 3 s).
TEST(ReplayCross, FirstPlanFollowsTheLastObserversMembersWithinTwoSeconds) {
  TempDir dir;
  const std::string spec = "file:" + dir.path() + "/rdzv";
  ReplayOptions opt;
  opt.enabled = true;
  opt.nodes = 2;
  opt.rdzv = spec;
  opt.program = {dir.path() + "/scout-replay-never-started"};  // the plan's cycle fails at once
  ASSERT_EQ(opt.cross_period_ns, 5'000'000'000);
  std::atomic<uint64_t> next_cycle{1};
  ReplayWorker worker(opt, "job-1", dir.path(), 0, &next_cycle, nullptr);
  ASSERT_TRUE(worker.across_nodes());
  worker.set_members(two_nodes()[0]);
  std::unique_ptr<net::KeyStore> look = net::open_key_store(spec);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_FALSE(look->get_if("scout/job-1/replay/plan/latest").has_value()) << "a plan before node 1 published";
  look->put("scout/job-1/replay/members/1", to_json(two_nodes()[1]).dump());
  const int64_t met = now_ns();
  std::optional<std::string> latest;
  while (!latest && now_ns() - met < 10'000'000'000) {
    latest = look->get_if("scout/job-1/replay/plan/latest");
    if (!latest) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double after_s = double(now_ns() - met) / 1e9;
  ASSERT_TRUE(latest.has_value()) << "no plan within 10 s of the observers meeting";
  std::printf("first plan %.3f s after the last observer's members\n", after_s);
  EXPECT_LT(after_s, 2.0);
  CrossPlan plan;
  std::string err;
  ASSERT_TRUE(from_json(nlohmann::json::parse(*look->get_if("scout/job-1/replay/plan/" + *latest)), &plan, &err))
      << err;
  EXPECT_EQ(plan.pairs, (Pairs{{0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 0}, {2, 1}, {3, 0}, {3, 1}}));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(look->get_if("scout/job-1/replay/plan/latest"), latest) << "the second plan did not keep the pacing";
}

TEST(ReplayCross, ObserversMeetWhenEveryNodeHasPublishedRanks) {
  std::vector<NodeMembers> all = two_nodes();
  EXPECT_TRUE(observers_met(all, 2));
  EXPECT_FALSE(observers_met(all, 3));
  EXPECT_FALSE(observers_met({all[0]}, 2));
  all[1].ranks.clear();  // published before its ranks appeared
  EXPECT_FALSE(observers_met(all, 2));
}

}  // namespace
}  // namespace scout::obs
