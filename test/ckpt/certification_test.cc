// The cycle judge (observer/ckpt/cycle.h), the state machine (observer/ckpt/states.h), the
// certificate chain (observer/ckpt/certificate.h), replay from the store
// (observer/ckpt/store_replay.h) and the Certifier with replay on (observer/ckpt/certifier.h), on
// synthetic evidence with known answers.
#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>

#include "observer/ckpt/certificate.h"
#include "observer/ckpt/certifier.h"
#include "observer/ckpt/cycle.h"
#include "observer/ckpt/states.h"
#include "observer/ckpt/store_replay.h"
#include "observer/store/writer.h"
#include "test/support/ckpt_fixture.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using namespace scout::ckpt;
using scout::testing::agreeing_op_at;
using scout::testing::certifier_options_for_test;
using scout::testing::slurp;
using scout::testing::TempDir;

constexpr int64_t kSec = 1'000'000'000;

// Two communicators, every comparison agreeing with all voters.
CycleEvidence healthy() {
  CycleEvidence ev;
  for (int i = 0; i < 3; ++i) ev.add(0x11, "tp0", 4, "agree", 4, 1000);
  ev.add(0x22, "dp0", 2, "agree", 2, 500);
  ev.add(0x22, "dp0", 2, "not-sampled", 2, 500);
  ev.add(0x33, "pp0", 2, "n/a", 2, 100);  // ReduceScatter-like: nothing to compare
  return ev;
}

TEST(CycleJudge, HealthyCycleIsCleanWithItsNumbers) {
  CycleVerdict v = judge_cycle(7, kSec, healthy(), true, {}, std::nullopt);
  EXPECT_EQ(v.status, CycleStatus::kClean);
  EXPECT_EQ(v.begin_ns, 7 * kSec);
  EXPECT_EQ(v.end_ns, 8 * kSec);
  EXPECT_EQ(v.comparisons, 4);
  EXPECT_EQ(v.comms_ran, 3);
  EXPECT_EQ(v.comms_covered, 2);
  EXPECT_EQ(voters_min(v.voters), 2);
  EXPECT_EQ(voters_median(v.voters), 4.0);  // 2, 4, 4, 4
  EXPECT_EQ(v.bytes_fingerprinted, 3u * 4000 + 1000);
}

TEST(CycleJudge, FindingWhoseOperationBeganInTheCycleMakesItDirty) {
  FindingEvent e{5, "sdc", "inconclusive", 7 * kSec + 300, true, 9 * kSec};
  FindingEvent later{6, "nan", "attributed", 8 * kSec, true, 9 * kSec};  // next cycle's
  CycleVerdict v = judge_cycle(7, kSec, healthy(), true, {e, later}, std::nullopt);
  EXPECT_EQ(v.status, CycleStatus::kDirty);
  EXPECT_EQ(v.finding_ids, std::vector<int64_t>{5});
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0], "sdc finding #5 (inconclusive)");
}

TEST(CycleJudge, MissingVotersOrNoSampleOrNoWatchIsIncomplete) {
  CycleEvidence ev = healthy();
  ev.add(0x11, "tp0", 4, "partial", 3, 1000);
  CycleVerdict v = judge_cycle(1, kSec, ev, true, {}, std::nullopt);
  EXPECT_EQ(v.status, CycleStatus::kIncomplete);
  EXPECT_EQ(v.reasons, std::vector<std::string>{"comm tp0: 1 comparisons missed voters"});

  CycleEvidence unsampled;
  unsampled.add(0x11, "tp0", 4, "agree", 4, 1000);
  unsampled.add(0x44, "ep0", 2, "not-sampled", 2, 1000);
  v = judge_cycle(1, kSec, unsampled, true, {}, std::nullopt);
  EXPECT_EQ(v.status, CycleStatus::kIncomplete);
  EXPECT_EQ(v.reasons, std::vector<std::string>{"comm ep0: no sampled fingerprint comparison"});

  v = judge_cycle(1, kSec, healthy(), false, {}, std::nullopt);
  EXPECT_EQ(v.status, CycleStatus::kIncomplete);
  EXPECT_EQ(v.reasons, std::vector<std::string>{"the observer did not watch the whole cycle"});

  v = judge_cycle(1, kSec, CycleEvidence{}, true, {}, std::nullopt);
  EXPECT_EQ(v.status, CycleStatus::kIncomplete);
  EXPECT_EQ(v.reasons, std::vector<std::string>{"no collective operation was judged in it"});
}

