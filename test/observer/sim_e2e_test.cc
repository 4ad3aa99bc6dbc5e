// End to end: scout-sim runs an emulated 8-rank job through the real plugin while scout-observer
// watches it; the findings in the observer's store are compared with the sim's ground-truth
// file. For each fault kind the findings must be exactly the injected ones: same kind, same
// global rank (and the same pair for slowlink), nothing else. A healthy run of 200 steps gives no
// finding; two faults at once give two findings.
//
// The observer runs at its default thresholds (2 cores shared by 8 emulated ranks and other builds:
// its straggler and slow-link rules calibrate to that noise; the injected delays are 60 ms but for
// the 12 ms straggler), with a 1.5 s hang timeout and 50 ms passes; fingerprints are taken on every
// operation (SCOUT_FP_BUDGET=0) so NaN origin and SDC see the faulty one.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "observer/store/reader.h"
#include "test/support/observed_job.h"
#include "test/support/settle.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using scout::testing::build_path;
using scout::testing::Named;
using scout::testing::named;
using scout::testing::Outcome;
using scout::testing::ProcessResult;
using scout::testing::read_truth;
using scout::testing::show;
using scout::testing::Subprocess;
using scout::testing::TempDir;

// The job under an observer (test/support/observed_job.h).
Outcome run(const std::string& job, const std::vector<std::string>& sim_args, size_t expect, bool hung = false) {
  return scout::testing::observed_job(job, sim_args, expect, hung);
}

void expect_exact(const Outcome& o) {
  EXPECT_EQ(o.found, o.truth) << "found:" << show(o.found) << "\ntruth:" << show(o.truth) << "\nsim: " << o.sim.err
                              << "\nobserver:\n"
                              << o.observer_err;
}

// The observer judged every operation of the job (so that no finding says something) and found
// nothing.
TEST(SimEndToEnd, HealthyEightRanksTwoHundredStepsGiveNoFinding) {
  Outcome o = run("healthy", {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "200"}, 0);
  EXPECT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.ops, scout::testing::sim_ops_tp2_pp2(200));
  EXPECT_TRUE(o.truth.empty());
  EXPECT_TRUE(o.found.empty()) << "found:" << show(o.found) << "\n" << o.observer_err;
  // Segments appear complete: the observer never sees one half-created (docs/record-format.md).
  EXPECT_EQ(o.observer_err.find("segment rejected"), std::string::npos) << o.observer_err;
}

// Context parallelism (ring attention over each CP pair) and an interleaved pipeline (two model
// chunks per rank, the last stage handing back to the first): healthy, no finding; a rank that
// stops is named.
TEST(SimEndToEnd, ContextParallelInterleavedPipelineHealthyAndHang) {
  const std::vector<std::string> shape = {"--ranks", "16", "--tp", "2", "--cp", "2", "--pp", "2", "--vpp", "2"};
  std::vector<std::string> args = shape;
  args.insert(args.end(), {"--steps", "60"});
  Outcome h = run("cpvpp", args, 0);
  EXPECT_EQ(h.sim.exit_code, 0) << h.sim.err;
  // The observer saw the job: world, 8 tp, 8 cp and 8 pp communicators and 4 dp ones (the DP group
  // spans DP and CP: docs/scout-sim.md, "Rank layout"), each with completed operations.
  EXPECT_EQ(h.ops.size(), 1u + 8 + 8 + 8 + 4);
  for (const auto& [name, n] : h.ops) EXPECT_GT(n, 0u) << name;
  EXPECT_TRUE(h.found.empty()) << "found:" << show(h.found) << "\n" << h.observer_err;
  args = shape;
  // The hung job runs until the observer is stopped (with --timeout 4 a run on the loaded machine
  // ended before rank 6 reached step 6, and a job ended by its timeout kills ranks the observer
  // still watches: crashes).
  args.insert(args.end(), {"--steps", "20", "--timeout", "60", "--fault", "hang:rank=6,step=6"});
  Outcome o = run("cpvpphang", args, 1, true);
  EXPECT_EQ(o.sim.exit_code, 4) << o.sim.err;  // ended by the test's SIGTERM
  ASSERT_EQ(o.truth.size(), 1u) << o.sim.err;
  expect_exact(o);
}

// The straggler bar at default thresholds (no override): 12 ms late on a 50 ms step is named,
// and only that rank.
TEST(SimEndToEnd, TwelveMillisecondStragglerOnAFiftyMillisecondStepAtDefaults) {
  Outcome o = run("straggler12",
                  {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "100", "--step-ms", "50", "--fault",
                   "straggler:rank=3,ms=12,step=10"},
                  1);
  EXPECT_EQ(o.sim.exit_code, 0) << o.sim.err;
  expect_exact(o);
}

