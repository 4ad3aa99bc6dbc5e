// End to end at the observer's default settings (no --hang-timeout: 60 s; interval 250 ms):
// scout-sim runs an 8-rank job (TP 2, PP 2) through the real plugin while scout-observer watches.
//   - A rank that stops (hang fault) is named by a `stall` finding well before the hang timeout:
//     within 15 s of its stop by the rule of docs/observer.md ("Stalls"), named and in the store.
//   - A collective whose kernel never completes on one rank (kernelstall) is a `stall` of class
//     `stuck` within the same time, naming nobody; replay's cycle for it then names the rank
//     (its GPU's GEMM times out: stuck_e2e_test.cc measures how soon).
//   - A rank that pauses 20 s every 50 steps (pause fault) gives one closed `stall` (the first
//     pause) and nothing else: the second pause repeats it, and neither reaches the hang timeout.
// Across two nodes (scout-sim --nodes 2, pure data parallel: every communicator that waits spans
// both hosts; two observers, one per host, forming the observer network over a file rendezvous):
//   - a rank of node 1 that stops is named on the leader (node 0) by a `stall` within 15 s
//     (docs/observer-network.md, "Hangs across nodes": the nodes ask for a drill-down at their
//     stall threshold, not at the hang timeout);
//   - a rank of node 1 that pauses 8 s twice gives one closed `stall` on the leader and no hang.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/clock.h"
#include "observer/store/reader.h"
#include "test/support/observed_job.h"
#include "test/support/settle.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using scout::obs::Finding;
using scout::obs::FindingKind;
using scout::testing::build_path;
using scout::testing::stored_findings;
using scout::testing::Subprocess;
using scout::testing::TempDir;

// The job under one observer at the default settings (test/support/observed_job.h).
struct Job : scout::testing::LiveJob {
  using LiveJob::LiveJob;
  // Stops the observer (final pass) and returns what it printed on stderr.
  std::string stop_observer() {
    auto r = observer->stop(SIGTERM, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.err;
  }
};

std::string show(const std::vector<Finding>& fs) {
  std::string s;
  for (const auto& f : fs)
    s += "\n  " + std::string(to_string(f.kind)) + (f.open ? " open: " : " closed: ") + f.summary;
  return s;
}

// Two observers (node-ranks 0 and 1, hosts node0 and node1) at the default settings but for the
// network's address and join timeout, and scout-sim on the two hosts.
struct TwoNodeJob {
  TempDir dir;
  std::string job, truth;
  std::map<std::string, std::string> env;
  std::vector<std::unique_ptr<Subprocess>> observers;
  std::unique_ptr<Subprocess> sim;

  TwoNodeJob(const std::string& name, const std::vector<std::string>& sim_args) : job(name) {
    env = {{"SCOUT_SHM_DIR", dir.path()},
           {"SCOUT_STATE_DIR", dir.path() + "/state"},
           {"SCOUT_NET_HOST", "127.0.0.1"},
           {"SCOUT_NET_JOIN_TIMEOUT_MS", "30000"}};
    truth = dir.path() + "/truth.jsonl";
    for (int k = 0; k < 2; ++k) {
      observers.push_back(std::make_unique<Subprocess>(
          std::vector<std::string>{build_path("bin/scout-observer"), "--job", job, "--nodes", "2", "--node-rank",
                                   std::to_string(k), "--rdzv", "file:" + dir.path() + "/rdzv", "--host",
                                   "node" + std::to_string(k), "--store", store(k)},
          env));
    }
    std::vector<std::string> argv = {build_path("bin/scout-sim"), "--job", job, "--truth", truth, "--nodes", "2"};
    argv.insert(argv.end(), sim_args.begin(), sim_args.end());
    sim = std::make_unique<Subprocess>(argv, env);
  }
  std::string store(int k) const { return dir.path() + "/node-" + std::to_string(k) + ".db"; }
  std::vector<Finding> findings(int k) const { return stored_findings(store(k)); }
  std::vector<nlohmann::json> truth_lines() const { return scout::testing::truth_lines(truth); }
  // Stops both observers (final pass) and returns what they printed on stderr.
  std::string stop_observers() {
    std::string err;
    for (auto& o : observers) o->signal(SIGTERM);
    for (size_t k = 0; k < observers.size(); ++k) {
      auto r = observers[k]->wait_from_now(60);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      err += "--- observer " + std::to_string(k) + "\n" + r.err;
    }
    return err;
  }
};

// The first stall among `findings()` (polled every 50 ms for up to `seconds`) and the wall time
// (ns) it was seen; nullopt and 0 when none came. Returns after the settle time
// (test/support/settle.h), so that what the observer reports after the stall is seen too.
template <typename Findings>
std::pair<std::optional<Finding>, int64_t> first_stall(Findings findings, int seconds) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::pair<std::optional<Finding>, int64_t> out{std::nullopt, 0};
  while (!out.first && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (const auto& f : findings())
      if (f.kind == FindingKind::kStall) {
        out = {f, scout::shm::wall_ns()};
        break;
      }
  }
  std::this_thread::sleep_for(scout::testing::kSettle);
  return out;
}