TEST(CycleJudge, DisagreementWinsOverMissingEvidence) {
  CycleEvidence ev = healthy();
  ev.add(0x11, "tp0", 4, "attributed", 4, 1000);
  ev.add(0x22, "dp0", 2, "partial", 1, 500);
  CycleVerdict v = judge_cycle(1, kSec, ev, true, {}, std::nullopt);
  EXPECT_EQ(v.status, CycleStatus::kDirty);
  EXPECT_EQ(v.reasons, std::vector<std::string>{"comm tp0: 1 fingerprint disagreements"});
}

TEST(CycleJudge, ReplayWhenOnMustRunAndPass) {
  ReplayCycleResult pass{ReplayStatus::kPass, {"hidden:3"}, {"GPU-a", "GPU-b"}, {}};
  CycleVerdict v = judge_cycle(1, kSec, healthy(), true, {}, pass);
  EXPECT_EQ(v.status, CycleStatus::kClean);
  EXPECT_EQ(v.replay_gpus, (std::vector<std::string>{"GPU-a", "GPU-b"}));
  v = judge_cycle(1, kSec, healthy(), true, {}, ReplayCycleResult{ReplayStatus::kUnfinished, {}, {}, {}});
  EXPECT_EQ(v.status, CycleStatus::kIncomplete);
  EXPECT_EQ(v.reasons, std::vector<std::string>{"the replay cycle did not finish"});
  v = judge_cycle(1, kSec, healthy(), true, {}, ReplayCycleResult{ReplayStatus::kNone, {}, {}, {}});
  EXPECT_EQ(v.status, CycleStatus::kIncomplete);
  v = judge_cycle(1, kSec, healthy(), true, {}, ReplayCycleResult{ReplayStatus::kFail, {}, {}, {42}});
  EXPECT_EQ(v.status, CycleStatus::kDirty);
  EXPECT_EQ(v.finding_ids, std::vector<int64_t>{42});
}

TEST(CycleJudge, InconclusiveReplayIsIncomplete) {
  CycleVerdict v =
      judge_cycle(1, kSec, healthy(), true, {}, ReplayCycleResult{ReplayStatus::kInconclusive, {}, {}, {}});
  EXPECT_EQ(v.status, CycleStatus::kIncomplete);
  EXPECT_EQ(v.reasons, std::vector<std::string>{"the replay cycle was inconclusive"});
  EXPECT_EQ(to_json(v)["replay"], "inconclusive");
  EXPECT_EQ(cycle_from_json(to_json(v)).replay, ReplayStatus::kInconclusive);
}

