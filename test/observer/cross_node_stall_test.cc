// Stalls across nodes (docs/observer-network.md, "Hangs across nodes"; the rule is
// docs/observer.md, "Stalls"):
//   - a node's StallWatch begins one episode when a communicator spanning nodes, with a local rank
//     in flight, has made no progress for longer than its learned threshold (3 s once warm), and
//     none for a communicator whose members are all on this node;
//   - a cold communicator's threshold is 10 s, capped by the hang timeout;
//   - the leader judges a communicator by the largest threshold any node sent (the hang detector
//     takes that node's clock instead of its own), names the root by a stall only once that one
//     passed, and says when to ask for the snapshots again;
//   - a pause repeated across nodes (same root, same point, similar length) is reported once, its
//     repeats remembered even though they opened no finding, and a repeat that lasts longer than
//     1.5 times the earlier ones is reported.
#include "observer/cluster/stall_watch.h"

#include <gtest/gtest.h>

#include "observer/cluster/core_judge.h"
#include "observer/cluster/job_waits.h"
#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
namespace obs = scout::obs;
namespace net = scout::net;
namespace shm = scout::shm;

constexpr int64_t kStep = 250 * kMs;

// Two local processes: tp {0, 1} on this node only, dp across two nodes (this node holds its
// comm rank 0, process 1). `steps` collectives in both, one every 250 ms, each followed by a pass
// and a StallWatch observation; returns the time of the last pass.
int64_t warm_up(ObserverHarness& h, obs::StallWatch& w, int tp, int dp, int steps) {
  int64_t t = kT0;
  for (int s = 0; s < steps; ++s) {
    FakeColl c;
    c.seq = uint64_t(s);
    c.t0 = kT0 + s * kStep;
    h.job.collective(tp, c);
    h.job.collective(dp, c);
    t = c.t0 + 100 * kMs;
    h.pass(t);
    w.observe(h.observer->model(), t);
  }
  return t;
}

TEST(StallWatch, ACommunicatorAcrossNodesStalledPastItsThresholdIsOneEpisode) {
  ObserverHarness h(2);
  const int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  const int dp = h.job.add_comm(0xd5, {1}, "dp", 2, {0}, 2);
  obs::StallWatch w(10 * kSec);
  warm_up(h, w, tp, dp, 20);
  // Step 20: rank 0 runs tp #20 (rank 1 never comes), rank 1 runs dp #20 (its peer is elsewhere).
  OpSpec o;
  o.key = 20;
  o.enqueue_ns = kT0 + 20 * kStep;
  FakeRec a = h.job.enqueue(tp, 0, o);
  FakeRec b = h.job.enqueue(dp, 0, o);
  FakeJob::start(a, o.enqueue_ns + kMs);
  FakeJob::start(b, o.enqueue_ns + kMs);
  h.pass(o.enqueue_ns + 100 * kMs);
  w.observe(h.observer->model(), o.enqueue_ns + 100 * kMs);
  const int64_t p = h.observer->model().comms().at({0xd5, 2}).last_progress_ns;
  EXPECT_EQ(p, o.enqueue_ns);  // the enqueue is its latest progress
  // 18 gaps of 250 ms between the 20 steps' passes (the first two add none) and one just under
  // it to #20's enqueue: threshold max(3 s, 3 x 250 ms).
  const obs::StallRule r = w.rule({0xd5, 2});
  EXPECT_EQ(r.threshold_ns, 3 * kSec);
  EXPECT_EQ(r.gaps, 19u);
  EXPECT_EQ(r.p99_ns, kStep);
  EXPECT_EQ(w.rule({0x71, 2}).threshold_ns, 3 * kSec);  // a rule for the snapshot, no episode
  EXPECT_EQ(w.rule({0x99, 2}).threshold_ns, 0);         // not watched
  for (int64_t at : {p + 3 * kSec}) {
    h.pass(at);
    w.observe(h.observer->model(), at);
  }
  EXPECT_FALSE(w.stalled());  // not longer than the threshold yet
  EXPECT_EQ(w.episodes(), 0u);
  for (int64_t at : {p + 3 * kSec + kMs, p + 5 * kSec, p + 9 * kSec}) {
    h.pass(at);
    w.observe(h.observer->model(), at);
    EXPECT_TRUE(w.stalled());
    EXPECT_EQ(w.episodes(), 1u);  // once per episode
  }
  // Both complete: the episode ends (and its 10 s wait is a gap of dp's now: threshold 3 x 10 s,
  // capped by the 10 s hang timeout); the next stall is a second episode.
  FakeJob::complete(a, p + 10 * kSec);
  FakeJob::complete(b, p + 10 * kSec);
  h.pass(p + 10 * kSec + 100 * kMs);
  w.observe(h.observer->model(), p + 10 * kSec + 100 * kMs);
  EXPECT_FALSE(w.stalled());
  EXPECT_EQ(w.episodes(), 1u);
  EXPECT_EQ(w.rule({0xd5, 2}).threshold_ns, 10 * kSec);
  o.key = 21;
  o.enqueue_ns = p + 11 * kSec;
  FakeJob::start(h.job.enqueue(dp, 0, o), o.enqueue_ns + kMs);
  h.pass(o.enqueue_ns + 100 * kMs);
  w.observe(h.observer->model(), o.enqueue_ns + 100 * kMs);
  EXPECT_FALSE(w.stalled());
  h.pass(o.enqueue_ns + 10 * kSec);
  w.observe(h.observer->model(), o.enqueue_ns + 10 * kSec);
  EXPECT_FALSE(w.stalled());
  EXPECT_EQ(w.episodes(), 1u);
  h.pass(o.enqueue_ns + 10 * kSec + kMs);
  w.observe(h.observer->model(), o.enqueue_ns + 10 * kSec + kMs);
  EXPECT_TRUE(w.stalled());
  EXPECT_EQ(w.episodes(), 2u);
}

