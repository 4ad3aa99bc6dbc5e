// End to end across nodes on one machine: scout-sim runs an 8-rank job on 4 emulated hosts
// (--nodes 4: host node<k> holds global ranks 2k and 2k+1; TP groups inside a host, DP groups
// {0,2,4,6} and {1,3,5,7} across all four), while 4 scout-observer processes, one per host
// (--host node<k> --node-rank k), form the observer network through a rendezvous of their own:
// Gloo's FileStore in a temporary directory, then once more Gloo's RedisStore against a
// redis-server this test starts on a free port. Two faults on rank 7 (node 3): a corrupted
// receive buffer in a DP AllReduce (cross-node: only the digests can see it), then it stops before
// a later DP AllReduce (a hang whose waiters are on every node). The leader's store, read with
// `scout findings --json --store`, must name exactly what the sim's ground-truth file says
// (kind and global rank), and the other nodes' stores must hold nothing the leader lacks.
// Then, over redis: two SDCs in the cross-node `world` communicator a few digest rounds apart
// are both reported; and redis killed while an observer restarts: the channel re-forms once
// redis is back, `scout status` showing the network down and then connected again.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "test/net/proc_util.h"
#include "test/support/settle.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using scout::testing::build_path;
using scout::testing::Named;
using scout::testing::ProcessResult;
using scout::testing::read_truth;
using scout::testing::show;
using scout::testing::Subprocess;
using scout::testing::TempDir;

constexpr int kNodes = 4;

// `scout findings --json --store PATH`: one JSON object per line.
std::vector<nlohmann::json> findings(const std::string& store) {
  ProcessResult r =
      scout::testing::run_process({build_path("bin/scout"), "findings", "--json", "--store", store}, {}, 30);
  std::vector<nlohmann::json> out;
  if (r.exit_code != 0) return out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

std::multiset<Named> named(const std::vector<nlohmann::json>& fs) {
  std::multiset<Named> out;
  for (const auto& f : fs) {
    Named n{f["kind"].get<std::string>(), {}};
    for (const auto& s : f["suspects"]) n.ranks.insert(s["global_rank"].get<int>());
    out.insert(n);
  }
  return out;
}

struct Outcome {
  std::multiset<Named> truth, found;
  std::vector<nlohmann::json> leader;
  std::vector<std::vector<nlohmann::json>> others;
  std::string logs;
};

Outcome run(const std::string& job, const std::string& rdzv, const TempDir& dir) {
  const std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", dir.path() + "/shm"}, {"SCOUT_FP_BUDGET", "0"},
      {"SCOUT_NET_HOST", "127.0.0.1"},        {"SCOUT_NET_INTERVAL_MS", "100"},
      {"SCOUT_NET_DRILL_REPEAT", "5"},        {"SCOUT_NET_TIMEOUT_MS", "10000"},
      {"SCOUT_NET_JOIN_TIMEOUT_MS", "30000"}, {"SCOUT_OBSERVER_FP_TIMEOUT_S", "2"},
  };
  std::filesystem::create_directories(dir.path() + "/shm");
  auto store = [&](int k) { return dir.path() + "/node-" + std::to_string(k) + ".db"; };
  std::vector<std::unique_ptr<Subprocess>> observers;
  for (int k = 0; k < kNodes; ++k) {
    observers.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{build_path("bin/scout-observer"), "--job", job, "--nodes", std::to_string(kNodes),
                                 "--node-rank", std::to_string(k), "--rdzv", rdzv, "--host", "node" + std::to_string(k),
                                 "--hang-timeout", "1.5", "--interval", "50", "--store", store(k)},
        env));
  }
  // Rank 7 (node 3): operation 21 is the first DP AllReduce of step 2 (dp1, seqNumber 8), whose
  // receive buffer it corrupts; operation 45 opens the DP AllReduce group of step 5, which it never
  // enters. The job then stands still until the test ends it.
  Subprocess sim({build_path("bin/scout-sim"),
                  "--ranks",
                  "8",
                  "--tp",
                  "2",
                  "--nodes",
                  "4",
                  "--steps",
                  "12",
                  "--step-ms",
                  "20",
                  "--job",
                  job,
                  "--truth",
                  dir.path() + "/truth.jsonl",
                  "--timeout",
                  "60",
                  "--fault",
                  "sdc:rank=7,op=21",
                  "--fault",
                  "hang:rank=7,op=45"},
                 env);
  Outcome o;
  // Both findings, then the settle time: nothing else may come.
  scout::testing::wait_for_findings(store(0), 2, std::chrono::seconds(30));
  for (auto& p : observers) p->signal(SIGTERM);
  for (int k = 0; k < kNodes; ++k) {
    ProcessResult r = observers[k]->wait_from_now(60);
    EXPECT_EQ(r.exit_code, 0) << "observer " << k << ": " << r.err;
    o.logs += "--- observer " + std::to_string(k) + "\n" + r.err;
  }
  ProcessResult s = sim.stop(SIGTERM, 60);
  o.logs += "--- sim\n" + s.out + s.err;
  o.leader = findings(store(0));
  o.found = named(o.leader);
  for (int k = 1; k < kNodes; ++k) o.others.push_back(findings(store(k)));
  o.truth = read_truth(dir.path() + "/truth.jsonl");
  return o;
}

