// End to end: the scout-sim fault kinds taken from public failure reports (docs/findings.md,
// "Faults from public reports"), each run as an 8-rank job under a concurrent scout-observer.
// The findings in the observer's store must be exactly the expected diagnosis (kind, ranks named,
// verdict) and nothing else; the sim's ground-truth file says what was injected where.
//
// Same observer settings as sim_e2e_test (test/support/observed_job.h: hang timeout 1.5 s, 50 ms
// passes, fingerprints on every operation); no other threshold is needed by these faults.
//
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "test/support/observed_job.h"
#include "test/support/truth.h"

namespace {

using scout::testing::Named;
using scout::testing::named;
using scout::testing::Outcome;
using scout::testing::read_truth;
using scout::testing::show;

// The 8-rank job of these tests: TP 2, PP 2 (DP 2), 40 steps of 20 ms, plus `extra` flags.
std::vector<std::string> job(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "40", "--step-ms", "20"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The job under an observer (test/support/observed_job.h).
Outcome run(const std::string& job_id, const std::vector<std::string>& sim_args, size_t expect, bool hung = false,
            const std::vector<std::string>& observer_args = {}) {
  return scout::testing::observed_job(job_id, sim_args, expect, hung, observer_args);
}

// Every finding is `kind` with verdict `v`, and together they name exactly `want` (one set of
// ranks per finding).
void expect_findings(const Outcome& o, const std::multiset<Named>& want, scout::obs::Verdict v) {
  EXPECT_EQ(o.found, want) << "found:" << show(o.found) << "\nwant:" << show(want) << "\ntruth:" << show(o.truth)
                           << "\nsim: " << o.sim.err << "\nobserver:\n"
                           << o.observer_err;
  for (const auto& f : o.findings) EXPECT_EQ(f.verdict, v) << f.summary;
}

// int32 where the others pass float32, same count and bytes: the metadata vote of the TP pair is
// one against one; the other TP groups out-vote rank 5.
TEST(FaultKindsEndToEnd, DtypeIsADesyncNamingTheRank) {
  Outcome o = run("dtype", job({"--fault", "dtype:rank=5,step=9"}), 1);
  EXPECT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"dtype", {5}}}));
  expect_findings(o, {{"desync", {5}}}, scout::obs::Verdict::kAttributed);
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].comm_name, "tp2");
  EXPECT_EQ(o.findings[0].key->func, "AllReduce");
  EXPECT_EQ(o.findings[0].key->seq, 18u);
  EXPECT_EQ(o.findings[0].evidence["votes"][1]["value"]["datatype"], "int32") << o.findings[0].evidence.dump();
  EXPECT_EQ(o.findings[0].evidence["votes"][0]["value"]["datatype"], "float32") << o.findings[0].evidence.dump();
}

// Every rank gets the same (call-dependent) reduction result: nothing is wrong. The observer
// judged every operation of the job.
TEST(FaultKindsEndToEnd, NondeterministicReductionsGiveNoFinding) {
  Outcome o = run("nondet", job({"--fault", "nondet:rank=5"}), 0);
  EXPECT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.ops, scout::testing::sim_ops_tp2_pp2(40));
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"nondet", {5}}}));
  expect_findings(o, {}, scout::obs::Verdict::kAttributed);
}

// rank=2+5: the same wrong count on two ranks of different TP groups: two findings, one per group.
TEST(FaultKindsEndToEnd, DesyncOnTwoRanksOfDifferentGroupsNamesEach) {
  Outcome o = run("desync2", job({"--fault", "desync:rank=2+5,step=9"}), 2);
  EXPECT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"desync", {2}}, {"desync", {5}}}));
  expect_findings(o, {{"desync", {2}}, {"desync", {5}}}, scout::obs::Verdict::kAttributed);
}

