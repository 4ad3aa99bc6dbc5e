// End to end, replay across nodes with several observers (docs/replay.md, "Across nodes"):
// scout-sim runs an emulated job on several hosts, one scout-observer per host (--host node<k>
// --node-rank k, a file rendezvous), and a hardware fault that only a measurement across hosts can
// localize:
//   - gpusdc on a node with 2 GPUs of a 4-node job: the node's own GEMM vote has no strict
//     majority (2 GPUs that disagree), so only the vote across nodes names the GPU;
//   - linksdc between two hosts in a data-parallel job: no point-to-point traffic crosses that
//     link, only collectives in which the sender is not the receiver's ring predecessor, so only
//     the link recipe across the hosts names it;
//   - slowlink between two hosts from the first step of a short job: every member of the group
//     sees the same slowdown; the first cross-node sweep, made as soon as the observers have met,
//     names it within 5 s of the fault's start (measured from the truth file's time).
// Every test compares all the findings of every node's store with the expected ones exactly.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <thread>

#include "common/clock.h"
#include "observer/store/reader.h"
#include "test/support/node_observers.h"
#include "test/support/settle.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using scout::testing::build_path;
using scout::testing::Named;
using scout::testing::named;
using scout::testing::ProcessResult;
using scout::testing::show;
using scout::testing::Subprocess;
using scout::testing::TempDir;

struct Outcome {
  std::vector<scout::obs::Finding> leader;  // node 0's findings
  std::multiset<Named> found;               // every node's findings
  std::vector<std::vector<scout::obs::ReplayCycleRecord>> cycles;  // per node
  std::vector<nlohmann::json> truth;                               // the truth file's lines
  int64_t done_wall_ns = 0;  // when the leader's store first held what `done` waits for (0 never)
  std::string logs;
};

// The job `job` of scout-sim (`sim_args` after --job/--truth, faults included) under `nodes`
// observers; `done` says when the leader's findings hold what the test waits for (polled every
// 100 ms while the job runs and up to 20 s after, then the settle time).
Outcome run(const std::string& job, int nodes, const std::vector<std::string>& sim_args,
            const std::function<bool(const std::vector<scout::obs::Finding>&)>& done) {
  TempDir dir;
  const std::map<std::string, std::string> env = scout::testing::node_observer_env(dir.path());
  auto store = [&](int k) { return dir.path() + "/node-" + std::to_string(k) + ".db"; };
  std::vector<std::string> stores;
  for (int k = 0; k < nodes; ++k) stores.push_back(store(k));
  std::vector<std::unique_ptr<Subprocess>> observers =
      scout::testing::start_node_observers(job, stores, "file:" + dir.path() + "/rdzv", env);
  std::vector<std::string> argv = {build_path("bin/scout-sim"), "--job", job, "--truth", dir.path() + "/truth.jsonl"};
  argv.insert(argv.end(), sim_args.begin(), sim_args.end());
  Subprocess sim(argv, env);
  Outcome o;
  auto check = [&] {
    if (o.done_wall_ns == 0 && done(scout::testing::stored_findings(store(0)))) o.done_wall_ns = scout::shm::wall_ns();
    return o.done_wall_ns != 0;
  };
  while (sim.running()) {
    check();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ProcessResult s = sim.wait_from_now(30);
  EXPECT_EQ(s.exit_code, 0) << s.err;
  scout::testing::wait_then_settle(check, std::chrono::seconds(20));
  for (int k = 0; k < nodes; ++k) {
    ProcessResult r = observers[k]->stop(SIGTERM, 120);
    EXPECT_EQ(r.exit_code, 0) << "observer " << k << ": " << r.err;
    o.logs += "--- observer " + std::to_string(k) + "\n" + r.err;
  }
  std::vector<scout::obs::Finding> all;
  for (int k = 0; k < nodes; ++k) {
    auto reader = scout::store::StoreReader::open(store(k));
    std::vector<scout::obs::Finding> fs = reader->findings();
    if (k == 0) o.leader = fs;
    all.insert(all.end(), fs.begin(), fs.end());
    o.cycles.push_back(reader->replay_cycles());
  }
  o.found = named(all);
  std::ifstream in(dir.path() + "/truth.jsonl");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) o.truth.push_back(nlohmann::json::parse(line));
  return o;
}