// The JSON form written by hand from docs/certification.md ("cycles"), every field set to a value
// other than its default: to_json gives exactly it, and cycle_from_json of it gives back every
// field of the verdict.
TEST(CycleJudge, JsonFormIsTheDocumentedOneAndReadsBackEveryField) {
  CycleVerdict v;
  v.index = 3;
  v.begin_ns = 3 * kSec;
  v.end_ns = 4 * kSec;
  v.status = CycleStatus::kDirty;
  v.reasons = {"comm tp0: 1 fingerprint disagreements"};
  v.finding_ids = {7, 11};
  v.comparisons = 5;
  v.comms_ran = 3;
  v.comms_covered = 2;
  v.voters = {{2, 1}, {4, 4}};  // voters 2, 4, 4, 4, 4: min 2, median 4
  v.bytes_fingerprinted = 13000;
  v.replay = ReplayStatus::kFail;
  v.replay_recipes = {"hidden:3", "link:0-1"};
  v.replay_gpus = {"GPU-a"};
  const nlohmann::json want = nlohmann::json::parse(R"({
    "index": 3, "begin_ns": 3000000000, "end_ns": 4000000000, "status": "dirty",
    "reasons": ["comm tp0: 1 fingerprint disagreements"], "finding_ids": [7, 11],
    "comparisons": 5, "communicators_ran": 3, "communicators_covered": 2,
    "voters_min": 2, "voters_median": 4.0, "voters": {"2": 1, "4": 4},
    "bytes_fingerprinted": 13000, "replay": "fail",
    "replay_recipes": ["hidden:3", "link:0-1"], "replay_gpus": ["GPU-a"]})");
  EXPECT_EQ(to_json(v), want) << to_json(v).dump();
  CycleVerdict w = cycle_from_json(want);
  EXPECT_EQ(w.index, 3);
  EXPECT_EQ(w.begin_ns, 3 * kSec);
  EXPECT_EQ(w.end_ns, 4 * kSec);
  EXPECT_EQ(w.status, CycleStatus::kDirty);
  EXPECT_EQ(w.reasons, v.reasons);
  EXPECT_EQ(w.finding_ids, (std::vector<int64_t>{7, 11}));
  EXPECT_EQ(w.comparisons, 5);
  EXPECT_EQ(w.comms_ran, 3);
  EXPECT_EQ(w.comms_covered, 2);
  EXPECT_EQ(w.voters, (std::map<int, int64_t>{{2, 1}, {4, 4}}));
  EXPECT_EQ(w.bytes_fingerprinted, 13000u);
  EXPECT_EQ(w.replay, ReplayStatus::kFail);
  EXPECT_EQ(w.replay_recipes, (std::vector<std::string>{"hidden:3", "link:0-1"}));
  EXPECT_EQ(w.replay_gpus, (std::vector<std::string>{"GPU-a"}));
}

CycleVerdict cycle(int64_t i, CycleStatus s) {
  CycleVerdict v;
  v.index = i;
  v.begin_ns = i * kSec;
  v.end_ns = (i + 1) * kSec;
  v.status = s;
  if (s == CycleStatus::kDirty) {
    v.reasons = {"the replay cycle failed"};
    v.finding_ids = {9};
  }
  return v;
}

Checkpoint candidate(int64_t completed_ns) {
  Checkpoint c;
  c.id = 1;
  c.path = "/ck/iter_0000020";
  c.framework = "megatron";
  c.step = 20;
  c.completed_ns = completed_ns;
  return c;
}