// A cold communicator across nodes (3 gaps) whose collectives were each held about 0.1 ms on this node
// takes the 3 s floor from them (docs/observer.md, "Stalls": the cold threshold); the rule the node
// sends carries it.
TEST(StallWatch, AColdCommunicatorTakesItsThresholdFromItsOperations) {
  ObserverHarness h(2);
  const int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  const int dp = h.job.add_comm(0xd5, {1}, "dp", 2, {0}, 2);
  obs::StallWatch w(10 * kSec), hard2(2 * kSec);
  warm_up(h, w, tp, dp, 4);  // 2 gaps, and a third at #4's enqueue: cold
  OpSpec o;
  o.key = 4;
  o.enqueue_ns = kT0 + 4 * kStep;
  FakeJob::start(h.job.enqueue(dp, 0, o), o.enqueue_ns + kMs);
  const int64_t p = o.enqueue_ns;
  for (int64_t at : {p + 2 * kSec + kMs, p + 3 * kSec, p + 3 * kSec + kMs}) {
    h.pass(at);
    w.observe(h.observer->model(), at);
    hard2.observe(h.observer->model(), at);
    EXPECT_TRUE(hard2.stalled());
    EXPECT_EQ(w.stalled(), at > p + 3 * kSec) << (at - p);
  }
  EXPECT_EQ(w.rule({0xd5, 2}).threshold_ns, 3 * kSec);
  EXPECT_EQ(w.rule({0xd5, 2}).gaps, 3u);
  EXPECT_EQ(hard2.rule({0xd5, 2}).threshold_ns, 2 * kSec);  // at most the hang timeout
  EXPECT_EQ(w.episodes(), 1u);
  EXPECT_EQ(hard2.episodes(), 1u);
}

// One that never completed an operation (and has no warm communicator of its class) waits 10 s,
// or the hang timeout if shorter.
TEST(StallWatch, AColdCommunicatorThatCompletedNothingWaitsTenSecondsOrTheHangTimeoutIfShorter) {
  ObserverHarness h(2);
  const int dp = h.job.add_comm(0xd5, {1}, "dp", 2, {0}, 2);
  obs::StallWatch w(60 * kSec), hard5(5 * kSec);
  OpSpec o;
  o.key = 0;
  o.enqueue_ns = kT0;
  FakeJob::start(h.job.enqueue(dp, 0, o), o.enqueue_ns + kMs);
  const int64_t p = o.enqueue_ns;
  for (int64_t at : {p + 5 * kSec + kMs, p + 10 * kSec, p + 10 * kSec + kMs}) {
    h.pass(at);
    w.observe(h.observer->model(), at);
    hard5.observe(h.observer->model(), at);
    EXPECT_TRUE(hard5.stalled());
    EXPECT_EQ(w.stalled(), at > p + 10 * kSec) << (at - p);
  }
  EXPECT_EQ(w.rule({0xd5, 2}).threshold_ns, 10 * kSec);
  EXPECT_EQ(hard5.rule({0xd5, 2}).threshold_ns, 5 * kSec);
  EXPECT_EQ(w.episodes(), 1u);
  EXPECT_EQ(hard5.episodes(), 1u);
}