// Replay's sdc findings of a cross-node cycle.
bool cross_sdc(const std::vector<scout::obs::Finding>& fs) {
  for (const auto& f : fs)
    if (f.kind == scout::obs::FindingKind::kSdc && f.evidence.value("source", "") == "replay" &&
        f.evidence.value("trigger", "") == "cross")
      return true;
  return false;
}

// The only finding of `fs` of kind `k`, else null.
const scout::obs::Finding* only(const std::vector<scout::obs::Finding>& fs, scout::obs::FindingKind k) {
  const scout::obs::Finding* f = nullptr;
  int n = 0;
  for (const auto& x : fs)
    if (x.kind == k) {
      f = &x;
      n++;
    }
  return n == 1 ? f : nullptr;
}

// 4 hosts, 2 ranks each (TP 2 inside a host, DP 4 across hosts). Rank 5 (node2) computes wrong
// GEMMs and corrupts its collective inputs (every member of an AllReduce then gets the same wrong
// result, so live consensus agrees). node2's own GEMM vote is 1 against 1: no strict majority.
// The leader's plan votes the GEMM across the 8 GPUs of one class: 7 against 1, rank 5 named.
TEST(ReplayCrossEndToEnd, GpusdcOnATwoGpuNodeIsOutVotedAcrossNodes) {
  Outcome o = run("xgemm", 4,
                  {"--ranks", "8", "--tp", "2", "--pp", "1", "--nodes", "4", "--steps", "300", "--step-ms", "40",
                   "--fault", "gpusdc:rank=5,step=10"},
                  cross_sdc);
  EXPECT_EQ(o.found, (std::multiset<Named>{{"sdc", {5}}})) << show(o.found) << "\n" << o.logs;
  const scout::obs::Finding* f = only(o.leader, scout::obs::FindingKind::kSdc);
  ASSERT_NE(f, nullptr) << o.logs;
  EXPECT_EQ(f->verdict, scout::obs::Verdict::kAttributed);
  EXPECT_EQ(f->evidence["source"], "replay");
  EXPECT_EQ(f->evidence["trigger"], "cross");
  EXPECT_EQ(f->evidence["check"], "gemm-vote");
  ASSERT_EQ(f->suspects.size(), 1u);
  EXPECT_EQ(f->suspects[0].global_rank, 5);
  EXPECT_EQ(f->suspects[0].host, "node2");
  EXPECT_GT(f->suspects[0].pid, 0);
  EXPECT_EQ(f->suspects[0].gpu, "GPU-sim-node2-1");  // node2's second device
  EXPECT_FALSE(f->peer.has_value());
  // The vote: 7 GPUs of 4 nodes in the majority, rank 5 alone outside it.
  const nlohmann::json& groups = f->evidence["votes"]["groups"];
  ASSERT_EQ(groups.size(), 2u) << f->evidence.dump();
  EXPECT_EQ(groups[0]["voters"], nlohmann::json({0, 1, 2, 3, 4, 6, 7})) << f->evidence.dump();
  EXPECT_EQ(groups[1]["voters"], nlohmann::json({5})) << f->evidence.dump();
  EXPECT_NE(f->summary.find("rank 5 (node2, pid "), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("across nodes"), std::string::npos) << f->summary;
  // Every node's record of a cross cycle that voted after the fault began says fail, never pass:
  // certification reads each node's own cycles (docs/certification.md, "Replay").
  for (size_t k = 0; k < o.cycles.size(); ++k) {
    size_t failed = 0;
    for (const auto& c : o.cycles[k])
      if (c.trigger == "cross" && c.detail["verdict"].contains("sdc") && !c.detail["verdict"]["sdc"].empty()) {
        EXPECT_EQ(c.outcome, "fail") << "node " << k << ": " << c.detail.dump();
        ++failed;
      }
    EXPECT_GE(failed, 1u) << "node " << k << " stored no cross cycle with the vote\n" << o.logs;
  }
  ASSERT_EQ(o.truth.size(), 1u);
  EXPECT_EQ(o.truth[0]["kind"], "gpusdc");
  EXPECT_EQ(o.truth[0]["global_rank"], 5);
}

