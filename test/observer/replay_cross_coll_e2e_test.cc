// End to end, collective recipes across nodes (docs/replay.md, "Across nodes"): two observers
// (node0: ranks 0-3, node1: ranks 4-7 of one data-parallel job, --tp 1 --pp 1, 300 steps of
// 40 ms) meet in a file rendezvous. The job's communicators span both nodes, so no collective
// class of theirs can run inside one node: the leader's cross-node plan carries them, the node
// of rank 0 makes each class's bootstrap id, both nodes run their four members and the leader
// judges all eight. A healthy job: both classes the job issued (the world AllReduce and
// Broadcast) pass on all eight members, on the leader and on node1. A link corrupting what rank
// 4 receives from rank 3, its ring predecessor in the class's order (linksdc:rank=4,peer=3;
// scout-sim: such a link flips a bit of every collective result 4 receives from 3): both classes
// fail with sdc on rank 4, check `coll`, and nobody else (the link sweep names the same link).
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>
#include <tuple>

#include "observer/model/replay_cycle.h"
#include "observer/store/reader.h"
#include "test/support/node_observers.h"
#include "test/support/settle.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::Subprocess;
using scout::testing::TempDir;

const std::string kAllReduce = "coll:AllReduce:float32:65536:LL128:[0,1,2,3,4,5,6,7]";
const std::string kBroadcast = "coll:Broadcast:int8:32768:LL128:[0,1,2,3,4,5,6,7]";

struct CrossRun {
  std::vector<scout::obs::ReplayCycleRecord> cross[2];  // each node's cross-node cycles
  std::vector<scout::obs::Finding> findings;            // the leader's
  std::string errs;
};

// Cross-node cycles of a store whose plan carried a collective recipe.
std::vector<scout::obs::ReplayCycleRecord> coll_cycles(const std::string& path) {
  std::vector<scout::obs::ReplayCycleRecord> out;
  try {
    for (auto& c : scout::store::StoreReader::open(path)->replay_cycles()) {
      if (c.trigger != "cross") continue;
      for (const auto& r : c.detail.value("recipes", nlohmann::json::array()))
        if (r.is_string() && r.get<std::string>().rfind("coll:", 0) == 0) {
          out.push_back(std::move(c));
          break;
        }
    }
  } catch (const std::exception&) {
    // not created yet
  }
  return out;
}