TEST(StallEndToEnd, HangRootIsNamedByAStallWithinFifteenSeconds) {
  Job j("stallhang", {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "400", "--step-ms", "20", "--timeout", "40",
                      "--fault", "hang:rank=5,step=30"});
  auto [stall, seen_ns] = first_stall([&] { return j.findings(); }, 35);
  // The observer stops first: ranks killed under it would be crashes.
  std::string err = j.stop_observer();
  j.sim->signal(SIGINT);
  j.sim->wait(20);
  auto truth = j.truth_lines();
  ASSERT_EQ(truth.size(), 1u);
  ASSERT_TRUE(stall) << "no stall within 35 s:" << show(j.findings()) << "\n" << err;
  ASSERT_EQ(stall->suspects.size(), 1u);
  EXPECT_EQ(stall->suspects[0].global_rank, 5);
  const int64_t t0 = truth[0]["time_ns"].get<int64_t>();
  const double named_s = double(stall->evidence["named_ns"].get<int64_t>() - t0) / 1e9;
  const double seen_s = double(seen_ns - t0) / 1e9;
  std::printf("stall naming rank 5: named %.2f s, in the store %.2f s after it stopped (threshold %.0f ms)\n", named_s,
              seen_s, stall->evidence["threshold_ms"].get<double>());
  EXPECT_LT(named_s, 15.0);
  EXPECT_LT(seen_s, 15.0);
  EXPECT_GT(named_s, 2.9);  // never under the floor
  // One finding: the stall (the job was stopped before the hang timeout).
  auto all = j.findings();
  ASSERT_EQ(all.size(), 1u) << show(all);
  EXPECT_EQ(all[0].kind, FindingKind::kStall);
}

// Rank 5's kernel of tp2's AllReduce at step 30 starts and never completes (kernelstall): every
// rank of tp2 is inside it, its records name nobody, and the stuck collective is a `stall` of class
// `stuck` well before the hang timeout; replay's cycle for it then names rank 5.
TEST(StallEndToEnd, StuckCollectiveIsAStallWithinFifteenSeconds) {
  Job j("stallstuck", {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "400", "--step-ms", "20", "--timeout",
                       "40", "--fault", "kernelstall:rank=5,step=30"});
  auto [stall, seen_ns] = first_stall([&] { return j.findings(); }, 35);
  // The observer stops first: ranks killed under it would be crashes.
  std::string err = j.stop_observer();
  j.sim->signal(SIGINT);
  j.sim->wait(20);
  auto truth = j.truth_lines();
  ASSERT_EQ(truth.size(), 1u);
  ASSERT_TRUE(stall) << "no stall within 35 s:" << show(j.findings()) << "\n" << err;
  EXPECT_EQ(stall->comm_name, "tp2");
  EXPECT_EQ(stall->evidence["class"], "stuck") << stall->evidence.dump();
  EXPECT_EQ(stall->evidence["waiting_ranks"], nlohmann::json::array({4, 5})) << stall->evidence.dump();
  const int64_t t0 = truth[0]["time_ns"].get<int64_t>();
  const double named_s = double(stall->evidence["named_ns"].get<int64_t>() - t0) / 1e9;
  const double seen_s = double(seen_ns - t0) / 1e9;
  std::printf("stuck tp2 AllReduce: named %.2f s, in the store %.2f s after the kernel stalled (threshold %.0f ms)\n",
              named_s, seen_s, stall->evidence["threshold_ms"].get<double>());
  EXPECT_LT(named_s, 15.0);
  EXPECT_LT(seen_s, 15.0);
  EXPECT_GT(named_s, 2.9);  // never under the floor
  auto all = j.findings();
  ASSERT_EQ(all.size(), 1u) << show(all);
  ASSERT_EQ(all[0].suspects.size(), 1u) << show(all);  // named by replay since
  EXPECT_EQ(all[0].suspects[0].global_rank, 5);
  EXPECT_EQ(all[0].evidence["replay"]["verdict"], "gpu") << all[0].evidence.dump();
}