// 2 hosts, 8 ranks, data-parallel only (one group across both). The link from rank 1 (node0) to
// rank 6 (node1) corrupts what it carries; no message crosses it and rank 1 is not rank 6's ring
// predecessor, so the job's collectives pass intact. The cross-node link recipe 1->6 arrives
// corrupted: sdc on the receiver 6 (a rank of node1, named by its host and pid) with peer 1.
TEST(ReplayCrossEndToEnd, LinksdcBetweenTwoHostsIsAttributedToTheLink) {
  Outcome o = run("xlink", 2,
                  {"--ranks", "8", "--tp", "1", "--pp", "1", "--nodes", "2", "--steps", "300", "--step-ms", "40",
                   "--fault", "linksdc:rank=6,peer=1,step=10"},
                  cross_sdc);
  EXPECT_EQ(o.found, (std::multiset<Named>{{"sdc", {1, 6}}})) << show(o.found) << "\n" << o.logs;
  const scout::obs::Finding* f = only(o.leader, scout::obs::FindingKind::kSdc);
  ASSERT_NE(f, nullptr) << o.logs;
  EXPECT_EQ(f->verdict, scout::obs::Verdict::kAttributed);
  EXPECT_EQ(f->evidence["source"], "replay");
  EXPECT_EQ(f->evidence["trigger"], "cross");
  EXPECT_EQ(f->evidence["check"], "link");
  EXPECT_EQ(f->evidence["recipe"], "link:1->6");
  ASSERT_EQ(f->suspects.size(), 1u);
  EXPECT_EQ(f->suspects[0].global_rank, 6);
  EXPECT_EQ(f->suspects[0].host, "node1");
  EXPECT_GT(f->suspects[0].pid, 0);
  ASSERT_TRUE(f->peer.has_value());
  EXPECT_EQ(f->peer->global_rank, 1);
  EXPECT_EQ(f->peer->host, "node0");
  ASSERT_EQ(o.truth.size(), 1u);
  EXPECT_EQ(o.truth[0]["kind"], "linksdc");
  EXPECT_EQ(o.truth[0]["global_rank"], 6);
  EXPECT_EQ(o.truth[0]["peer"], 1);
}

// 2 hosts, 8 ranks, data-parallel only, a short job (150 steps of 40 ms, 6 s): the link between
// rank 1 (node0) and rank 6 (node1) is 5 ms slow from the first step. The finding naming both
// ends must be in the leader's store within 5 s of the truth file's time of the fault.
TEST(ReplayCrossEndToEnd, SlowlinkBetweenTwoHostsIsNamedWithinFiveSecondsOfItsStart) {
  auto slow_pair = [](const std::vector<scout::obs::Finding>& fs) {
    for (const auto& f : fs)
      if (f.kind == scout::obs::FindingKind::kSlowLink) return true;
    return false;
  };
  Outcome o = run("xslow", 2,
                  {"--ranks", "8", "--tp", "1", "--pp", "1", "--nodes", "2", "--steps", "150", "--step-ms", "40",
                   "--fault", "slowlink:rank=1,peer=6,step=0,ms=5"},
                  slow_pair);
  EXPECT_EQ(o.found, (std::multiset<Named>{{"slowlink", {1, 6}}})) << show(o.found) << "\n" << o.logs;
  ASSERT_EQ(o.truth.size(), 1u);
  EXPECT_EQ(o.truth[0]["kind"], "slowlink");
  ASSERT_NE(o.done_wall_ns, 0) << o.logs;
  const double after_s = double(o.done_wall_ns - o.truth[0]["time_ns"].get<int64_t>()) / 1e9;
  std::printf("slowlink between hosts named %.2f s after its start\n", after_s);
  EXPECT_LT(after_s, 5.0) << o.logs;
  const scout::obs::Finding* f = only(o.leader, scout::obs::FindingKind::kSlowLink);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence["class"], "link") << f->evidence.dump();
  EXPECT_EQ(f->evidence["source"], "replay") << f->evidence.dump();
  // The live network-link detector saw the pair too (ProxyStep, the far end by its comm rank):
  // replay's finding lists the spanning communicators holding both ends (the data-parallel group
  // and the world, where comm ranks are the global ones), so that one stands alone.
  ASSERT_TRUE(f->evidence.contains("comms")) << f->evidence.dump();
  ASSERT_EQ(f->evidence["comms"].size(), 2u) << f->evidence.dump();
  for (const auto& c : f->evidence["comms"]) {
    EXPECT_EQ(c["nranks"], 8);
    EXPECT_EQ(c["ranks"], nlohmann::json({1, 6}));
  }
}

}  // namespace