CrossRun run(const std::string& job, const std::vector<std::string>& faults) {
  TempDir dir;
  const std::map<std::string, std::string> env = scout::testing::node_observer_env(dir.path());
  auto store = [&](int k) { return dir.path() + "/node-" + std::to_string(k) + ".db"; };
  std::vector<std::unique_ptr<Subprocess>> observers =
      scout::testing::start_node_observers(job, {store(0), store(1)}, "file:" + dir.path() + "/rdzv", env);
  std::vector<std::string> argv = {build_path("bin/scout-sim"), "--job", job, "--truth", dir.path() + "/truth.jsonl",
                                   "--ranks", "8", "--tp", "1", "--pp", "1", "--nodes", "2", "--steps", "300",
                                   "--step-ms", "40"};
  for (const std::string& f : faults) {
    argv.push_back("--fault");
    argv.push_back(f);
  }
  ProcessResult sim = scout::testing::run_process(argv, env, 300);
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  // Both nodes store a cycle of a plan with collectives (the job ran 12 s: plans every 5 s).
  scout::testing::wait_then_settle([&] { return !coll_cycles(store(0)).empty() && !coll_cycles(store(1)).empty(); },
                                   std::chrono::seconds(20));
  CrossRun out;
  for (auto& o : observers) {
    ProcessResult r = o->stop(SIGTERM, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    out.errs += r.err;
  }
  for (int k = 0; k < 2; ++k) out.cross[k] = coll_cycles(store(k));
  out.findings = scout::store::StoreReader::open(store(0))->findings();
  return out;
}

// recipe id -> outcome of a cycle's verdict, for the collective recipes.
std::map<std::string, std::string> coll_outcomes(const scout::obs::ReplayCycleRecord& c) {
  std::map<std::string, std::string> out;
  for (const auto& r : c.detail["verdict"]["recipes"])
    if (r["kind"] == "coll") out[r["recipe"].get<std::string>()] = r["outcome"].get<std::string>();
  return out;
}

// (rank, recipe) -> status of every sample of a recipe, per round.
std::map<std::pair<int, int>, std::string> samples_of(const scout::obs::ReplayCycleRecord& c, const std::string& id) {
  std::map<std::pair<int, int>, std::string> out;
  for (const auto& s : c.detail["samples"])
    if (s["recipe"] == id) out[{s["global_rank"].get<int>(), s["round"].get<int>()}] = s["status"].get<std::string>();
  return out;
}

// Every (rank, round) of 8 members and 2 rounds as "ok".
std::map<std::pair<int, int>, std::string> all_ok(int from, int to) {
  std::map<std::pair<int, int>, std::string> out;
  for (int g = from; g <= to; ++g)
    for (int round = 0; round < 2; ++round) out[{g, round}] = "ok";
  return out;
}

// The verdict's sdc entries as (rank, check, recipe).
std::set<std::tuple<int, std::string, std::string>> sdc_of(const scout::obs::ReplayCycleRecord& c) {
  std::set<std::tuple<int, std::string, std::string>> out;
  for (const auto& s : c.detail["verdict"]["sdc"])
    out.insert({s["global_rank"].get<int>(), s["check"].get<std::string>(), s["recipe"].get<std::string>()});
  return out;
}

TEST(ReplayCrossCollEndToEnd, CollectiveClassesSpanningTwoNodesAreReplayedAcrossThemAndPass) {
  CrossRun r = run("xcoll", {});
  ASSERT_FALSE(r.cross[0].empty()) << r.errs;
  ASSERT_FALSE(r.cross[1].empty()) << r.errs;
  for (const auto& c : r.cross[0]) {
    EXPECT_EQ(c.outcome, "pass") << c.detail.dump();
    EXPECT_EQ(coll_outcomes(c), (std::map<std::string, std::string>{{kAllReduce, "pass"}, {kBroadcast, "pass"}}))
        << c.detail["verdict"].dump();
    // The leader holds every member's samples: its own four and node1's four, both rounds.
    EXPECT_EQ(samples_of(c, kAllReduce), all_ok(0, 7)) << c.detail["samples"].dump();
    EXPECT_EQ(samples_of(c, kBroadcast), all_ok(0, 7));
    // 32 directed pairs across the nodes, the 2 classes and the GEMM voted across the nodes
    EXPECT_EQ(c.detail["recipes"].size(), 35u);
  }
  for (const auto& c : r.cross[1]) {  // node1 runs its own members and judges them
    EXPECT_EQ(c.outcome, "pass") << c.detail.dump();
    EXPECT_EQ(coll_outcomes(c), (std::map<std::string, std::string>{{kAllReduce, "pass"}, {kBroadcast, "pass"}}));
    // It reads every node's samples, as the plan votes a GEMM across the nodes (docs/replay.md,
    // "Across nodes"), so it holds all 8 members' too.
    EXPECT_EQ(samples_of(c, kAllReduce), all_ok(0, 7)) << c.detail["samples"].dump();
  }
  EXPECT_TRUE(r.findings.empty()) << r.findings.size() << " findings\n" << r.errs;
}

TEST(ReplayCrossCollEndToEnd, LinkCorruptingWhatRankFourReceivesFailsTheCollectivesWithSdcOnIt) {
  CrossRun r = run("xcollsdc", {"linksdc:rank=4,peer=3"});
  ASSERT_FALSE(r.cross[0].empty()) << r.errs;
  const std::set<std::tuple<int, std::string, std::string>> want = {
      {4, "coll", kAllReduce}, {4, "coll", kBroadcast}, {4, "link", "link:3->4"}};
  for (const auto& c : r.cross[0]) {
    EXPECT_EQ(c.outcome, "fail") << c.detail.dump();
    EXPECT_EQ(coll_outcomes(c), (std::map<std::string, std::string>{{kAllReduce, "fail"}, {kBroadcast, "fail"}}));
    EXPECT_EQ(sdc_of(c), want) << c.detail["verdict"]["sdc"].dump();
    EXPECT_EQ(samples_of(c, kAllReduce), all_ok(0, 7));
  }
  // One finding on the leader: replay's sdc on rank 4, a rank of node1, named by its host and
  // pid, with the cycle's three checks (its first a collective's: they come before the links) and
  // the sender of the corrupting link as its peer.
  ASSERT_EQ(r.findings.size(), 1u) << r.errs;
  const scout::obs::Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, scout::obs::FindingKind::kSdc) << f.summary;
  EXPECT_EQ(f.evidence.value("source", ""), "replay");
  EXPECT_EQ(f.evidence.value("check", ""), "coll");
  std::set<std::tuple<int, std::string, std::string>> checks;
  for (const auto& c : f.evidence["checks"]) checks.insert({4, c["check"], c["recipe"]});
  EXPECT_EQ(checks, want) << f.evidence.dump();
  ASSERT_EQ(f.suspects.size(), 1u);
  EXPECT_EQ(f.suspects[0].global_rank, 4);
  EXPECT_EQ(f.suspects[0].host, "node1");
  EXPECT_GT(f.suspects[0].pid, 0);
  ASSERT_TRUE(f.peer.has_value());
  EXPECT_EQ(f.peer->global_rank, 3);
  EXPECT_EQ(f.peer->host, "node0");
}

}  // namespace
