// End to end with replay on (the default): scout-sim runs an emulated 8-rank job (--tp 2 --pp 2,
// 300 steps of 40 ms) with a persistent hardware fault while scout-observer watches it and runs
// scout-replay on the emulated GPUs. What live consensus cannot localize must come out as
// attributed findings: a GPU computing wrong GEMMs (sdc on it, source replay), a link
// corrupting messages (sdc on the receiver, peer the sender), a slow GPU (straggler with cause
// "gpu") against a host-side straggler (cause "host"). A healthy run gives no finding and its
// replay cycles pass.
//
// Thresholds: straggler and slow-link minimums raised to 20 ms and the slow factor to 3 for the 2
// shared cores (run() below), fingerprints on every operation. Every test compares all the findings in the store, live and replay's, with the
// expected ones exactly (kind and ranks, counts included).
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "observer/detect/finding_util.h"
#include "observer/model/replay_cycle.h"
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
  std::vector<scout::obs::Finding> findings;
  std::vector<scout::obs::ReplayCycleRecord> cycles;
  std::multiset<Named> found, truth;
  ProcessResult sim;
  std::string observer_err;
};

// Findings replay made (evidence.source "replay"), as (kind, ranks named).
std::multiset<Named> from_replay(const std::vector<scout::obs::Finding>& fs) {
  std::vector<scout::obs::Finding> r;
  for (const auto& f : fs)
    if (f.evidence.is_object() && f.evidence.value("source", "") == "replay") r.push_back(f);
  return named(r);
}

// Runs the job under an observer; `done` says when the store holds what the test waits for
// (checked for up to 20 s after the job ended, then the settle time of test/support/settle.h).
Outcome run(const std::string& job, const std::vector<std::string>& faults,
            const std::function<bool(const std::vector<scout::obs::Finding>&)>& done) {
  TempDir dir;
  std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", dir.path()},
      {"SCOUT_STATE_DIR", dir.path() + "/state"},
      {"SCOUT_FP_BUDGET", "0"},
      {"SCOUT_OBSERVER_STRAGGLER_MIN_MS", "20"},
      {"SCOUT_OBSERVER_SLOW_MIN_MS", "20"},
      {"SCOUT_OBSERVER_SLOW_FACTOR", "3"},
  };
  const std::string store = dir.path() + "/state/" + job + "/node-0.db";
  Subprocess observer({build_path("bin/scout-observer"), "--job", job, "--hang-timeout", "5", "--interval", "50"}, env);
  std::vector<std::string> argv = {build_path("bin/scout-sim"),
                                   "--job",
                                   job,
                                   "--truth",
                                   dir.path() + "/truth.jsonl",
                                   "--ranks",
                                   "8",
                                   "--tp",
                                   "2",
                                   "--pp",
                                   "2",
                                   "--steps",
                                   "300",
                                   "--step-ms",
                                   "40"};
  for (const std::string& f : faults) {
    argv.push_back("--fault");
    argv.push_back(f);
  }
  Outcome o;
  o.sim = scout::testing::run_process(argv, env, 300);
  scout::testing::wait_then_settle([&] { return done(scout::testing::stored_findings(store)); },
                                   std::chrono::seconds(20));
  ProcessResult obs = observer.stop(SIGTERM, 120);
  o.observer_err = obs.err;
  EXPECT_EQ(obs.exit_code, 0) << obs.err;
  auto reader = scout::store::StoreReader::open(store);
  o.findings = reader->findings();
  o.cycles = reader->replay_cycles();
  o.found = named(o.findings);
  o.truth = scout::testing::read_truth(dir.path() + "/truth.jsonl");
  EXPECT_EQ(o.sim.exit_code, 0) << o.sim.err;
  return o;
}

// The only finding of kind `k` (suspect `rank` when >= 0), else null.
const scout::obs::Finding* only(const Outcome& o, scout::obs::FindingKind k, int rank = -1) {
  const scout::obs::Finding* f = nullptr;
  int n = 0;
  for (const auto& x : o.findings)
    if (x.kind == k && (rank < 0 || (!x.suspects.empty() && x.suspects[0].global_rank == rank))) {
      f = &x;
      n++;
    }
  return n == 1 ? f : nullptr;
}

bool has_replay_sdc(const std::vector<scout::obs::Finding>& fs) {
  for (const auto& f : fs)
    if (f.kind == scout::obs::FindingKind::kSdc && f.evidence.value("source", "") == "replay") return true;
  return false;
}