TEST(SimEndToEnd, SilentDataCorruptionIsAttributed) {
  Outcome o = run("sdc", {"--ranks", "8", "--tp", "4", "--steps", "12", "--fault", "sdc:rank=5,step=4"}, 1);
  ASSERT_EQ(o.truth.size(), 1u);
  expect_exact(o);
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].verdict, scout::obs::Verdict::kAttributed);
}

TEST(SimEndToEnd, DesyncIsAttributed) {
  Outcome o = run("desync", {"--ranks", "8", "--tp", "4", "--steps", "12", "--fault", "desync:rank=2,step=4"}, 1);
  ASSERT_EQ(o.truth.size(), 1u);
  expect_exact(o);
}

// In a TP group of two ranks one side cannot out-vote the other; the TP groups of the other
// replicas ran the same sequence and vote too (equivalent communicators found automatically).
TEST(SimEndToEnd, DesyncInATwoRankGroupIsAttributedByEquivalentGroups) {
  Outcome o =
      run("desync2", {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "12", "--fault", "desync:rank=2,step=9"}, 1);
  ASSERT_EQ(o.truth.size(), 1u);
  expect_exact(o);
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].verdict, scout::obs::Verdict::kAttributed);
  EXPECT_TRUE(o.findings[0].evidence.contains("class")) << o.findings[0].evidence.dump();
}

TEST(SimEndToEnd, NanOriginIsTheInjectedRank) {
  Outcome o = run("nan", {"--ranks", "8", "--tp", "4", "--steps", "12", "--fault", "nan:rank=6,step=3"}, 1);
  ASSERT_EQ(o.truth.size(), 1u);
  expect_exact(o);
}

TEST(SimEndToEnd, StragglerIsNamedNotItsVictims) {
  Outcome o =
      run("straggler",
          {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "6", "--fault", "straggler:rank=3,ms=60,step=1"}, 1);
  ASSERT_EQ(o.truth.size(), 1u);
  expect_exact(o);
}

TEST(SimEndToEnd, SlowLinkNamesBothEnds) {
  Outcome o =
      run("slowlink",
          {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "12", "--fault", "slowlink:rank=4,peer=5,ms=60"}, 1);
  ASSERT_EQ(o.truth.size(), 1u);
  expect_exact(o);
}

// Hung jobs run until the observer has been stopped (--timeout 60 only as a safety): a job ended by
// its timeout kills ranks the observer may still watch, crashes of their own.
TEST(SimEndToEnd, HangRootIsTheRankThatStopped) {
  Outcome o = run(
      "hang",
      {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "20", "--timeout", "60", "--fault", "hang:rank=5,step=6"},
      1, true);
  EXPECT_EQ(o.sim.exit_code, 4) << o.sim.err;  // ended by the test's SIGTERM
  ASSERT_EQ(o.truth.size(), 1u);
  expect_exact(o);
}

// One vocabulary for hangs: the same fault is named by the same operation in every run, the first
// one the root never entered in its program order (docs/observer.md, "One key per stopped rank"),
// which is the operation scout-sim's truth says it stopped before. Rank 3 (stage 0 of pp3, tp1)
// stops before the pipeline Send of step 10; its tp peer reaches the forward AllReduce about as
// early as its pp peer posts the receive, and before, one run in three named the AllReduce.
TEST(SimEndToEnd, HangNamesTheSameOperationInEveryRun) {
  for (int run_no = 0; run_no < 4; ++run_no) {
    Outcome o = run("samehang",
                    {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "40", "--step-ms", "20", "--fault",
                     "hang:rank=3,step=10"},
                    1, true);
    ASSERT_EQ(o.truth.size(), 1u);
    expect_exact(o);
    ASSERT_EQ(o.findings.size(), 1u) << "run " << run_no;
    const scout::obs::Finding& f = o.findings[0];
    EXPECT_EQ(f.kind, scout::obs::FindingKind::kHang) << "run " << run_no;
    // The truth line: comm pp3 (0x0736e179841bc98c), rank 3 is its comm rank 0, key Send #10 to peer 1.
    EXPECT_EQ(scout::obs::hex64(f.comm_hash), "0x0736e179841bc98c") << "run " << run_no << ": " << f.summary;
    EXPECT_EQ(f.comm_name, "pp3") << "run " << run_no;
    ASSERT_TRUE(f.key.has_value());
    EXPECT_EQ(f.key->func, "Send") << "run " << run_no << ": " << f.summary;
    EXPECT_EQ(f.key->seq, 10u) << "run " << run_no;
    EXPECT_NE(f.summary.find(" never entered Send 0->1 #10 of pp3 (0x0736e179841bc98c); 7 ranks wait"),
              std::string::npos)
        << "run " << run_no << ": " << f.summary;
  }
}