// Every rank of pipeline stage 0 (ranks 0, 1 with TP 2, PP 4) passes a wrong count to the world
// Broadcast of step 10 (their operation 67): the 6 other ranks out-vote the stage; one finding
// names both.
TEST(FaultKindsEndToEnd, WholeStageDesyncInACommunicatorAcrossStagesNamesTheStage) {
  Outcome o = run("stage", {"--ranks", "8", "--tp", "2", "--pp", "4", "--steps", "20", "--step-ms", "20", "--fault",
                            "desync:stage=0,op=67"},
                  1);
  EXPECT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"desync", {0}}, {"desync", {1}}}));
  expect_findings(o, {{"desync", {0, 1}}}, scout::obs::Verdict::kAttributed);
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].comm_name, "world");
  EXPECT_EQ(o.findings[0].key->func, "Broadcast");
  EXPECT_EQ(o.findings[0].key->seq, 1u);
}

// The sequence desync of `o`'s only finding: source "sequence", at `position` of `comm`, the
// majority's call `func` #`seq` against rank 5's `minority_func`.
void expect_sequence(const Outcome& o, const std::string& comm, uint64_t position, const std::string& func,
                     uint64_t seq, const std::string& majority_func, const std::string& minority_func) {
  ASSERT_EQ(o.findings.size(), 1u) << show(o.found);
  const auto& f = o.findings[0];
  const auto& ev = f.evidence;
  EXPECT_EQ(f.comm_name, comm);
  ASSERT_TRUE(f.key.has_value());
  EXPECT_EQ(f.key->func, func);
  EXPECT_EQ(f.key->seq, seq);
  EXPECT_EQ(ev["source"], "sequence") << ev.dump();
  EXPECT_EQ(ev["position"], position) << ev.dump();
  ASSERT_EQ(ev["sequence_votes"].size(), 2u) << ev.dump();
  if (majority_func.empty()) {
    EXPECT_TRUE(ev["sequence_votes"][0]["value"].is_null()) << ev.dump();
  } else {
    EXPECT_EQ(ev["sequence_votes"][0]["value"]["func"], majority_func) << ev.dump();
  }
  EXPECT_EQ(ev["sequence_votes"][1]["value"]["func"], minority_func) << ev.dump();
  EXPECT_EQ(ev["sequence_votes"][1]["ranks"], nlohmann::json::array({5})) << ev.dump();
}

// Rank 5 calls an AllGather where rank 4 calls the first AllReduce of step 9 (position 36 of tp2:
// 4 collectives per step). One against one in the pair; the other TP groups, which agreed with
// tp2 so far, called AllReduce there.
TEST(FaultKindsEndToEnd, OptypeIsADesyncNamingTheRank) {
  Outcome o = run("optype", job({"--fault", "optype:rank=5,step=9"}), 1);
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"optype", {5}}}));
  expect_findings(o, {{"desync", {5}}}, scout::obs::Verdict::kAttributed);
  expect_sequence(o, "tp2", 36, "AllReduce", 18, "AllReduce", "AllGather");
}

// Rank 5 skips the AllReduce at position 36 of tp2, so its AllGather comes there; the job then
// deadlocks (rank 5 reaches the world Broadcast a call early), and the deadlock is the desync's
// `hang` evidence, not a finding of its own.
TEST(FaultKindsEndToEnd, SkipIsADesyncNamingTheRankWithTheDeadlockAsEvidence) {
  Outcome o = run("skip", job({"--timeout", "6", "--fault", "skip:rank=5,step=9"}), 1);
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"skip", {5}}}));
  ASSERT_EQ(o.findings.size(), 1u) << show(o.found);
  EXPECT_EQ(o.found, (std::multiset<Named>{{"desync", {5}}})) << show(o.found);
  EXPECT_EQ(o.findings[0].verdict, scout::obs::Verdict::kAttributed);
  expect_sequence(o, "tp2", 36, "AllReduce", 18, "AllReduce", "AllGather");
  EXPECT_EQ(o.findings[0].evidence["hang"]["class"], "deadlock") << o.findings[0].evidence.dump();
}