bool straggler_with_cause(const std::vector<scout::obs::Finding>& fs) {
  for (const auto& f : fs)
    if (f.kind == scout::obs::FindingKind::kStraggler && !f.suspects.empty() && f.suspects[0].global_rank == 6 &&
        f.evidence.value("cause", "unknown") != "unknown")
      return true;
  return false;
}

TEST(ReplayEndToEnd, GpuComputingWrongGemmsIsAttributedByReplay) {
  Outcome o = run("gpusdc", {"gpusdc:rank=5,step=20"}, has_replay_sdc);
  EXPECT_EQ(o.found, (std::multiset<Named>{{"sdc", {5}}})) << show(o.found) << "\n" << o.observer_err;
  EXPECT_EQ(from_replay(o.findings), (std::multiset<Named>{{"sdc", {5}}})) << show(o.found);
  const auto* f = only(o, scout::obs::FindingKind::kSdc);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, scout::obs::Verdict::kAttributed);
  EXPECT_EQ(f->evidence["source"], "replay");
  EXPECT_EQ(f->evidence["check"], "gemm-vote");
  EXPECT_EQ(f->suspects[0].gpu, "GPU-sim-node0-5");
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"gpusdc", {5}}}));
}

TEST(ReplayEndToEnd, CorruptingLinkNamesReceiverAndSender) {
  Outcome o = run("linksdc", {"linksdc:rank=2,peer=3,step=20"}, has_replay_sdc);
  EXPECT_EQ(o.found, (std::multiset<Named>{{"sdc", {2, 3}}})) << show(o.found) << "\n" << o.observer_err;
  EXPECT_EQ(from_replay(o.findings), (std::multiset<Named>{{"sdc", {2, 3}}})) << show(o.found);
  const auto* f = only(o, scout::obs::FindingKind::kSdc);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->suspects[0].global_rank, 2);
  ASSERT_TRUE(f->peer.has_value());
  EXPECT_EQ(f->peer->global_rank, 3);
  EXPECT_EQ(f->evidence["source"], "replay");
}

// A slow GPU computes its step twice as long: it arrives late at its first collective of every
// step (after the receive its pipeline peer posted long before, which passes its delay on
// without a wait: gap_before in observer/detect/straggler.h), and replay's GEMM timing names the
// GPU as the cause.
TEST(ReplayEndToEnd, SlowGpuIsTheOneStragglerFindingWithCauseGpu) {
  Outcome o = run("slowgpu", {"slowgpu:rank=6,factor=2,step=10"}, straggler_with_cause);
  EXPECT_EQ(o.found, (std::multiset<Named>{{"straggler", {6}}})) << show(o.found) << "\n" << o.observer_err;
  const auto* f = only(o, scout::obs::FindingKind::kStraggler, 6);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence["cause"], "gpu") << f->evidence.dump();
  // The log says of each cycle what `scout replay list` says: "slow" for one that passed but
  // timed GPU 6 slow, never "pass".
  int slow = 0;
  for (const auto& c : o.cycles) {
    const std::string line = "replay cycle " + std::to_string(c.cycle) + " (" + c.trigger + "): " +
                             scout::obs::outcome_word(c) + ", ";
    EXPECT_NE(o.observer_err.find(line), std::string::npos) << line << "\n" << o.observer_err;
    slow += scout::obs::outcome_word(c) == "slow";
  }
  EXPECT_GE(slow, 1) << o.observer_err;
}

TEST(ReplayEndToEnd, HostDelayIsTheOneStragglerFindingWithCauseHost) {
  Outcome o = run("hoststraggler", {"straggler:rank=6,step=10,ms=30"}, straggler_with_cause);
  EXPECT_EQ(o.found, (std::multiset<Named>{{"straggler", {6}}})) << show(o.found) << "\n" << o.observer_err;
  const auto* f = only(o, scout::obs::FindingKind::kStraggler, 6);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence["cause"], "host") << f->evidence.dump();
  // The number that puts the delay in the host: the GEMM replay measured on rank 6's GPU at its
  // class's median, exactly as the deciding cycle's verdict has it (normal_gpus).
  const auto& rp = f->evidence["replay"];
  ASSERT_TRUE(rp.is_object()) << f->evidence.dump();
  const scout::obs::ReplayCycleRecord* cycle = nullptr;
  for (const auto& c : o.cycles)
    if (c.cycle == rp["cycle"].get<uint64_t>()) cycle = &c;
  ASSERT_NE(cycle, nullptr) << rp.dump();
  nlohmann::json normal;
  for (const auto& g : cycle->detail["verdict"]["normal_gpus"])
    if (g["global_rank"] == 6) normal = g;
  ASSERT_TRUE(normal.is_object()) << cycle->detail["verdict"].dump();
  EXPECT_EQ(rp["recipe"], normal["recipe"]);
  EXPECT_EQ(rp["median_ms"].get<double>(), scout::obs::to_ms(normal["median_ns"].get<int64_t>()));
  ASSERT_EQ(rp["ms"].size(), normal["ns"].size());
  for (size_t i = 0; i < rp["ms"].size(); ++i)
    EXPECT_EQ(rp["ms"][i].get<double>(), scout::obs::to_ms(normal["ns"][i].get<int64_t>()));
  // Normal: within the outlier rule of its class (docs/replay.md), far from the 30 ms host delay.
  EXPECT_LT(rp["ms"][0].get<double>(), 2 * rp["median_ms"].get<double>()) << rp.dump();
}