// The finding and the communicator table at the same moment, after a hang drill ended by itself
// (--idle-timeout killed every rank; the root named a stall at the 3 s threshold, then the hang at
// the 4 s timeout, as the observer's log says): the hang's communicator is "hung" as the finding says, every
// other communicator "dead" (never "active"), no rank running, and the root's recorded process
// state is "dead" (docs/observer.md, "Hangs"). Read from the store, `scout status`, `scout
// explain` and `scout report --html` while the observer still runs.
TEST(SimEndToEnd, HangFindingAndCommunicatorTableSayTheSameWordOnceTheJobDied) {
  TempDir dir;
  std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", dir.path()}, {"SCOUT_STATE_DIR", dir.path() + "/state"}, {"SCOUT_FP_BUDGET", "0"}};
  const std::string job = "deadhang", store = dir.path() + "/state/" + job + "/node-0.db";
  Subprocess observer(
      {build_path("bin/scout-observer"), "--job", job, "--hang-timeout", "4", "--interval", "50"}, env);
  ProcessResult sim = scout::testing::run_process(
      {build_path("bin/scout-sim"), "--job", job, "--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "40",
       "--step-ms", "20", "--idle-timeout", "8", "--fault", "hang:rank=3,step=10"},
      env, 120);
  ASSERT_EQ(sim.exit_code, 3) << sim.err;  // ended by --idle-timeout
  // Until the observer has seen every rank gone and written the communicators' states.
  auto settled = [&] {
    try {
      auto rd = scout::store::StoreReader::open(store);
      int dead = 0;
      for (const auto& r : rd->ranks()) dead += r.state == "dead";
      int active = 0;
      for (const auto& c : rd->comms()) active += c.state == "active";
      return dead == 8 && active == 0;
    } catch (const std::exception&) {
      return false;
    }
  };
  EXPECT_TRUE(scout::testing::wait_then_settle(settled, std::chrono::seconds(15)));
  auto rd = scout::store::StoreReader::open(store);
  const auto findings = rd->findings();
  std::map<std::string, std::string> states;
  for (const auto& c : rd->comms()) states[c.name] = c.state;
  ProcessResult st = scout::testing::run_process({build_path("bin/scout"), "status", "--store", store}, env, 30);
  ProcessResult ex = scout::testing::run_process({build_path("bin/scout"), "explain", "1", "--store", store}, env, 30);
  const std::string html = dir.path() + "/report.html";
  ProcessResult rp = scout::testing::run_process(
      {build_path("bin/scout"), "report", "--store", store, "--html", html}, env, 30);
  ProcessResult obs = observer.stop(SIGTERM, 30);
  EXPECT_EQ(obs.exit_code, 0) << obs.err;
  // Its log: the stall at the 3 s threshold, then the same finding as the hang at 4 s.
  EXPECT_NE(obs.err.find("scout-observer: finding 1 stall (attributed): rank 3 "), std::string::npos) << obs.err;
  EXPECT_NE(obs.err.find("scout-observer: finding 1 hang (was stall) (attributed): rank 3 "), std::string::npos)
      << obs.err;

  ASSERT_EQ(findings.size(), 1u) << show(named(findings));
  EXPECT_EQ(findings[0].kind, scout::obs::FindingKind::kHang);
  EXPECT_EQ(findings[0].comm_name, "pp3");
  EXPECT_EQ(findings[0].evidence["root"][0]["process"], "dead") << findings[0].evidence.dump();
  EXPECT_NE(findings[0].summary.find(" never entered Send 0->1 #10 of pp3 (0x0736e179841bc98c); 7 ranks wait (through 7 "
                                     "communicators) for it (the process has since exited)"),
            std::string::npos)
      << findings[0].summary;
  std::map<std::string, std::string> want;
  for (const char* k : {"tp", "pp", "dp"})
    for (int i = 0; i < 4; ++i) want[k + std::to_string(i)] = "dead";
  want["world"] = "dead";
  want["pp3"] = "hung";
  EXPECT_EQ(states, want);
  EXPECT_NE(st.out.find("; 0 running, 0 exited, 8 dead\n"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("communicators: 13 (1 hung, 12 dead)\n"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("\n  pp3    0x0736e179841bc98c      2      1  hung  "), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("  #1 hang attributed: rank 3 "), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("active"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find("stall"), std::string::npos) << st.out;
  EXPECT_EQ(ex.out.find("process running"), std::string::npos) << ex.out;
  EXPECT_NE(ex.out.find("(process dead)"), std::string::npos) << ex.out;
  EXPECT_EQ(rp.exit_code, 0) << rp.err;
  std::ifstream in(html);
  std::stringstream page;
  page << in.rdbuf();
  EXPECT_NE(page.str().find("1 hung, 12 dead"), std::string::npos);
}

TEST(SimEndToEnd, CrashIsTheRankThatDied) {
  Outcome o = run(
      "crash",
      {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "20", "--timeout", "60", "--fault", "crash:rank=2,step=5"},
      1, true);
  EXPECT_EQ(o.sim.exit_code, 4) << o.sim.err;  // its peers wait for it until the test's SIGTERM
  ASSERT_EQ(o.truth.size(), 1u);
  expect_exact(o);
}

TEST(SimEndToEnd, TwoFaultsAtOnceGiveTwoFindings) {
  Outcome o = run(
      "two",
      {"--ranks", "8", "--tp", "4", "--steps", "12", "--fault", "sdc:rank=1,step=3", "--fault", "desync:rank=6,step=5"},
      2);
  ASSERT_EQ(o.truth.size(), 2u);
  expect_exact(o);
}

// Point-to-point operations are counted and summed per directed pair: with --pp 2 each pipeline
// communicator carries one send each way per step (forward activations, backward gradients), so
// 20 steps give 40 completed operations and two pairs of 20, shown by `scout status` and
// `scout report`.
TEST(SimEndToEnd, PipelineSendsAndReceivesAreCountedPerPair) {
  TempDir dir;
  std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", dir.path()}, {"SCOUT_STATE_DIR", dir.path() + "/state"}, {"SCOUT_FP_BUDGET", "0"}};
  const std::string job = "p2ppairs", store = dir.path() + "/state/" + job + "/node-0.db";
  Subprocess observer({build_path("bin/scout-observer"), "--job", job, "--interval", "50"}, env);
  ProcessResult sim = scout::testing::run_process({build_path("bin/scout-sim"), "--job", job, "--ranks", "8", "--tp",
                                                   "2", "--pp", "2", "--steps", "20", "--step-ms", "10"},
                                                  env, 120);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto pp0 = [&]() -> std::optional<scout::obs::CommInfo> {
    for (const auto& c : scout::store::StoreReader::open(store)->comms())
      if (c.name == "pp0") return c;
    return std::nullopt;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (auto c = pp0(); c && c->p2p_complete >= 40) break;
    } catch (const std::exception&) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ProcessResult obs = observer.stop(SIGTERM, 30);
  EXPECT_EQ(obs.exit_code, 0) << obs.err;
  auto c = pp0();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->ops_complete, 40u);
  EXPECT_EQ(c->p2p_complete, 40u);
  std::vector<scout::obs::P2pPairInfo> pairs;
  for (const auto& p : scout::store::StoreReader::open(store)->p2p_pairs())
    if (p.comm_name == "pp0") pairs.push_back(p);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(std::make_pair(pairs[0].src_global, pairs[0].dst_global), std::make_pair(0, 4));
  EXPECT_EQ(std::make_pair(pairs[1].src_global, pairs[1].dst_global), std::make_pair(4, 0));
  for (const auto& p : pairs) {
    EXPECT_EQ(p.ops, 20u);
    EXPECT_EQ(p.bytes, 20u * 131072);  // 32768 float32 per message
    EXPECT_EQ(p.last_seq, 19u);
  }
  ProcessResult st = scout::testing::run_process({build_path("bin/scout"), "status", "--store", store}, env, 30);
  EXPECT_NE(st.out.find("Send/Recv=40"), std::string::npos) << st.out;
  ProcessResult rep =
      scout::testing::run_process({build_path("bin/scout"), "report", "--store", store, "--comm", "pp0"}, env, 30);
  EXPECT_NE(rep.out.find("point-to-point pairs:\nCOMM  SRC  DST  OPS   BYTES  LAST SEQ"), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("pp0    r0   r4   20  2.5MiB        19"), std::string::npos) << rep.out;
}

}  // namespace