// Rank 5's extra step makes the same calls as everyone's step 0, so no position differs in value;
// it reaches the world Broadcast of its step 0 (world position 1) while the 7 others, a step
// behind, are blocked in other communicators: at that frozen point the 7 have not called
// position 1 and rank 5 has.
TEST(FaultKindsEndToEnd, ExtraStepIsADesyncNamingTheRank) {
  Outcome o = run("extrastep", job({"--timeout", "6", "--fault", "extrastep:rank=5"}), 1);
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"extrastep", {5}}}));
  expect_findings(o, {{"desync", {5}}}, scout::obs::Verdict::kAttributed);
  expect_sequence(o, "world", 1, "Broadcast", 1, "", "Broadcast");
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].evidence["sequence_votes"][0]["ranks"], nlohmann::json::array({0, 1, 2, 3, 4, 6, 7}));
  EXPECT_EQ(o.findings[0].evidence["hang"]["class"], "deadlock") << o.findings[0].evidence.dump();
}

// One hang finding, kind hang and verdict attributed, naming `rank` as its only root with `reason`.
const scout::obs::Finding& expect_hang_root(const Outcome& o, int rank, const std::string& reason) {
  static const scout::obs::Finding none;
  expect_findings(o, {{"hang", {rank}}}, scout::obs::Verdict::kAttributed);
  if (o.findings.size() != 1u) return none;
  const auto& ev = o.findings[0].evidence;
  EXPECT_EQ(ev["class"], "absent") << ev.dump();
  EXPECT_EQ(ev["root"].size(), 1u) << ev.dump();
  EXPECT_EQ(ev["root"][0]["global_rank"], rank) << ev.dump();
  EXPECT_EQ(ev["root"][0]["reason"], reason) << ev.dump();
  EXPECT_EQ(ev["root"][0]["process"], "running") << ev.dump();
  return o.findings[0];
}

// Stage 1 (ranks 4-7) posts its step-2 pipeline calls reversed and outside a group: rank 4 sends
// to rank 0 (backward) before receiving from it, while rank 0 sends to rank 4 (forward) before
// receiving from it. Each lone Send waits for a receive the other posts after its own Send: one
// deadlock per pipeline pair, its cycle the two ranks in their pp communicator.
TEST(FaultKindsEndToEnd, P2pOrderIsADeadlockOfEachPipelinePair) {
  Outcome o = run("p2porder", job({"--fault", "p2porder:stage=1,step=2"}), 4, true);
  EXPECT_EQ(o.sim.exit_code, 4) << o.sim.err;
  EXPECT_EQ(o.truth,
            (std::multiset<Named>{{"p2porder", {4}}, {"p2porder", {5}}, {"p2porder", {6}}, {"p2porder", {7}}}));
  expect_findings(o, {{"deadlock", {0, 4}}, {"deadlock", {1, 5}}, {"deadlock", {2, 6}}, {"deadlock", {3, 7}}},
                  scout::obs::Verdict::kAttributed);
  for (const auto& f : o.findings) {
    const auto& cyc = f.evidence["cycle"];
    ASSERT_EQ(cyc.size(), 2u) << f.evidence.dump();
    ASSERT_EQ(f.suspects.size(), 2u);
    // The suspects come in the cycle's order, which starts at either end.
    const int lo = std::min(f.suspects[0].global_rank, f.suspects[1].global_rank);
    const int hi = std::max(f.suspects[0].global_rank, f.suspects[1].global_rank);
    EXPECT_EQ(f.comm_name, "pp" + std::to_string(lo)) << f.summary;
    std::set<std::pair<int, int>> edges;
    for (const auto& e : cyc) {
      EXPECT_EQ(e["comm"]["name"], "pp" + std::to_string(lo)) << f.evidence.dump();
      EXPECT_EQ(e["why"], "not-started") << f.evidence.dump();
      EXPECT_EQ(e["op"]["func"], "Send") << f.evidence.dump();
      EXPECT_EQ(e["op"]["seq"], 2) << f.evidence.dump();
      edges.insert({e["rank"].get<int>(), e["waits_for"].get<int>()});
    }
    EXPECT_EQ(edges, (std::set<std::pair<int, int>>{{lo, hi}, {hi, lo}})) << f.evidence.dump();
  }
}