void check(const Outcome& o) {
  ASSERT_EQ(o.truth.size(), 2u) << o.logs;
  EXPECT_EQ(o.found, o.truth) << "leader found:" << show(o.found) << "\ntruth:" << show(o.truth) << "\n" << o.logs;
  for (const auto& f : o.leader) {
    EXPECT_EQ(f["verdict"], "attributed") << f.dump();
    ASSERT_EQ(f["suspects"].size(), 1u) << f.dump();
    EXPECT_EQ(f["suspects"][0]["host"], "node3") << f.dump();
    if (f["kind"] == "sdc") {
      EXPECT_EQ(f["comm"]["name"], "dp1");
      EXPECT_EQ(f["key"]["func"], "AllReduce");
      EXPECT_EQ(f["key"]["seq"], 8);
    }
    if (f["kind"] == "hang") {
      // Decided on the leader from every node's waits: rank 7 absent, ranks on all four nodes
      // waiting for it, directly (dp1, tp3) or through their TP peer.
      EXPECT_EQ(f["evidence"]["class"], "absent");
      EXPECT_EQ(f["evidence"]["waiting_ranks"], nlohmann::json({0, 1, 2, 3, 4, 5, 6})) << f.dump();
      EXPECT_EQ(f["evidence"]["chain"].size(), 7u) << f.dump();
    }
  }
  // Other nodes: nothing the leader does not hold (node 3 names rank 7 through tp3 itself).
  for (size_t k = 0; k < o.others.size(); ++k) {
    for (const auto& f : o.others[k]) {
      ASSERT_FALSE(f["suspects"].empty()) << "node " << k + 1 << ": " << f.dump();
      EXPECT_TRUE(o.found.count(Named{f["kind"].get<std::string>(), {f["suspects"][0]["global_rank"].get<int>()}}))
          << "node " << k + 1 << ": " << f.dump();
    }
  }
}

// `scout status [--json] --store PATH`.
std::string status_text(const std::string& store) {
  return scout::testing::run_process({build_path("bin/scout"), "status", "--store", store}, {}, 30).out;
}
nlohmann::json network_of(const std::string& store) {
  ProcessResult r =
      scout::testing::run_process({build_path("bin/scout"), "status", "--json", "--store", store}, {}, 30);
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("job") || !j["job"].is_object() || !j["job"].contains("network")) return {};
  return j["job"]["network"];
}

// Polls `pred` every 200 ms until it holds or `seconds` pass.
template <typename F>
bool wait_until(double seconds, F pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return pred();
}

// Four observers of `job` over `rdzv` (one per emulated host), as in run() above.
struct Observers {
  Observers(const std::string& job, const std::string& rdzv, const TempDir& dir, std::map<std::string, std::string> env)
      : job_(job), rdzv_(rdzv), dir_(dir), env_(std::move(env)) {
    std::filesystem::create_directories(dir.path() + "/shm");
    for (int k = 0; k < kNodes; ++k) procs.push_back(start(k));
  }
  std::unique_ptr<Subprocess> start(int k) {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{build_path("bin/scout-observer"), "--job", job_, "--nodes", std::to_string(kNodes),
                                 "--node-rank", std::to_string(k), "--rdzv", rdzv_, "--host",
                                 "node" + std::to_string(k), "--hang-timeout", "5", "--interval", "50", "--store",
                                 store(k)},
        env_);
  }
  std::string store(int k) const { return dir_.path() + "/node-" + std::to_string(k) + ".db"; }
  // SIGTERM to all, their exit codes checked; returns their logs.
  std::string stop() {
    std::string logs;
    for (auto& p : procs) p->signal(SIGTERM);
    for (int k = 0; k < kNodes; ++k) {
      ProcessResult r = procs[k]->wait_from_now(60);
      EXPECT_EQ(r.exit_code, 0) << "observer " << k << ": " << r.err;
      logs += "--- observer " + std::to_string(k) + "\n" + r.err;
    }
    return logs;
  }
  std::string job_, rdzv_;
  const TempDir& dir_;
  std::map<std::string, std::string> env_;
  std::vector<std::unique_ptr<Subprocess>> procs;
};