// The leader's view of a two-rank dp across two nodes: rank 0 (node 0) runs AllReduce #seq on its
// GPU since `progress`, rank 1 (node 1) never entered it; each node sends its stall rule for dp.
constexpr uint64_t kDp = 0xd0;
constexpr int kAr = shm::kFuncAllReduce;

net::WaitSummary stopped(int64_t progress, uint64_t seq, obs::StallRule node0, obs::StallRule node1) {
  net::NodeWaits n0, n1;
  n0.node = 0;
  n1.node = 1;
  n0.waits.procs.push_back({0, 0, "node0", 100, "GPU-0", 0, 0, progress, 0});
  n1.waits.procs.push_back({1, 0, "node1", 101, "GPU-1", 0, 0, progress, 0});
  net::CommWaitView c0{kDp, 2, "dp", 2, progress, {}, node0.threshold_ns, node0.gaps, node0.p99_ns};
  net::MemberView r0;
  r0.comm_rank = 0;
  r0.proc = 0;
  r0.issued[kAr] = r0.started[kAr] = seq + 1;
  r0.completed[kAr] = seq;
  r0.last_completed = {true, 0, uint8_t(kAr), seq - 1, -1, -1, progress - kMs};
  shm::RecordSnapshot rec;
  rec.index = 40 + seq;
  rec.kind = shm::kKindColl;
  rec.func = uint8_t(kAr);
  rec.key = seq;
  rec.state = shm::kStateRunning;
  rec.enqueue_ns = progress - kMs;
  rec.gpu_start_ns = progress;
  r0.records.push_back(rec);
  c0.members.push_back(r0);
  n0.waits.comms.push_back(c0);
  net::CommWaitView c1{kDp, 2, "dp", 2, progress - kMs, {}, node1.threshold_ns, node1.gaps, node1.p99_ns};
  net::MemberView r1;
  r1.comm_rank = 1;
  r1.proc = 0;
  r1.issued[kAr] = r1.started[kAr] = r1.completed[kAr] = seq;
  r1.last_completed = {true, 0, uint8_t(kAr), seq - 1, -1, -1, progress - kMs};
  c1.members.push_back(r1);
  n1.waits.comms.push_back(c1);
  return net::summarize(std::vector<net::NodeWaits>{n0, n1});  // as the channel's tree merges them
}

obs::HangConfig leader_config() { return obs::HangConfig{60 * kSec, kSec, true, true}; }

TEST(CrossNodeStall, TheLeaderJudgesByTheLargestNodeThresholdAndAsksAgainWhenItPasses) {
  obs::CoreJudge judge(leader_config());
  const int64_t p = kT0 + 100 * kSec;
  const obs::StallRule fast{3 * kSec, 40, 500 * kMs}, slow{6 * kSec, 40, 2 * kSec};
  // Node 0 asked at its 3 s: node 1's clock says dp routinely waits 2 s, so no stall yet.
  EXPECT_TRUE(judge.judge_waits(stopped(p, 5, fast, slow), p + 3500 * kMs).empty());
  EXPECT_EQ(judge.waits_due_ns(), p + 6 * kSec + 1);
  // Asked again when 6 s passed: the stall names rank 1, by node 1's rule.
  std::vector<obs::Finding> got = judge.judge_waits(stopped(p, 5, fast, slow), p + 6 * kSec + 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, obs::FindingKind::kStall);
  EXPECT_TRUE(got[0].open);
  ASSERT_EQ(got[0].suspects.size(), 1u);
  EXPECT_EQ(got[0].suspects[0].global_rank, 1);
  EXPECT_EQ(got[0].suspects[0].host, "node1");
  EXPECT_EQ(got[0].evidence["threshold_ms"], 6000.0);
  EXPECT_EQ(got[0].evidence["rule"]["gaps"], 40);
  EXPECT_EQ(got[0].evidence["rule"]["p99_ms"], 2000.0);
  EXPECT_EQ(got[0].evidence["named_ns"], p + 6 * kSec + 1);
  EXPECT_EQ(judge.waits_due_ns(), 0);
  EXPECT_EQ(judge.hang_due_ns(), p + 60 * kSec + 1);  // the hang timeout, next
  // Progress resumed: nobody reports a stall, it closes.
  got = judge.all_clear(p + 8 * kSec);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].open);
}