// Rank 5 stops before step 3 of a fresh job: every communicator is cold (a few progress gaps at
// most), but each has completed a few short operations, so its threshold is the 3 s floor (its
// cold basis, docs/observer.md "Stalls"): the stall names rank 5 within 5 s, not 10.
TEST(StallEndToEnd, ColdStallAtStepThreeIsNamedWithinFiveSeconds) {
  Job j("stallcold", {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "400", "--step-ms", "20", "--timeout", "40",
                      "--fault", "hang:rank=5,step=3"});
  auto [stall, seen_ns] = first_stall([&] { return j.findings(); }, 30);
  std::string err = j.stop_observer();
  j.sim->signal(SIGINT);
  j.sim->wait(20);
  auto truth = j.truth_lines();
  ASSERT_EQ(truth.size(), 1u);
  ASSERT_TRUE(stall) << "no stall within 30 s:" << show(j.findings()) << "\n" << err;
  ASSERT_EQ(stall->suspects.size(), 1u);
  EXPECT_EQ(stall->suspects[0].global_rank, 5);
  const int64_t t0 = truth[0]["time_ns"].get<int64_t>();
  const double named_s = double(stall->evidence["named_ns"].get<int64_t>() - t0) / 1e9;
  const double seen_s = double(seen_ns - t0) / 1e9;
  std::printf("cold stall naming rank 5 at step 3: named %.2f s, in the store %.2f s after it stopped (threshold %.0f "
              "ms, basis %s, %d gaps)\n",
              named_s, seen_s, stall->evidence["threshold_ms"].get<double>(),
              stall->evidence["rule"]["basis"].get<std::string>().c_str(), stall->evidence["rule"]["gaps"].get<int>());
  EXPECT_LT(stall->evidence["rule"]["gaps"].get<int>(), 16);  // cold
  EXPECT_EQ(stall->evidence["rule"]["basis"], "own");
  EXPECT_EQ(stall->evidence["threshold_ms"], 3000.0);
  EXPECT_LT(named_s, 5.0);
  EXPECT_LT(seen_s, 6.0);
  EXPECT_GT(named_s, 2.9);  // never under the floor
  auto all = j.findings();
  ASSERT_EQ(all.size(), 1u) << show(all);
  EXPECT_EQ(all[0].kind, FindingKind::kStall);
}

TEST(StallEndToEnd, RepeatedPausesGiveOneClosedStallAndNoHang) {
  Job j("stallpause", {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "120", "--step-ms", "20", "--timeout", "85",
                       "--fault", "pause:rank=0,every=50,s=20"});
  auto r = j.sim->wait(90);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::this_thread::sleep_for(scout::testing::kSettle);
  std::string err = j.stop_observer();
  auto truth = j.truth_lines();
  ASSERT_EQ(truth.size(), 2u);  // steps 50 and 100
  EXPECT_EQ(truth[0]["step"], 50);
  EXPECT_EQ(truth[1]["step"], 100);
  auto all = j.findings();
  ASSERT_EQ(all.size(), 1u) << show(all) << "\n" << err;
  std::printf("pauses at %.2f s and %.2f s; the stall began at %.2f s: %s\n", 0.0,
              double(truth[1]["time_ns"].get<int64_t>() - truth[0]["time_ns"].get<int64_t>()) / 1e9,
              double(all[0].first_seen_ns - truth[0]["time_ns"].get<int64_t>()) / 1e9, all[0].summary.c_str());
  EXPECT_EQ(all[0].kind, FindingKind::kStall);
  EXPECT_FALSE(all[0].open);
  ASSERT_EQ(all[0].suspects.size(), 1u);
  EXPECT_EQ(all[0].suspects[0].global_rank, 0);
}

}  // namespace