// scout-sim on 4 emulated hosts with a world Broadcast every step: 9 operations per step (tp
// AllReduce, AllGather, ReduceScatter, AllReduce; 4 dp AllReduces; the world Broadcast, operation
// 8 of the step), each `--fault sdc:rank=R,op=9 S + 8` corrupting rank R's copy of step S's
// world Broadcast.
std::unique_ptr<Subprocess> world_sdc_job(const std::string& job, const TempDir& dir,
                                          const std::map<std::string, std::string>& env, int steps,
                                          const std::vector<std::pair<int, int>>& rank_step) {
  std::vector<std::string> argv = {
      build_path("bin/scout-sim"), "--ranks",   "8",  "--tp",          "2", "--nodes", "4", "--steps",
      std::to_string(steps),       "--step-ms", "20", "--bcast-every", "1", "--job",   job, "--truth",
      dir.path() + "/truth.jsonl", "--timeout", "120"};
  for (auto [rank, step] : rank_step) {
    argv.push_back("--fault");
    argv.push_back("sdc:rank=" + std::to_string(rank) + ",op=" + std::to_string(9 * step + 8));
  }
  return std::make_unique<Subprocess>(argv, env);
}

// The leader's sdc findings as (global rank, communicator name, function) per finding.
std::multiset<std::tuple<int, std::string, std::string>> sdcs(const std::vector<nlohmann::json>& fs) {
  std::multiset<std::tuple<int, std::string, std::string>> out;
  for (const auto& f : fs) {
    if (f["kind"] != "sdc" || f["suspects"].size() != 1 || f["verdict"] != "attributed") continue;
    out.insert({f["suspects"][0]["global_rank"].get<int>(), f["comm"]["name"].get<std::string>(),
                f["key"]["func"].get<std::string>()});
  }
  return out;
}

std::map<std::string, std::string> net_env(const TempDir& dir) {
  return {{"SCOUT_SHM_DIR", dir.path() + "/shm"}, {"SCOUT_FP_BUDGET", "0"},
          {"SCOUT_NET_HOST", "127.0.0.1"},        {"SCOUT_NET_INTERVAL_MS", "100"},
          {"SCOUT_NET_TIMEOUT_MS", "10000"},      {"SCOUT_NET_JOIN_TIMEOUT_MS", "30000"},
          {"SCOUT_OBSERVER_FP_TIMEOUT_S", "2"},   {"SCOUT_NET_DRILL_REPEAT", ""}};
}

TEST(MultiNodeEndToEnd, FourObserversFileRendezvousLeaderNamesTheFaultsOfNodeThree) {
  TempDir dir;
  Outcome o = run("mnfile", "file:" + dir.path() + "/rdzv", dir);
  check(o);
}

TEST(MultiNodeEndToEnd, FourObserversRedisRendezvousLeaderNamesTheFaultsOfNodeThree) {
  TempDir dir;
  scout::net::testing::RedisServer redis(dir.path());
  if (!redis.ok()) GTEST_SKIP() << "redis rendezvous not tested: " << redis.why();
  Outcome o = run("mnredis", "redis:127.0.0.1:" + std::to_string(redis.port()), dir);
  check(o);
}

// Two SDCs in the cross-node `world` communicator, 9 steps apart (a few digest rounds, fewer than
// SCOUT_NET_DRILL_REPEAT's default 10): the first is drilled down at once, the second while the
// drill-down of world is put off; both must reach the leader's store, each naming its rank.
TEST(MultiNodeEndToEnd, TwoSdcsInTheCrossNodeWorldCommunicatorAreBothReported) {
  TempDir dir;
  scout::net::testing::RedisServer redis(dir.path());
  if (!redis.ok()) GTEST_SKIP() << "redis rendezvous not tested: " << redis.why();
  const auto env = net_env(dir);
  Observers obs("mnworld", "redis:127.0.0.1:" + std::to_string(redis.port()), dir, env);
  auto sim = world_sdc_job("mnworld", dir, env, 30, {{7, 3}, {2, 12}});
  const std::multiset<std::tuple<int, std::string, std::string>> want = {{7, "world", "Broadcast"},
                                                                         {2, "world", "Broadcast"}};
  wait_until(60, [&] { return std::filesystem::exists(obs.store(0)) && sdcs(findings(obs.store(0))) == want; });
  ProcessResult s = sim->wait(120);
  std::this_thread::sleep_for(scout::testing::kSettle);
  std::string logs = obs.stop() + "--- sim\n" + s.out + s.err;
  EXPECT_EQ(s.exit_code, 0) << logs;
  const auto leader = findings(obs.store(0));
  EXPECT_EQ(sdcs(leader), want) << logs;
  const auto truth = read_truth(dir.path() + "/truth.jsonl");
  EXPECT_EQ(truth, (std::multiset<Named>{{"sdc", {7}}, {"sdc", {2}}}));
  EXPECT_EQ(named(leader), truth) << "leader found:" << show(named(leader)) << "\n" << logs;
}