// Rank 0 sends its step-2 activations to rank 4 on the world communicator instead of pp0: rank 4
// waits in pp0 for the message (rank 0's third Send there), rank 0 in world for a receive rank 4
// never posts there (the first Send 0->4 ever in world). The hang names rank 0 in the wrong
// communicator, rank 4 waiting in the right one.
TEST(FaultKindsEndToEnd, WrongGroupIsAHangNamingThePairAndBothCommunicators) {
  Outcome o = run("wronggroup", job({"--fault", "wronggroup:rank=0,step=2"}), 1, true);
  EXPECT_EQ(o.sim.exit_code, 4) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"wronggroup", {0, 4}}}));
  const auto& f = expect_hang_root(o, 0, "wrong-comm");
  if (o.findings.size() != 1u) return;
  const auto& ev = f.evidence;
  EXPECT_EQ(f.comm_name, "pp0");
  EXPECT_EQ(f.key->func, "Send");
  EXPECT_EQ(f.key->seq, 2u);
  EXPECT_EQ(ev["root"][0]["comm"]["name"], "world") << ev.dump();
  EXPECT_EQ(ev["root"][0]["op"], (nlohmann::json{{"func", "Send"}, {"seq", 0}, {"src", 0}, {"dst", 4}})) << ev.dump();
  ASSERT_FALSE(ev["chain"].empty()) << ev.dump();
  EXPECT_EQ(ev["chain"][0], (nlohmann::json{{"rank", 4},
                                            {"waits_for", 0},
                                            {"comm", ev["comms"][0]["comm"]},
                                            {"op", {{"func", "Send"}, {"seq", 2}, {"src", 0}, {"dst", 1}}},
                                            {"why", "absent"}}))
      << ev.dump();
  EXPECT_EQ(ev["comms"][0]["comm"]["name"], "pp0") << ev.dump();
}

// Rank 5 stays inside its first call of step 2 (its Recv from rank 1 in pp1): the call is
// recorded (the communicator's API counter moved), nothing is enqueued. Rank 5 is alive.
TEST(FaultKindsEndToEnd, EnqueueStallIsAHangNamingTheRankInsideTheCall) {
  Outcome o = run("enqueuestall", job({"--fault", "enqueuestall:rank=5,step=2"}), 1, true);
  EXPECT_EQ(o.sim.exit_code, 4) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"enqueuestall", {5}}}));
  const auto& f = expect_hang_root(o, 5, "in-call");
  if (o.findings.size() != 1u) return;
  EXPECT_EQ(f.evidence["root"][0]["detail"].get<std::string>().rfind("an API call on pp1 (0x", 0), 0u)
      << f.evidence.dump();
  EXPECT_EQ(f.summary.find("has since exited"), std::string::npos) << f.summary;
}