TEST(ReplayEndToEnd, HealthyRunHasNoFindingAndPassingCycles) {
  Outcome o = run("healthy", {}, [](const std::vector<scout::obs::Finding>&) { return true; });
  EXPECT_TRUE(o.found.empty()) << show(o.found) << "\n" << o.observer_err;
  ASSERT_FALSE(o.cycles.empty()) << o.observer_err;
  for (const auto& c : o.cycles) EXPECT_EQ(c.outcome, "pass") << c.detail.dump();
}

// On demand: while a healthy job runs, `scout replay run` asks the observer for one cycle on ranks
// 0-3 with GEMM and link recipes and prints it (trigger "demand", passing, exit 0); the stored
// cycle carries the request's id and exactly those participants and recipes. A request naming no
// rank of this node is answered at once with why (inconclusive: exit 4).
TEST(ReplayEndToEnd, OnDemandCycleRunsTheRequestedRecipesOnTheRequestedRanks) {
  TempDir dir;
  std::map<std::string, std::string> env = {{"SCOUT_SHM_DIR", dir.path()},
                                            {"SCOUT_STATE_DIR", dir.path() + "/state"},
                                            {"SCOUT_JOB_ID", ""},
                                            {"TORCHELASTIC_RUN_ID", ""},
                                            {"SLURM_JOB_ID", ""},
                                            {"SCOUT_REPLAY_BUDGET", "0.0001"}};
  const std::string job = "demand", store = dir.path() + "/state/" + job + "/node-0.db";
  Subprocess observer({build_path("bin/scout-observer"), "--job", job, "--interval", "50"}, env);
  Subprocess sim({build_path("bin/scout-sim"), "--job", job, "--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "400",
                  "--step-ms", "40"},
                 env);
  // Wait until the observer knows the ranks (the store shows 8 of them).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool seen = false;
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    try {
      seen = std::filesystem::exists(store) && scout::store::StoreReader::open(store)->ranks().size() == 8;
    } catch (const std::exception&) {}
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(seen);
  ProcessResult r = scout::testing::run_process(
      {build_path("bin/scout"), "replay", "run", "--job", job, "--ranks", "0-3", "--recipes", "gemm,link", "--wait-s",
       "60"},
      env, 90);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("trigger demand, pass, backend auto\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  found: -\n"), std::string::npos) << r.out;
  ProcessResult none = scout::testing::run_process(
      {build_path("bin/scout"), "replay", "run", "--job", job, "--ranks", "99", "--wait-s", "60"}, env, 90);
  EXPECT_EQ(none.exit_code, 4) << none.out << none.err;
  EXPECT_NE(none.out.find("  error: none of the requested ranks runs on this node with a known GPU\n"),
            std::string::npos)
      << none.out;
  sim.signal(SIGTERM);
  sim.wait(30);
  ProcessResult obs = observer.stop(SIGTERM, 60);
  EXPECT_EQ(obs.exit_code, 0) << obs.err;
  std::vector<scout::obs::ReplayCycleRecord> demand;
  for (const auto& c : scout::store::StoreReader::open(store)->replay_cycles())
    if (c.trigger == "demand") demand.push_back(c);
  ASSERT_EQ(demand.size(), 2u);
  const auto& d = demand[0].detail;
  EXPECT_TRUE(d["request"].is_string());
  std::vector<int> ranks;
  for (const auto& p : d["participants"]) ranks.push_back(p["global_rank"].get<int>());
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2, 3}));
  // The default GEMM set (bf16 and fp32) and the 12 directed pairs among 4 ranks.
  size_t gemms = 0, links = 0;
  for (const auto& id : d["recipes"]) {
    const std::string s = id.get<std::string>();
    gemms += s.rfind("gemm:", 0) == 0;
    links += s.rfind("link:", 0) == 0;
  }
  EXPECT_EQ(gemms, 2u) << d["recipes"].dump();
  EXPECT_EQ(links, 12u) << d["recipes"].dump();
  EXPECT_EQ(d["recipes"].size(), 14u) << d["recipes"].dump();
  EXPECT_EQ(demand[1].outcome, "inconclusive");
}