// Redis is killed while the channel of four observers runs, then observer 2 is killed and
// restarted: the survivors' channel fails and cannot re-form while redis is away, and the
// leader's `scout status` says so. Redis comes back empty on the same port: the channel re-forms
// (status: connected, re-formed), and the two cross-node SDCs of a job started then are both
// reported by the leader.
TEST(MultiNodeEndToEnd, RedisKilledThenAnObserverRestartedTheChannelReforms) {
  TempDir dir;
  auto redis = std::make_unique<scout::net::testing::RedisServer>(dir.path());
  if (!redis->ok()) GTEST_SKIP() << "redis rendezvous not tested: " << redis->why();
  const int port = redis->port();
  const auto env = net_env(dir);
  Observers obs("mnreform", "redis:127.0.0.1:" + std::to_string(port), dir, env);
  auto connected = [&](uint64_t min_formed) {
    nlohmann::json n = network_of(obs.store(0));
    return n.is_object() && n["connected"] == true && n["peers"] == kNodes - 1 && n["rounds"].get<uint64_t>() > 0 &&
           n["formed"].get<uint64_t>() >= min_formed;
  };
  ASSERT_TRUE(wait_until(60, [&] { return connected(1); })) << status_text(obs.store(0));

  redis->kill();
  obs.procs[2]->signal(SIGKILL);
  obs.procs[2]->wait(10);
  obs.procs[2] = obs.start(2);
  // The survivors' channel fails (observer 2 is gone) and cannot re-form without the rendezvous.
  ASSERT_TRUE(wait_until(60, [&] {
    nlohmann::json n = network_of(obs.store(0));
    return n.is_object() && n["connected"] == false;
  })) << status_text(obs.store(0));
  const std::string down = status_text(obs.store(0));
  EXPECT_NE(down.find("\nnetwork: node-rank 0 of 4, not connected since "), std::string::npos) << down;
  EXPECT_NE(down.find("\nwarning: the observer network is down: operations of communicators that span nodes are "
                      "not compared until it re-forms; last error: observer network: "),
            std::string::npos)
      << down;

  redis = std::make_unique<scout::net::testing::RedisServer>(dir.path(), port);
  ASSERT_TRUE(redis->ok()) << redis->why();
  ASSERT_TRUE(wait_until(60, [&] { return connected(2); })) << status_text(obs.store(0));
  const std::string up = status_text(obs.store(0));
  EXPECT_NE(up.find("\nnetwork: node-rank 0 of 4, connected to 3 peers (epoch "), std::string::npos) << up;
  EXPECT_EQ(up.find("network is down"), std::string::npos) << up;

  auto sim = world_sdc_job("mnreform", dir, env, 30, {{7, 3}, {2, 20}});
  const std::multiset<std::tuple<int, std::string, std::string>> want = {{7, "world", "Broadcast"},
                                                                         {2, "world", "Broadcast"}};
  wait_until(60, [&] { return sdcs(findings(obs.store(0))) == want; });
  ProcessResult s = sim->wait(120);
  std::this_thread::sleep_for(scout::testing::kSettle);
  std::string logs = obs.stop() + "--- sim\n" + s.out + s.err;
  const auto leader = findings(obs.store(0));
  EXPECT_EQ(sdcs(leader), want) << logs;
  EXPECT_EQ(named(leader), (std::multiset<Named>{{"sdc", {7}}, {"sdc", {2}}}))
      << "leader found:" << show(named(leader)) << "\n" << logs;
  nlohmann::json n = network_of(obs.store(0));
  EXPECT_GE(n["reforms"].get<uint64_t>(), 1u) << n.dump();
}

}  // namespace