namespace {

// 4 ranks, pure data parallel, on two hosts (ranks 0, 1 on node0; 2, 3 on node1): rank 3 stops
// before step 300 (after some 6 s of steps, so the communicators' clocks are warm: 3 s threshold).
TEST(StallEndToEnd, AcrossTwoNodesTheLeaderNamesTheRootByAStallWithinFifteenSeconds) {
  TwoNodeJob j("xstallhang", {"--ranks", "4", "--tp", "1", "--steps", "2000", "--step-ms", "20", "--timeout", "60",
                              "--fault", "hang:rank=3,step=300"});
  auto [stall, seen_ns] = first_stall([&] { return j.findings(0); }, 45);
  // The observers stop first: ranks killed under them would be crashes.
  std::string err = j.stop_observers();
  j.sim->signal(SIGINT);
  j.sim->wait(20);
  auto truth = j.truth_lines();
  ASSERT_EQ(truth.size(), 1u);
  ASSERT_TRUE(stall) << "no stall on the leader within 45 s:" << show(j.findings(0)) << "\n" << err;
  ASSERT_EQ(stall->suspects.size(), 1u);
  EXPECT_EQ(stall->suspects[0].global_rank, 3);
  EXPECT_EQ(stall->suspects[0].host, "node1");
  const int64_t t0 = truth[0]["time_ns"].get<int64_t>();
  const double named_s = double(stall->evidence["named_ns"].get<int64_t>() - t0) / 1e9;
  const double seen_s = double(seen_ns - t0) / 1e9;
  std::printf(
      "across nodes, stall naming rank 3: named %.2f s, in the leader's store %.2f s after it stopped "
      "(threshold %.0f ms)\n",
      named_s, seen_s, stall->evidence["threshold_ms"].get<double>());
  EXPECT_EQ(stall->evidence["threshold_ms"], 3000.0);
  EXPECT_LT(named_s, 15.0);
  EXPECT_LT(seen_s, 15.0);
  EXPECT_GT(named_s, 2.9);  // never under the floor
  // One finding on the leader: the stall (the job was stopped before the hang timeout); node 1
  // names nothing itself (its ranks wait only in communicators spanning both hosts).
  auto all = j.findings(0);
  ASSERT_EQ(all.size(), 1u) << show(all);
  EXPECT_EQ(all[0].kind, FindingKind::kStall);
  EXPECT_TRUE(j.findings(1).empty()) << show(j.findings(1));
}

// The same job stopped before step 3 (every communicator cold, its operations short): the leader
// judges by the nodes' cold thresholds (3 s from their operations) and names rank 3 within 5 s.
TEST(StallEndToEnd, AcrossTwoNodesAColdStallAtStepThreeIsNamedWithinFiveSeconds) {
  TwoNodeJob j("xstallcold", {"--ranks", "4", "--tp", "1", "--steps", "2000", "--step-ms", "20", "--timeout", "60",
                              "--fault", "hang:rank=3,step=3"});
  auto [stall, seen_ns] = first_stall([&] { return j.findings(0); }, 40);
  std::string err = j.stop_observers();
  j.sim->signal(SIGINT);
  j.sim->wait(20);
  auto truth = j.truth_lines();
  ASSERT_EQ(truth.size(), 1u);
  ASSERT_TRUE(stall) << "no stall on the leader within 40 s:" << show(j.findings(0)) << "\n" << err;
  ASSERT_EQ(stall->suspects.size(), 1u);
  EXPECT_EQ(stall->suspects[0].global_rank, 3);
  const int64_t t0 = truth[0]["time_ns"].get<int64_t>();
  const double named_s = double(stall->evidence["named_ns"].get<int64_t>() - t0) / 1e9;
  const double seen_s = double(seen_ns - t0) / 1e9;
  std::printf("across nodes, cold stall naming rank 3 at step 3: named %.2f s, in the leader's store %.2f s after it "
              "stopped (threshold %.0f ms)\n",
              named_s, seen_s, stall->evidence["threshold_ms"].get<double>());
  EXPECT_EQ(stall->evidence["threshold_ms"], 3000.0);
  EXPECT_LT(named_s, 5.0);
  EXPECT_LT(seen_s, 6.0);
  EXPECT_GT(named_s, 2.9);
  auto all = j.findings(0);
  ASSERT_EQ(all.size(), 1u) << show(all);
  EXPECT_EQ(all[0].kind, FindingKind::kStall);
}

// Rank 3 (node1) sleeps 8 s before steps 300 and 600: the first pause is one stall, closed when it
// ends; the second repeats it (same rank, same point, as long) and is not reported; no hang.
TEST(StallEndToEnd, AcrossTwoNodesRepeatedPausesGiveOneClosedStallAndNoHang) {
  TwoNodeJob j("xstallpause", {"--ranks", "4", "--tp", "1", "--steps", "900", "--step-ms", "20", "--timeout", "85",
                               "--fault", "pause:rank=3,every=300,s=8"});
  auto r = j.sim->wait(90);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::this_thread::sleep_for(scout::testing::kSettle);
  std::string err = j.stop_observers();
  auto truth = j.truth_lines();
  ASSERT_EQ(truth.size(), 2u);  // steps 300 and 600
  EXPECT_EQ(truth[0]["step"], 300);
  EXPECT_EQ(truth[1]["step"], 600);
  auto all = j.findings(0);
  ASSERT_EQ(all.size(), 1u) << show(all) << "\n" << err;
  std::printf("across nodes, pauses at %.2f s and %.2f s; the stall began at %.2f s: %s\n", 0.0,
              double(truth[1]["time_ns"].get<int64_t>() - truth[0]["time_ns"].get<int64_t>()) / 1e9,
              double(all[0].first_seen_ns - truth[0]["time_ns"].get<int64_t>()) / 1e9, all[0].summary.c_str());
  EXPECT_EQ(all[0].kind, FindingKind::kStall);
  EXPECT_FALSE(all[0].open);
  ASSERT_EQ(all[0].suspects.size(), 1u);
  EXPECT_EQ(all[0].suspects[0].global_rank, 3);
  EXPECT_TRUE(j.findings(1).empty()) << show(j.findings(1));
}

}  // namespace