// In a large job the digest compares a stream only every P rounds (P in the hundreds at 16,384
// nodes), so no stream stall asks for the snapshots at the hang timeout: the leader must, or the
// stall it named is never judged a hang.
TEST(CrossNodeStall, AStallNamedBeforeTheTimeoutIsJudgedAgainAtItAndBecomesTheHang) {
  obs::CoreJudge judge(leader_config());
  const int64_t p = kT0 + 100 * kSec;
  const obs::StallRule rule{3 * kSec, 40, 500 * kMs};
  std::vector<obs::Finding> got = judge.judge_waits(stopped(p, 5, rule, rule), p + 3500 * kMs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, obs::FindingKind::kStall);
  EXPECT_EQ(judge.waits_due_ns(), 0);
  EXPECT_EQ(judge.hang_due_ns(), p + 60 * kSec + 1);
  got = judge.judge_waits(stopped(p, 5, rule, rule), judge.hang_due_ns());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, obs::FindingKind::kHang);
  EXPECT_TRUE(got[0].open);
  ASSERT_EQ(got[0].suspects.size(), 1u);
  EXPECT_EQ(got[0].suspects[0].global_rank, 1);
  EXPECT_EQ(judge.hang_due_ns(), 0);  // past the timeout: nothing more to wait for
}

TEST(CrossNodeStall, AGivenClockReplacesTheLearnedOneInTheHangDetector) {
  obs::HangDetector hang(leader_config());
  const int64_t p = kT0 + 100 * kSec;
  obs::JobWaits job;
  job.update(stopped(p, 5, {}, {}), p + 4 * kSec);
  const obs::Model& m = job.model();
  obs::FindingBoard board;
  hang.pass(m, p + 4 * kSec, board);
  EXPECT_EQ(hang.threshold_ns({kDp, 2}), 10 * kSec);  // its own clock has no gaps: cold
  EXPECT_EQ(hang.stall_pending(m), p + 10 * kSec + 1);
  hang.set_stall_clocks({{{kDp, 2}, obs::StallClock::given(6 * kSec, 40, 2 * kSec)}});
  hang.pass(m, p + 4 * kSec, board);
  EXPECT_EQ(hang.threshold_ns({kDp, 2}), 6 * kSec);  // the given threshold (3 x its p99 there)
  EXPECT_EQ(hang.stall_pending(m), p + 6 * kSec + 1);
  EXPECT_TRUE(board.all().empty());
}

TEST(CrossNodeStall, ARepeatedPauseAcrossNodesIsReportedOnceAndRemembered) {
  obs::CoreJudge judge(leader_config());
  const obs::StallRule rule{3 * kSec, 40, 500 * kMs};
  // Pause 1 (8 s): named at 3.5 s, closed when it ends.
  int64_t p = kT0 + 100 * kSec;
  std::vector<obs::Finding> got = judge.judge_waits(stopped(p, 5, rule, rule), p + 3500 * kMs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, obs::FindingKind::kStall);
  got = judge.all_clear(p + 8 * kSec);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].open);
  // Pauses 2 and 3, the same rank before the same call, as long: not reported.
  for (uint64_t seq : {105, 205}) {
    p += 30 * kSec;
    EXPECT_TRUE(judge.judge_waits(stopped(p, seq, rule, rule), p + 3500 * kMs).empty()) << seq;
    EXPECT_TRUE(judge.all_clear(p + 8 * kSec).empty()) << seq;
  }
  // Pause 4 goes on: reported once it lasts longer than 1.5 x 8 s (each earlier one was 8 s
  // long: a repeat that was never reported still ended when its pause did).
  p += 30 * kSec;
  EXPECT_TRUE(judge.judge_waits(stopped(p, 305, rule, rule), p + 3500 * kMs).empty());
  EXPECT_TRUE(judge.judge_waits(stopped(p, 305, rule, rule), p + 11 * kSec).empty());
  got = judge.judge_waits(stopped(p, 305, rule, rule), p + 12 * kSec + kMs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, obs::FindingKind::kStall);
  EXPECT_EQ(got[0].suspects[0].global_rank, 1);
  EXPECT_EQ(got[0].evidence["earlier_ms"], 8000.0);
}

}  // namespace