// Every rank arrives; rank 5's kernel of the first tp2 AllReduce of step 2 starts and never ends,
// so rank 4's waits for it. Both ranks' records show the kernel started and not complete: nothing
// in them says whose transfer is missing, so the hang is stuck. Its communicator is inside one
// host: replay's cycle for it (trigger "stuck", docs/replay.md "Deadlines") times out on rank 5's
// GPU while rank 4's finishes, and names rank 5.
TEST(FaultKindsEndToEnd, KernelStallIsAStuckHangInItsCommunicator) {
  Outcome o = run("kernelstall", job({"--fault", "kernelstall:rank=5,step=2"}), 1, true);
  EXPECT_EQ(o.sim.exit_code, 4) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"kernelstall", {5}}}));
  expect_findings(o, {{"hang", {5}}}, scout::obs::Verdict::kAttributed);
  ASSERT_EQ(o.findings.size(), 1u);
  const auto& f = o.findings[0];
  EXPECT_EQ(f.evidence["replay"]["verdict"], "gpu") << f.evidence.dump();
  EXPECT_EQ(f.evidence["trace"]["source"], "replay") << f.evidence.dump();
  EXPECT_EQ(f.comm_name, "tp2");
  EXPECT_EQ(f.key->func, "AllReduce");
  EXPECT_EQ(f.key->seq, 4u);
  EXPECT_EQ(f.evidence["class"], "stuck") << f.evidence.dump();
  EXPECT_EQ(f.evidence["root"][0]["reason"], "stuck") << f.evidence.dump();
  EXPECT_EQ(f.evidence["waiting_ranks"], nlohmann::json::array({4, 5})) << f.evidence.dump();
  // Listed in the observer's process order: compared as a set.
  std::set<int> elsewhere;
  for (const auto& r : f.evidence["blocked_elsewhere"]) elsewhere.insert(r.get<int>());
  EXPECT_EQ(elsewhere, (std::set<int>{0, 1, 2, 3, 6, 7})) << f.evidence.dump();
}

// 16 ranks on 4 emulated hosts (TP 2, PP 2; node2 holds ranks 8-11), one observer reading every
// host's segments. From step 10 every inter-host transfer of node2 takes 5 ms more: dp2 and dp3
// (node2-node3) and the pipeline pairs 0-8 .. 3-11 (node0-node2) are slow, dp0, dp1 and the pairs
// 4-12 .. 7-15 (between the other hosts) are normal. One finding: the slow host, its four ranks.
TEST(FaultKindsEndToEnd, SlowNicIsASlowEndpointNamingTheNode) {
  Outcome o = run("slownic",
                  {"--ranks", "16", "--tp", "2", "--pp", "2", "--nodes", "4", "--steps", "250", "--step-ms", "20",
                   "--fault", "slownic:node=2,ms=5,step=10"},
                  1, false, {"--host", "*"});
  EXPECT_EQ(o.sim.exit_code, 0) << o.sim.err;
  // The truth line is written by the slow host's first rank: node 2's first of 4 ranks is rank 8.
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"slownic", {8}}}));
  expect_findings(o, {{"slowlink", {8, 9, 10, 11}}}, scout::obs::Verdict::kAttributed);
  ASSERT_EQ(o.findings.size(), 1u);
  const auto& f = o.findings[0];
  EXPECT_EQ(f.evidence["class"], "endpoint") << f.evidence.dump();
  EXPECT_EQ(f.evidence["host"], "node2") << f.evidence.dump();
  for (const auto& s : f.suspects) EXPECT_EQ(s.host, "node2") << f.summary;
  EXPECT_FALSE(f.peer);
  EXPECT_EQ(f.comm_hash, 0u);
  // The store holds the last pass's evidence: the slow channels are node2's inter-host ones (while
  // the job winds down one may turn undecided, within its peers' noise, and drop out of the list).
  std::set<std::string> slow;
  for (const auto& c : f.evidence["slow"]) slow.insert(c["comm"]["name"].get<std::string>());
  EXPECT_FALSE(slow.empty()) << f.evidence.dump();
  for (const auto& n : slow) {
    EXPECT_TRUE((std::set<std::string>{"dp2", "dp3", "pp0", "pp1", "pp2", "pp3"}).count(n)) << n;
  }
  for (const auto& c : f.evidence["normal"]) {
    EXPECT_TRUE((std::set<std::string>{"dp0", "dp1", "pp4", "pp5", "pp6", "pp7"}).count(c["comm"]["name"]))
        << f.evidence.dump();
  }
  EXPECT_EQ(f.summary.rfind("host node2 (ranks 8, 9, 10, 11) is a slow endpoint: ", 0), 0u) << f.summary;
}

}  // namespace