TEST(States, VerifiedAfterKConsecutiveCleanCyclesThatBeganAfterCompletion) {
  Checkpoint c = candidate(2 * kSec + 50);
  EXPECT_FALSE(apply_cycle(c, cycle(2, CycleStatus::kClean), 2, 0));  // began before completion
  EXPECT_FALSE(apply_cycle(c, cycle(3, CycleStatus::kClean), 2, 0));
  EXPECT_EQ(c.state, State::kCandidate);
  EXPECT_TRUE(apply_cycle(c, cycle(4, CycleStatus::kClean), 2, 77));
  EXPECT_EQ(c.state, State::kVerified);
  EXPECT_EQ(c.cycles, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(c.decided_ns, 77);
  EXPECT_FALSE(apply_cycle(c, cycle(5, CycleStatus::kDirty), 2, 0));  // final
  EXPECT_EQ(c.state, State::kVerified);
}

TEST(States, IncompleteCycleMakesTheCandidateWaitAndRestartsTheRun) {
  Checkpoint c = candidate(2 * kSec);
  apply_cycle(c, cycle(2, CycleStatus::kClean), 2, 0);
  apply_cycle(c, cycle(3, CycleStatus::kIncomplete), 2, 0);
  EXPECT_EQ(c.state, State::kCandidate);
  EXPECT_TRUE(c.cycles.empty());
  apply_cycle(c, cycle(4, CycleStatus::kIncomplete), 2, 0);
  apply_cycle(c, cycle(5, CycleStatus::kClean), 2, 0);
  EXPECT_EQ(c.state, State::kCandidate);
  EXPECT_TRUE(apply_cycle(c, cycle(6, CycleStatus::kClean), 2, 0));
  EXPECT_EQ(c.cycles, (std::vector<int64_t>{5, 6}));
}

TEST(States, DirtyCycleRejects) {
  Checkpoint c = candidate(2 * kSec);
  EXPECT_TRUE(apply_cycle(c, cycle(2, CycleStatus::kDirty), 2, 0));
  EXPECT_EQ(c.state, State::kRejected);
  EXPECT_EQ(c.finding_ids, std::vector<int64_t>{9});
  EXPECT_EQ(c.reason, "cycle 2 was not clean: the replay cycle failed");
}

TEST(States, FindingsRejectInsideTheWindowOrWhenOpenAtCompletion) {
  const int64_t done = 10 * kSec;
  // Began after completion but after the horizon: not yet.
  Checkpoint a = candidate(done);
  FindingEvent after{3, "sdc", "attributed", 12 * kSec, true, 12 * kSec};
  EXPECT_FALSE(reject_on_findings(a, {after}, 12 * kSec, 0));
  EXPECT_TRUE(reject_on_findings(a, {after}, 13 * kSec, 5));
  EXPECT_EQ(a.state, State::kRejected);
  EXPECT_EQ(a.finding_ids, std::vector<int64_t>{3});
  EXPECT_EQ(a.reason, "sdc finding #3 (attributed) after it was written");
  // Began before completion and still open: rejects.
  Checkpoint b = candidate(done);
  FindingEvent open{4, "desync", "attributed", 5 * kSec, true, 6 * kSec};
  EXPECT_TRUE(reject_on_findings(b, {open}, done, 0));
  EXPECT_EQ(b.reason, "desync finding #4 (attributed) began before it and was open when it was written");
  // Began before and closed before completion: does not.
  Checkpoint c = candidate(done);
  FindingEvent closed{5, "nan", "attributed", 5 * kSec, false, 6 * kSec};
  EXPECT_FALSE(reject_on_findings(c, {closed}, 20 * kSec, 0));
  EXPECT_EQ(c.state, State::kCandidate);
}

scout::obs::ReplayCycleRecord replay_cycle(int64_t id, int64_t started, int64_t ended, const std::string& outcome,
                                           const std::string& gpu = "GPU-sim-node0-0") {
  scout::obs::ReplayCycleRecord c;
  c.id = id;
  c.cycle = uint64_t(id);
  c.trigger = "periodic";
  c.started_ns = started;
  c.ended_ns = ended;
  c.outcome = outcome;
  c.detail = {{"recipes", {"gemm:1", "link:0-1"}}, {"gpus", {{{"global_rank", 0}, {"gpu", gpu}}}}};
  return c;
}

scout::obs::Finding replay_sdc(int64_t id, int64_t first, int64_t last) {
  scout::obs::Finding f;
  f.id = id;
  f.kind = scout::obs::FindingKind::kSdc;
  f.first_seen_ns = first;
  f.last_seen_ns = last;
  f.evidence = {{"source", "replay"}};
  return f;
}

TEST(StoreReplay, OutcomeOfTheCoveringCycleAndThoseStartedInside) {
  using scout::obs::ReplayCycleRecord;
  // Nothing covers the check cycle yet.
  ReplayCycleResult r = replay_outcome(std::nullopt, {}, {});
  EXPECT_EQ(r.status, ReplayStatus::kNone);
  // The covering cycle passed.
  r = replay_outcome(replay_cycle(1, 9 * kSec, 10 * kSec + 200, "pass"), {}, {});
  EXPECT_EQ(r.status, ReplayStatus::kPass);
  EXPECT_EQ(r.recipes, (std::vector<std::string>{"gemm:1", "link:0-1"}));
  EXPECT_EQ(r.gpus, std::vector<std::string>{"GPU-sim-node0-0"});
  // It passed, but one that started inside could not decide.
  r = replay_outcome(replay_cycle(1, 9 * kSec, 10 * kSec + 200, "pass"),
                     {replay_cycle(1, 9 * kSec, 10 * kSec + 200, "pass"),
                      replay_cycle(2, 10 * kSec + 300, 10 * kSec + 900, "inconclusive", "GPU-sim-node0-1")},
                     {});
  EXPECT_EQ(r.status, ReplayStatus::kInconclusive);
  EXPECT_EQ(r.gpus, (std::vector<std::string>{"GPU-sim-node0-0", "GPU-sim-node0-1"}));
  // One that started inside failed: its replay sdc findings are the reasons (not the finding of
  // another source, nor one seen only before it ran).
  std::vector<scout::obs::Finding> findings = {
      replay_sdc(7, 10 * kSec + 900, 11 * kSec), replay_sdc(3, 2 * kSec, 3 * kSec),
      replay_sdc(8, 10 * kSec + 900, 11 * kSec)};
  findings[2].evidence = {{"source", "fingerprint"}};
  r = replay_outcome(std::nullopt, {replay_cycle(2, 10 * kSec + 300, 10 * kSec + 900, "fail")}, findings);
  EXPECT_EQ(r.status, ReplayStatus::kFail);
  EXPECT_EQ(r.finding_ids, std::vector<int64_t>{7});
  // Fail wins over inconclusive; an outcome other than pass is not a pass.
  r = replay_outcome(replay_cycle(1, 9 * kSec, 10 * kSec + 200, "inconclusive"),
                     {replay_cycle(2, 10 * kSec + 300, 10 * kSec + 900, "fail")}, {});
  EXPECT_EQ(r.status, ReplayStatus::kFail);
  r = replay_outcome(replay_cycle(1, 9 * kSec, 10 * kSec + 200, ""), {}, {});
  EXPECT_EQ(r.status, ReplayStatus::kInconclusive);
}

TEST(StoreReplay, CheckCyclesFromTheObserversStoreAreCleanDirtyOrIncompleteExactly) {
  TempDir d;
  const std::string path = d.path() + "/node-0.db";
  scout::store::WriterOptions wo;
  wo.job = "j";
  std::string err;
  auto w = scout::store::StoreWriter::open(path, wo, &err);
  ASSERT_TRUE(w) << err;
  StoreReplayCycles replay(path);
  // Check cycle 10 ([10 s, 11 s)) before any replay cycle finished: none (the Certifier waits).
  EXPECT_EQ(replay.result(10 * kSec, 11 * kSec).status, ReplayStatus::kNone);
  EXPECT_EQ(replay.last_error(), "");
  // Replay cycle a runs over 10 s and passes; b starts in cycle 11 and fails with an sdc finding;
  // c starts in cycle 12 and is inconclusive.
  scout::obs::ReplayCycleRecord a = replay_cycle(0, 9 * kSec + 500, 10 * kSec + 100, "pass");
  scout::obs::ReplayCycleRecord b = replay_cycle(0, 11 * kSec + 200, 11 * kSec + 600, "fail");
  scout::obs::ReplayCycleRecord c = replay_cycle(0, 12 * kSec + 400, 12 * kSec + 800, "inconclusive");
  scout::obs::Finding f = replay_sdc(0, 11 * kSec + 200, 11 * kSec + 600);
  f.dedup_key = "sdc:replay:node0:42";
  f.summary = "replay: the GPU of rank 0 computes gemm:1 differently from the majority of its peers";
  w->put_replay_cycle(&a);
  EXPECT_EQ(replay.result(10 * kSec, 11 * kSec).status, ReplayStatus::kNone);  // not committed yet
  ASSERT_TRUE(w->flush());
  w->put_replay_cycle(&b);
  w->upsert_finding(&f);
  w->put_replay_cycle(&c);
  ASSERT_TRUE(w->flush());
  ASSERT_GT(f.id, 0);

  ReplayCycleResult r10 = replay.result(10 * kSec, 11 * kSec);
  EXPECT_EQ(r10.status, ReplayStatus::kPass);
  EXPECT_EQ(r10.gpus, std::vector<std::string>{"GPU-sim-node0-0"});
  CycleVerdict v10 = judge_cycle(10, kSec, healthy(), true, {}, r10);
  EXPECT_EQ(v10.status, CycleStatus::kClean);
  EXPECT_EQ(v10.replay, ReplayStatus::kPass);

  ReplayCycleResult r11 = replay.result(11 * kSec, 12 * kSec);  // b: the first that started after 11 s
  EXPECT_EQ(r11.status, ReplayStatus::kFail);
  EXPECT_EQ(r11.finding_ids, std::vector<int64_t>{f.id});
  CycleVerdict v11 = judge_cycle(11, kSec, healthy(), true, {}, r11);
  EXPECT_EQ(v11.status, CycleStatus::kDirty);
  EXPECT_EQ(v11.reasons, std::vector<std::string>{"the replay cycle failed"});
  EXPECT_EQ(v11.finding_ids, std::vector<int64_t>{f.id});

  CycleVerdict v12 = judge_cycle(12, kSec, healthy(), true, {}, replay.result(12 * kSec, 13 * kSec));
  EXPECT_EQ(v12.status, CycleStatus::kIncomplete);
  EXPECT_EQ(v12.reasons, std::vector<std::string>{"the replay cycle was inconclusive"});

  // After the last replay cycle: nothing covers cycle 13.
  CycleVerdict v13 = judge_cycle(13, kSec, healthy(), true, {}, replay.result(13 * kSec, 14 * kSec));
  EXPECT_EQ(v13.status, CycleStatus::kIncomplete);
  EXPECT_EQ(v13.reasons, std::vector<std::string>{"no replay cycle ran"});

  // A checkpoint completed at 9.9 s: cycle 10 is clean, cycle 11 dirty rejects it with the
  // replay finding.
  Checkpoint ck = candidate(9 * kSec + 900'000'000);
  EXPECT_FALSE(apply_cycle(ck, v10, 2, 0));
  EXPECT_TRUE(apply_cycle(ck, v11, 2, 5));
  EXPECT_EQ(ck.state, State::kRejected);
  EXPECT_EQ(ck.finding_ids, std::vector<int64_t>{f.id});
  EXPECT_EQ(ck.reason, "cycle 11 was not clean: the replay cycle failed");
}

// Replay results set by the test per check cycle begin; none until set.
class ScriptedReplay : public ReplayCycles {
 public:
  std::map<int64_t, ReplayCycleResult> by_begin;
  ReplayCycleResult result(int64_t begin_ns, int64_t) override {
    auto it = by_begin.find(begin_ns);
    return it == by_begin.end() ? ReplayCycleResult{} : it->second;
  }
};

// A dcp checkpoint <root>/<name> whose marker was written at wall time `t`.
void dcp_checkpoint(const std::string& root, const std::string& name, int64_t t) {
  fs::create_directories(root + "/" + name);
  const std::string marker = root + "/" + name + "/.metadata";
  std::ofstream(marker) << "m";
  const timespec ts[2] = {{time_t(t / kSec), long(t % kSec)}, {time_t(t / kSec), long(t % kSec)}};
  ASSERT_EQ(::utimensat(AT_FDCWD, marker.c_str(), ts, 0), 0);
}

TEST(CertifierReplay, CycleWaitsForItsReplayCyclePassesOnlyWithItAndFailureRejects) {
  TempDir d;
  const std::string root = d.path() + "/ckpt";
  dcp_checkpoint(root, "step-1", 100 * kSec + 300'000'000);
  auto store = CkptStore::open_writer(d.path() + "/node-0.db");
  CertifierOptions o = certifier_options_for_test(root, d.path() + "/certificates");
  o.grace_ns = 500'000'000;
  o.stale_ns = 30 * kSec;
  ScriptedReplay replay;
  for (int64_t i : {100, 101}) replay.by_begin[i * kSec] = {ReplayStatus::kPass, {"gemm:1"}, {"GPU-0"}, {}};
  Certifier cert(o, store.get(), &replay);
  scout::obs::Model m;
  scout::obs::FindingBoard board;
  uint64_t seq = 0;
  auto pass = [&](int64_t t) { cert.on_pass(m, agreeing_op_at(t - 100'000'000, ++seq), board, t); };
  // Every 100 ms from 100.2 s to 103.6 s: cycles 100 (not watched from its start: incomplete)
  // and 101 (clean) are judged; 102 has no replay cycle yet and waits.
  for (int64_t t = 100 * kSec + 200'000'000; t <= 103 * kSec + 600'000'000; t += 100'000'000) pass(t);
  ASSERT_EQ(cert.checkpoints().size(), 1u);
  EXPECT_EQ(cert.checkpoints()[0].state, State::kCandidate);
  EXPECT_EQ(cert.checkpoints()[0].cycles, std::vector<int64_t>{101});
  EXPECT_EQ(cert.next_cycle(), 102);
  std::vector<CycleVerdict> judged = store->cycles();
  ASSERT_EQ(judged.size(), 2u);
  EXPECT_EQ(judged[0].status, CycleStatus::kIncomplete);
  EXPECT_EQ(judged[0].reasons, std::vector<std::string>{"the observer did not watch the whole cycle"});
  EXPECT_EQ(judged[1].status, CycleStatus::kClean);
  EXPECT_EQ(judged[1].replay, ReplayStatus::kPass);
  EXPECT_EQ(judged[1].replay_gpus, std::vector<std::string>{"GPU-0"});
  // Its replay cycle passes: 102 is clean and the checkpoint verified on 101 and 102.
  replay.by_begin[102 * kSec] = {ReplayStatus::kPass, {"gemm:1"}, {"GPU-0"}, {}};
  pass(103 * kSec + 700'000'000);
  EXPECT_EQ(cert.checkpoints()[0].state, State::kVerified);
  EXPECT_EQ(cert.checkpoints()[0].cycles, (std::vector<int64_t>{101, 102}));
  EXPECT_EQ(cert.next_cycle(), 103);
  // A second checkpoint; the replay cycle of 103 fails with finding 42: rejected.
  dcp_checkpoint(root, "step-2", 102 * kSec + 900'000'000);
  replay.by_begin[103 * kSec] = {ReplayStatus::kFail, {"gemm:1"}, {"GPU-0"}, {42}};
  for (int64_t t = 103 * kSec + 800'000'000; t <= 104 * kSec + 600'000'000; t += 100'000'000) pass(t);
  ASSERT_EQ(cert.checkpoints().size(), 2u);
  EXPECT_EQ(cert.checkpoints()[1].state, State::kRejected);
  EXPECT_EQ(cert.checkpoints()[1].finding_ids, std::vector<int64_t>{42});
  EXPECT_EQ(cert.checkpoints()[1].reason, "cycle 103 was not clean: the replay cycle failed");
  // No replay cycle ever covers 104: it waits until the stale time (its end + 30 s), then is
  // incomplete; 105 waits in turn.
  pass(134 * kSec + 900'000'000);
  EXPECT_EQ(cert.next_cycle(), 104);
  pass(135 * kSec + 600'000'000);
  EXPECT_EQ(cert.next_cycle(), 105);
  judged = store->cycles();
  ASSERT_EQ(judged.size(), 5u);
  EXPECT_EQ(judged[4].index, 104);
  EXPECT_EQ(judged[4].status, CycleStatus::kIncomplete);
  EXPECT_EQ(judged[4].reasons, std::vector<std::string>{"no replay cycle ran"});
  EXPECT_EQ(store->certificates().size(), 2u);
}

TEST(StoreReplay, MissingStoreGivesNoneWithTheError) {
  TempDir d;
  StoreReplayCycles replay(d.path() + "/absent.db");
  EXPECT_EQ(replay.result(0, kSec).status, ReplayStatus::kNone);
  EXPECT_EQ(replay.last_error(), "no store at " + d.path() + "/absent.db");
}

// Issues three certificates into `dir` and returns their hashes.
std::vector<std::string> issue_three_certificates(const std::string& dir) {
  std::vector<std::string> h;
  std::string prev;
  for (int i = 1; i <= 3; ++i) {
    Checkpoint c = candidate(i * kSec);
    c.id = i;
    c.state = i == 2 ? State::kRejected : State::kVerified;
    c.reason = "r" + std::to_string(i);
    nlohmann::json doc = make_certificate("job", i, c, {cycle(i + 1, CycleStatus::kClean)}, prev, 100 + i);
    std::string err;
    EXPECT_TRUE(write_atomic(certificate_file(dir, i), doc.dump(2), &err)) << err;
    prev = doc["sha256"].get<std::string>();
    h.push_back(prev);
  }
  return h;
}

TEST(Chain, IntactChainVerifies) {
  TempDir d;
  auto h = issue_three_certificates(d.path() + "/certs");
  ChainCheck r = verify_chain(d.path() + "/certs", h);
  EXPECT_TRUE(r.intact) << r.problem;
  EXPECT_EQ(r.certificates, 3);
  nlohmann::json doc = nlohmann::json::parse(slurp(certificate_file(d.path() + "/certs", 2)));
  EXPECT_EQ(doc["prev_sha256"], h[0]);
  EXPECT_EQ(doc["verdict"], "rejected");
  EXPECT_EQ(doc["checkpoint"]["path"], "/ck/iter_0000020");
  EXPECT_EQ(certificate_hash(doc), h[1]);
}

TEST(Chain, EditedCertificateBreaksTheChainAtItsSeq) {
  TempDir d;
  const std::string dir = d.path() + "/certs";
  auto h = issue_three_certificates(dir);
  std::string text = slurp(certificate_file(dir, 2));
  text.replace(text.find("\"rejected\""), 10, "\"verified\"");
  std::ofstream(certificate_file(dir, 2)) << text;
  ChainCheck r = verify_chain(dir, h);
  EXPECT_FALSE(r.intact);
  EXPECT_EQ(r.broken_seq, 2);
  EXPECT_NE(r.problem.find("its content does not match its sha256 (edited)"), std::string::npos) << r.problem;
}

TEST(Chain, RehashedEditStillBreaksAgainstTheNextLinkAndTheStore) {
  TempDir d;
  const std::string dir = d.path() + "/certs";
  auto h = issue_three_certificates(dir);
  nlohmann::json doc = nlohmann::json::parse(slurp(certificate_file(dir, 2)));
  doc["verdict"] = "verified";
  doc["sha256"] = certificate_hash(doc);  // a careful forger re-hashes the one file
  std::ofstream(certificate_file(dir, 2)) << doc.dump(2);
  ChainCheck with_store = verify_chain(dir, h);
  EXPECT_FALSE(with_store.intact);
  EXPECT_EQ(with_store.broken_seq, 2);
  EXPECT_NE(with_store.problem.find("differs from the one the store recorded"), std::string::npos);
  ChainCheck files_only = verify_chain(dir, {});
  EXPECT_FALSE(files_only.intact);
  EXPECT_EQ(files_only.broken_seq, 3);  // the next certificate's prev_sha256 no longer matches
}

TEST(Chain, RemovedCertificateIsMissing) {
  TempDir d;
  const std::string dir = d.path() + "/certs";
  auto h = issue_three_certificates(dir);
  fs::remove(certificate_file(dir, 3));
  ChainCheck r = verify_chain(dir, h);
  EXPECT_FALSE(r.intact);
  EXPECT_EQ(r.broken_seq, 3);
}

}  // namespace