// Two nodes (one observer each, a file rendezvous), one data-parallel group of 8 ranks across
// them (node0: ranks 0-3, node1: 4-7): every member of the group sees the same slowdown, so only
// a sweep of the pairs across the nodes can name the slow one. The leader's cross-node plan runs
// each pair's two ends on the two nodes' scout-replay processes (the sender's bootstrap id
// handed over through the rendezvous store) and names the pair 1-6 as slowlink class link with
// source replay, in the leader's store; node1 stores its own record of each cross cycle.
TEST(ReplayEndToEnd, SlowLinkBetweenTwoNodesIsNamedByCrossNodeReplay) {
  TempDir dir;
  const std::map<std::string, std::string> env = scout::testing::node_observer_env(dir.path());
  const std::string job = "xnode";
  auto store = [&](int k) { return dir.path() + "/node-" + std::to_string(k) + ".db"; };
  std::vector<std::unique_ptr<Subprocess>> observers =
      scout::testing::start_node_observers(job, {store(0), store(1)}, "file:" + dir.path() + "/rdzv", env);
  ProcessResult sim = scout::testing::run_process(
      {build_path("bin/scout-sim"), "--job", job, "--truth", dir.path() + "/truth.jsonl", "--ranks", "8", "--tp", "1",
       "--pp", "1", "--nodes", "2", "--steps", "300", "--step-ms", "40", "--fault",
       "slowlink:rank=1,peer=6,step=10,ms=5"},
      env, 300);
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  auto replay_link = [](const std::vector<scout::obs::Finding>& fs) {
    for (const auto& f : fs)
      if (f.kind == scout::obs::FindingKind::kSlowLink && f.evidence.value("source", "") == "replay") return true;
    return false;
  };
  scout::testing::wait_then_settle([&] { return replay_link(scout::testing::stored_findings(store(0))); },
                                   std::chrono::seconds(20));
  std::string errs;
  for (auto& o : observers) {
    ProcessResult r = o->stop(SIGTERM, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    errs += r.err;
  }
  auto leader = scout::store::StoreReader::open(store(0));
  std::vector<scout::obs::Finding> fs = leader->findings();
  EXPECT_EQ(named(fs), (std::multiset<Named>{{"slowlink", {1, 6}}})) << show(named(fs)) << "\n" << errs;
  EXPECT_EQ(from_replay(fs), (std::multiset<Named>{{"slowlink", {1, 6}}})) << show(named(fs));
  for (const auto& f : fs) {
    if (f.evidence.value("source", "") != "replay") continue;
    EXPECT_EQ(f.evidence["class"], "link");
    EXPECT_EQ(f.suspects[0].host, "node0");
    ASSERT_TRUE(f.peer.has_value());
    EXPECT_EQ(f.peer->host, "node1");
    EXPECT_GT(f.peer->pid, 0);
  }
  // Both stores hold the cross cycles: 32 directed pairs across the nodes (4 x 4, both ways), the
  // GEMM voted across the nodes (docs/replay.md, "Across nodes") and, once the nodes published
  // them, the job's two collective classes (replay_cross_coll_e2e_test).
  for (int k = 0; k < 2; ++k) {
    size_t cross = 0;
    for (const auto& c : scout::store::StoreReader::open(store(k))->replay_cycles()) {
      if (c.trigger != "cross") continue;
      ++cross;
      size_t links = 0, gemms = 0;
      for (const auto& id : c.detail["recipes"]) {
        const std::string r = id.get<std::string>();
        if (r.rfind("link:", 0) == 0)
          ++links;
        else if (r.rfind("gemm:", 0) == 0)
          ++gemms;
        else
          EXPECT_TRUE(r == "coll:AllReduce:float32:65536:LL128:[0,1,2,3,4,5,6,7]" ||
                      r == "coll:Broadcast:int8:32768:LL128:[0,1,2,3,4,5,6,7]")
              << r;
      }
      EXPECT_EQ(links, 32u) << c.detail.dump();
      EXPECT_EQ(gemms, 1u) << c.detail.dump();
      EXPECT_EQ(c.outcome, "pass") << c.detail.dump();
    }
    EXPECT_GE(cross, 1u) << "node " << k << "\n" << errs;
  }
  EXPECT_EQ(scout::testing::read_truth(dir.path() + "/truth.jsonl"), (std::multiset<Named>{{"slowlink", {1, 6}}}));
}

}  // namespace
