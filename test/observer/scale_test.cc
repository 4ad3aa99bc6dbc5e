// What keeps the leader's work proportional to what changed, not to the job
// (docs/observer-network.md, "The leader's work as the job grows"), checked for behaviour:
//   - the finding board's change stamps (changed_since, order, open count) and the consumers that
//     read only what changed: LeaderMerge's hang index, CrossNodeStep's forwarding with refreshes;
//   - the Model's membership counts and the live-operation bound by age;
//   - the Observer writes only the rank and communicator rows that changed, a member list only
//     when membership changed, and every row again after a batch the store could not keep;
//   - a drill-down narrows a disagreeing range to the operations that differ; wait snapshots are
//     gathered at most once per drill_repeat_rounds however many streams stall;
//   - the synthetic 3-D parallel job of the scaling benchmark at 256 ranks: the sdc attributed to
//     the corrupted rank, the hang's root named, nothing else opened.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <thread>

#include "observer/cluster/core_judge.h"
#include "observer/cluster/cross_node.h"
#include "observer/cluster/leader_merge.h"
#include "observer/model/memory_sink.h"
#include "observer/net/digest.h"
#include "observer/net/inproc_channel.h"
#include "observer/net/wait_filter.h"
#include "observer/store/reader.h"
#include "observer/store/writer.h"
#include "test/support/net_workload.h"
#include "test/support/observer_harness.h"
#include "test/support/scale_run.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::testing;
namespace obs = scout::obs;
namespace net = scout::net;

obs::Finding finding(const std::string& key, obs::FindingKind kind = obs::FindingKind::kStraggler) {
  obs::Finding f;
  f.kind = kind;
  f.dedup_key = key;
  f.summary = key;
  return f;
}

obs::Finding attributed_hang(const std::string& key, const std::string& host, int pid) {
  obs::Finding f = finding(key, obs::FindingKind::kHang);
  f.suspects.push_back({7, host, pid, "", -1});
  return f;
}

std::vector<std::string> keys(const std::vector<const obs::Finding*>& v) {
  std::vector<std::string> out;
  for (const obs::Finding* f : v) out.push_back(f->dedup_key);
  return out;
}

TEST(FindingBoardStamps, ChangedSinceListsEachChangedFindingOnceInChangeOrder) {
  obs::FindingBoard b;
  EXPECT_EQ(b.stamp(), 0u);
  b.report(finding("a"));
  b.report(finding("b"));
  const uint64_t s1 = b.stamp();
  EXPECT_EQ(s1, 2u);
  b.report(finding("c"));
  b.report(finding("a"));  // updated: moves after c
  EXPECT_EQ(keys(b.changed_since(s1)), (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(keys(b.changed_since(0)), (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_TRUE(b.changed_since(b.stamp()).empty());
  EXPECT_TRUE(b.close("b", 5));
  EXPECT_FALSE(b.close("b", 6));  // not open: no change, no stamp
  EXPECT_EQ(keys(b.changed_since(s1 + 2)), (std::vector<std::string>{"b"}));
  EXPECT_EQ(b.order("a"), 0);
  EXPECT_EQ(b.order("c"), 2);
  EXPECT_EQ(b.order("zz"), -1);
  EXPECT_EQ(b.open_count(), 2u);
  b.report(finding("b"));  // reopened
  EXPECT_EQ(b.open_count(), 3u);
  EXPECT_EQ(keys(b.all()), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(FindingBoardStamps, FlushKeepsTheOrderOfFirstChange) {
  obs::FindingBoard b;
  b.report(finding("a"));
  b.report(finding("b"));
  b.report(finding("a"));
  obs::MemorySink sink;
  b.flush_to(sink);
  // Ids in the order the findings were first reported (a before b), each upserted once.
  ASSERT_EQ(sink.findings().size(), 2u);
  EXPECT_EQ(b.find("a")->id, 1);
  EXPECT_EQ(b.find("b")->id, 2);
  b.report(finding("b"));
  b.report(finding("c"));
  b.close("a", 9);
  obs::MemorySink again;
  b.flush_to(again);
  std::vector<std::string> got;
  for (const obs::Finding& f : again.findings()) got.push_back(f.dedup_key);
  // A fresh sink numbers in upsert order and lists by id: the order of first change since the
  // last flush (b reported, c reported, a closed), each once.
  EXPECT_EQ(got, (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_EQ(again.findings()[2].open, false);
  EXPECT_EQ(again.findings()[0].open, true);
}

TEST(LeaderMergeIndex, UnifiesAHangWithTheOpenOneNamingTheSameSuspectsAmongManyFindings) {
  obs::FindingBoard board;
  obs::LeaderMerge merge;
  std::vector<obs::Finding> history;
  for (int i = 0; i < 500; ++i) {
    obs::Finding f = finding("straggler:" + std::to_string(i));
    f.open = false;
    history.push_back(f);
  }
  merge.apply(board, std::move(history), {});
  EXPECT_EQ(board.size(), 500u);
  EXPECT_EQ(board.open_count(), 0u);
  // The leader's own (local) detector reported a hang naming node3:4242 directly on the board.
  board.report(attributed_hang("hang:local", "node3", 4242));
  // The Judge decides the same stopped rank under another key: it takes the local one's key.
  merge.apply(board, {}, {attributed_hang("hang:jobwide", "node3", 4242)});
  EXPECT_EQ(board.find("hang:jobwide"), nullptr);
  EXPECT_EQ(board.size(), 501u);
  // Once that hang is closed, a new hang of the same rank is a new finding.
  board.close("hang:local", 100);
  merge.apply(board, {attributed_hang("hang:again", "node3", 4242)}, {});
  ASSERT_NE(board.find("hang:again"), nullptr);
  EXPECT_TRUE(board.is_open("hang:again"));
  // Another rank's hang is never unified with it.
  merge.apply(board, {attributed_hang("hang:other", "node5", 99)}, {});
  EXPECT_NE(board.find("hang:other"), nullptr);
}

struct StepFixture {
  obs::Model model;
  obs::FindingBoard board;
  obs::StragglerDetector straggler{obs::StragglerConfig{}};
  std::mutex mu;
  obs::NetState net_state;
  obs::CrossNodeOptions opt;
  std::unique_ptr<obs::CrossNodeStep> step;
  StepFixture() {
    opt.gloo.rank = 1;  // not the leader: it forwards
    opt.gloo.size = 4;
    opt.forward_refresh_ns = 10 * kSec;
    step = std::make_unique<obs::CrossNodeStep>(model, mu, opt);
  }
  std::vector<std::string> pass(int64_t now) {
    obs::Observer::CrossNodeIo io{model, board, straggler, now, false, net_state};
    std::vector<std::string> out;
    for (const obs::Finding& f : step->step(io, {}, 0)) out.push_back(f.dedup_key);
    return out;
  }
};

TEST(CrossNodeForward, SendsWhatChangedAndRefreshesOpenFindingsOnlyWhenDue) {
  StepFixture s;
  for (int i = 0; i < 100; ++i) {
    obs::Finding f = finding("closed:" + std::to_string(i));
    s.board.report(f);
    s.board.close(f.dedup_key, kT0);
  }
  s.board.report(finding("open:a"));
  s.board.report(finding("open:b"));
  EXPECT_EQ(s.pass(kT0).size(), 102u);  // everything once
  EXPECT_TRUE(s.pass(kT0 + kSec).empty());
  // An update that changes nothing forwarded (last_seen only) is not sent before its refresh.
  obs::Finding a = finding("open:a");
  a.last_seen_ns = kT0 + 2 * kSec;
  s.board.report(a);
  EXPECT_TRUE(s.pass(kT0 + 2 * kSec).empty());
  // A change of what the leader keeps (a suspect) is sent at once.
  obs::Finding b = finding("open:b");
  b.suspects.push_back({12, "node1", 77, "", -1});
  s.board.report(b);
  EXPECT_EQ(s.pass(kT0 + 3 * kSec), (std::vector<std::string>{"open:b"}));
  // Refresh: open:a was last sent at kT0, open:b at kT0 + 3 s; closed findings never again.
  EXPECT_EQ(s.pass(kT0 + 10 * kSec), (std::vector<std::string>{"open:a"}));
  EXPECT_TRUE(s.pass(kT0 + 12 * kSec).empty());
  EXPECT_EQ(s.pass(kT0 + 13 * kSec), (std::vector<std::string>{"open:b"}));
  s.board.close("open:a", kT0 + 14 * kSec);
  EXPECT_EQ(s.pass(kT0 + 14 * kSec), (std::vector<std::string>{"open:a"}));
  EXPECT_TRUE(s.pass(kT0 + 30 * kSec) == (std::vector<std::string>{"open:b"}));
}

TEST(ModelScale, MembershipCountsFollowSetMember) {
  obs::Model m;
  obs::Comm& c = m.upsert_comm({0xabc, 4}, "dp", 4);
  EXPECT_FALSE(c.members_known());
  obs::Proc p;
  p.host = "h";
  p.pid = 1;
  const int a = m.upsert_proc(p, kT0);
  p.pid = 2;
  const int b = m.upsert_proc(p, kT0);
  m.set_member(c, 2, a, 10, false);
  m.set_member(c, 0, b, 10, false);
  EXPECT_EQ(c.known_ranks, (std::vector<int>{0, 2}));
  const uint64_t v = c.members_version;
  m.set_member(c, 2, a, 10, false);  // no change
  EXPECT_EQ(c.members_version, v);
  m.set_member(c, 2, a, 10, true);
  EXPECT_EQ(c.n_finalized, 1);
  EXPECT_GT(c.members_version, v);
  m.set_member(c, 2, b, 5, false);  // an older process: ignored
  EXPECT_EQ(c.ranks[2].proc, a);
  m.set_member(c, 2, b, 20, false);  // a restarted process replaces it
  EXPECT_EQ(c.ranks[2].proc, b);
  EXPECT_EQ(c.n_finalized, 0);
  m.set_member(c, 1, a, 10, true);
  EXPECT_FALSE(c.members_known());  // rank 3 not known yet
  m.set_member(c, 3, a, 10, true);
  EXPECT_EQ(c.known_ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(c.members_known());
  EXPECT_FALSE(c.finalized());
  m.set_member(c, 0, b, 10, true);
  m.set_member(c, 2, b, 20, true);
  EXPECT_TRUE(c.finalized());
}

TEST(ModelScale, TheLiveOperationBoundDropsTheOperationSeenFirst) {
  obs::Model m;
  obs::Comm& c = m.upsert_comm({0x123, 2}, "x", 2);
  scout::shm::RecordSnapshot r;
  r.kind = scout::shm::kKindColl;
  r.func = scout::shm::kFuncAllReduce;
  r.state = scout::shm::kStateEnqueued;
  r.flags = scout::shm::kFlagNoKernelCh;  // not in flight: only the op bound is exercised
  // Operations first seen at decreasing times for the odd ones: the oldest is the one seen at
  // the smallest time, not the first inserted.
  for (uint64_t k = 0; k < obs::kMaxLiveOps; ++k) {
    r.key = k;
    r.index = k;
    const int64_t seen = k == 5 ? kT0 - 1 : kT0 + int64_t(k);
    ASSERT_NE(m.apply(c, 0, r, seen), nullptr);
  }
  EXPECT_EQ(c.ops.size(), obs::kMaxLiveOps);
  r.key = obs::kMaxLiveOps;
  r.index = r.key;
  m.apply(c, 0, r, kT0 + int64_t(obs::kMaxLiveOps));
  EXPECT_EQ(c.ops_dropped, 1u);
  EXPECT_EQ(c.ops.size(), obs::kMaxLiveOps);
  EXPECT_EQ(c.ops.count({obs::OpClass::kColl, scout::shm::kFuncAllReduce, 5, -1, -1}), 0u);
  EXPECT_EQ(c.ops.count({obs::OpClass::kColl, scout::shm::kFuncAllReduce, 0, -1, -1}), 1u);
  r.key = r.index = obs::kMaxLiveOps + 1;
  m.apply(c, 0, r, kT0 + int64_t(obs::kMaxLiveOps) + 1);
  EXPECT_EQ(c.ops.count({obs::OpClass::kColl, scout::shm::kFuncAllReduce, 0, -1, -1}), 0u);
  EXPECT_EQ(c.by_age.size(), c.ops.size());
  m.drop(c, {obs::OpClass::kColl, scout::shm::kFuncAllReduce, 7, -1, -1});
  EXPECT_EQ(c.by_age.size(), c.ops.size());
}

// A Sink that counts what it is given and can refuse one batch.
class CountingSink : public obs::MemorySink {
 public:
  void put_ranks(const std::vector<obs::RankInfo>& r) override {
    ranks += r.size();
    MemorySink::put_ranks(r);
  }
  void put_comms(const std::vector<obs::CommInfo>& c) override {
    for (const obs::CommInfo& x : c) (x.members ? with_members : progress_only)++;
    MemorySink::put_comms(c);
  }
  bool flush() override {
    MemorySink::flush();
    if (!fail_next) return true;
    fail_next = false;
    return false;
  }
  void reset() { ranks = with_members = progress_only = 0; }
  size_t ranks = 0, with_members = 0, progress_only = 0;
  bool fail_next = false;
};

TEST(ObserverWrites, OnlyRowsThatChangedAndMembersOnlyWhenMembershipChanged) {
  TempDir dir;
  FakeJob job(dir.path(), "job1", 2, "node0", 256);
  const int dp = job.add_comm(0xd0, {0, 1}, "dp", 64, {0, 1}, 32);  // 64 ranks, 2 of them here
  CountingSink sink;
  obs::ObserverOptions opt;
  opt.job = "job1";
  opt.host = "node0";
  opt.shm_dir = dir.path();
  opt.liveness = job.liveness();
  opt.reclaim_after_ns = -1;
  opt.nodes = 32;
  opt.hang.defer_cross_node = true;
  obs::Observer o(opt, &sink);
  FakeColl c;
  c.t0 = kT0;
  job.collective(dp, c);
  o.pass(kT0 + kSec);
  EXPECT_EQ(sink.ranks, 2u);
  EXPECT_EQ(sink.with_members, 1u);
  ASSERT_EQ(sink.comms().size(), 1u);
  EXPECT_EQ(sink.comms()[0].global_ranks.size(), 64u);
  EXPECT_EQ(sink.comms()[0].global_ranks[1], 1);
  EXPECT_EQ(sink.comms()[0].global_ranks[2], -1);
  sink.reset();
  o.pass(kT0 + kSec + 1);  // nothing new
  EXPECT_EQ(sink.ranks, 0u);
  EXPECT_EQ(sink.with_members + sink.progress_only, 0u);
  c.seq = 1;
  c.t0 = kT0 + 2 * kSec;
  job.collective(dp, c);
  o.pass(kT0 + 3 * kSec);  // progress: the comm's progress fields only, and the ranks' last event
  EXPECT_EQ(sink.with_members, 0u);
  EXPECT_EQ(sink.progress_only, 1u);
  EXPECT_EQ(sink.comms()[0].global_ranks.size(), 64u);  // kept
  EXPECT_EQ(sink.comms()[0].last_progress_ns, o.model().comms().begin()->second.last_progress_ns);
  // A batch the sink could not keep: every row again at the next pass.
  sink.reset();
  sink.fail_next = true;
  c.seq = 2;
  c.t0 = kT0 + 4 * kSec;
  job.collective(dp, c);
  o.pass(kT0 + 5 * kSec);
  sink.reset();
  o.pass(kT0 + 5 * kSec + 1);
  EXPECT_EQ(sink.ranks, 2u);
  EXPECT_EQ(sink.with_members, 1u);
}

TEST(StoreWriterComms, ProgressOnlyRowKeepsItsMembers) {
  TempDir dir;
  std::string err;
  auto w = scout::store::StoreWriter::open(dir.path() + "/s.db", {}, &err);
  ASSERT_TRUE(w) << err;
  obs::CommInfo c;
  c.comm_hash = 0xfeed;
  c.name = "world";
  c.nranks = 3;
  c.nnodes = 2;
  c.global_ranks = {0, 1, 2};
  c.state = "active";
  w->put_comms({c});
  ASSERT_TRUE(w->flush());
  obs::CommInfo p;
  p.comm_hash = 0xfeed;
  p.nranks = 3;
  p.members = false;
  p.ops_complete = 9;
  p.last_seq[4] = 7;
  p.last_progress_ns = 1234;
  p.state = "hung";
  w->put_comms({p});
  ASSERT_TRUE(w->flush());
  auto r = scout::store::StoreReader::open(dir.path() + "/s.db");
  ASSERT_TRUE(r);
  const std::vector<obs::CommInfo> got = r->comms();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, "world");
  EXPECT_EQ(got[0].nnodes, 2);
  EXPECT_EQ(got[0].global_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(got[0].ops_complete, 9u);
  EXPECT_EQ(got[0].last_seq[4], 7u);
  EXPECT_EQ(got[0].last_progress_ns, 1234);
  EXPECT_EQ(got[0].state, "hung");
}

// N observers of a NetWorkload job, one round at a time (as test/net/digest_test.cc).
struct NetCluster {
  NetCluster(int nodes, net::DigestConfig cfg = {}, int funcs = 2)
      : job(nodes, 8, funcs), net(nodes), judge(obs::HangConfig{cfg.stall_ns, kSec, true}) {
    for (int n = 0; n < nodes; ++n) {
      views.push_back(std::make_unique<NetWorkload::Node>(&job, n, 0));
      net.endpoint(n).set_timeout(std::chrono::milliseconds(60000));
      ex.push_back(std::make_unique<net::DigestExchange>(&net.endpoint(n), &judge, cfg));
    }
  }
  std::vector<net::RoundResult> round(int64_t t) {
    std::vector<net::RoundResult> res(job.nodes());
    std::vector<std::thread> th;
    for (int i = 0; i < job.nodes(); ++i) {
      th.emplace_back([&, i] {
        views[i]->set_time(t);
        res[i] = ex[i]->round(*views[i], t, net::ClockEstimate{}, {});
      });
    }
    for (auto& x : th) x.join();
    return res;
  }
  NetWorkload job;
  net::InprocNetwork net;
  obs::CoreJudge judge;
  std::vector<std::unique_ptr<NetWorkload::Node>> views;
  std::vector<std::unique_ptr<net::DigestExchange>> ex;
};

TEST(DrillNarrowing, OneCorruptedOperationCostsTheLeaderOneRecordPerNode) {
  NetCluster c(16);
  const int guilty = 9 * 8 + 5;  // node 9, dp5
  c.job.corrupt_fp_once(guilty, 120);
  std::vector<obs::Finding> found;
  int narrowed_round = -1;
  for (int r = 0; r < 5; ++r) {
    auto res = c.round((r + 1) * kSec);
    for (auto& f : res[0].decided) found.push_back(f);
    if (res[0].narrowing_rounds > 0) {
      narrowed_round = r;
      for (int n = 0; n < 16; ++n) {
        // The range [100, 150) of dp5's AllReduce and AllGather: split in 16, then 3 or 4: two
        // sub-rounds, and each node sends the one differing operation of each stream.
        EXPECT_EQ(res[n].narrowing_rounds, 2) << "node " << n;
        EXPECT_EQ(res[n].ops_drilled, 2) << "node " << n;
        EXPECT_EQ(res[n].ops_not_drilled, 0u);
      }
    }
  }
  EXPECT_EQ(narrowed_round, 3);
  ASSERT_EQ(found.size(), 2u);
  for (const obs::Finding& f : found) {
    EXPECT_EQ(f.kind, obs::FindingKind::kSdc);
    EXPECT_EQ(f.verdict, obs::Verdict::kAttributed);
    ASSERT_EQ(f.suspects.size(), 1u);
    EXPECT_EQ(f.suspects[0].global_rank, guilty);
    EXPECT_EQ(f.suspects[0].host, "node9");
    ASSERT_TRUE(f.key);
    EXPECT_EQ(f.key->seq, 120u);
    EXPECT_EQ(f.evidence["voters"], 16);  // every rank's vote reached the leader
    EXPECT_EQ(f.evidence["votes"][0]["ranks"].size(), 15u);
  }
}

TEST(DrillNarrowing, WaitSnapshotsAtMostOncePerRepeatHoweverManyStreamsStall) {
  net::DigestConfig cfg;
  cfg.stall_ns = 3 * kSec;
  cfg.drill_repeat_rounds = 10;
  NetCluster c(4, cfg, 1);
  c.job.stop(3 * 8 + 2, 200);  // dp2 stops at seq 200 (t = 4 s)
  c.job.stop(1 * 8 + 6, 260);  // dp6 stops at seq 260 (t = 5.2 s): stalls a round or two later
  std::vector<int> drills;
  for (int r = 0; r < 30; ++r) {
    auto res = c.round((r + 1) * kSec);
    for (int n = 1; n < 4; ++n) EXPECT_EQ(res[n].waits_gathered, res[0].waits_gathered);
    if (res[0].waits_gathered) drills.push_back(r);
  }
  ASSERT_GE(drills.size(), 2u);
  for (size_t i = 1; i < drills.size(); ++i) EXPECT_GE(drills[i] - drills[i - 1], 10) << "drills " << i;
}

// A two-rank communicator across two nodes: rank 0 (node 0) runs AllReduce #5 on its GPU, rank 1
// (node 1) never entered it. Node 1 also holds an idle node-local communicator.
constexpr uint64_t kDp = 0xd0, kTp = 0x70;
constexpr int kAr = scout::shm::kFuncAllReduce;

std::vector<net::NodeWaits> two_node_hang(uint64_t rank0_completed = 5) {
  net::NodeWaits n0, n1;
  n0.node = 0;
  n1.node = 1;
  n0.waits.procs.push_back({0, 0, "node0", 100, "GPU-0", 0, 0, kT0, 0});
  n1.waits.procs.push_back({7, 0, "node1", 101, "GPU-7", 0, 0, kT0, 0});  // in tp only
  n1.waits.procs.push_back({1, 1, "node1", 102, "GPU-1", 1, 0, kT0, 0});
  net::CommWaitView dp0{kDp, 2, "dp", 2, kT0, {}};
  net::MemberView r0;
  r0.comm_rank = 0;
  r0.proc = 0;
  r0.issued[kAr] = 6;
  r0.started[kAr] = 6;
  r0.completed[kAr] = rank0_completed;
  r0.last_completed = {true, 0, uint8_t(kAr), rank0_completed - 1, -1, -1, rank0_completed > 5 ? kT0 + 20 * kSec : kT0};
  if (rank0_completed < 6) {
    scout::shm::RecordSnapshot rec;
    rec.index = 40;
    rec.kind = scout::shm::kKindColl;
    rec.func = uint8_t(kAr);
    rec.key = 5;
    rec.state = scout::shm::kStateRunning;
    rec.enqueue_ns = rec.gpu_start_ns = kT0 + 1;
    r0.records.push_back(rec);
  }
  dp0.members.push_back(r0);
  n0.waits.comms.push_back(dp0);
  net::CommWaitView dp1{kDp, 2, "dp", 2, kT0, {}};
  net::MemberView r1;
  r1.comm_rank = 1;
  r1.proc = 1;
  r1.issued[kAr] = r1.started[kAr] = r1.completed[kAr] = 5;
  r1.last_completed = {true, 0, uint8_t(kAr), 4, -1, -1, kT0};
  dp1.members.push_back(r1);
  net::CommWaitView tp{kTp, 2, "tp", 1, kT0, {}};
  net::MemberView t0, t1;
  t0.comm_rank = 0;
  t0.proc = 0;
  t1.comm_rank = 1;
  t1.proc = 1;
  tp.members = {t0, t1};
  n1.waits.comms = {tp, dp1};
  return {n0, n1};
}

TEST(WaitFilter, OnlyCommunicatorsSomeNodeWaitsInTravelWithTheProcessesTheyName) {
  std::vector<net::NodeWaits> w = two_node_hang();
  EXPECT_TRUE(net::waits_in(w[0].waits.comms[0]));   // rank 0 runs AllReduce #5
  EXPECT_FALSE(net::waits_in(w[1].waits.comms[0]));  // tp: nothing issued
  EXPECT_FALSE(net::waits_in(w[1].waits.comms[1]));  // rank 1 never entered #5
  // The MAX allreduce of both nodes' marks: node 0 marked dp, node 1 nothing.
  std::vector<uint64_t> buckets(64, 0), none(64, 0);
  net::mark_waited(w[0].waits, &buckets);
  net::mark_waited(w[1].waits, &none);
  EXPECT_EQ(std::count(buckets.begin(), buckets.end(), 1u), 2);
  EXPECT_EQ(std::count(none.begin(), none.end(), 1u), 0);
  // Node 1 keeps dp (its idle rank 1 is what node 0 waits for), drops tp and process 7.
  net::keep_waited(buckets, &w[1].waits);
  ASSERT_EQ(w[1].waits.comms.size(), 1u);
  EXPECT_EQ(w[1].waits.comms[0].comm_hash, kDp);
  ASSERT_EQ(w[1].waits.procs.size(), 1u);
  EXPECT_EQ(w[1].waits.procs[0].global_rank, 1);
  EXPECT_EQ(w[1].waits.comms[0].members[0].proc, 0);
  // The job-wide analysis on what travelled names rank 1.
  obs::CoreJudge judge(obs::HangConfig{kSec, kSec, true});
  net::keep_waited(buckets, &w[0].waits);
  const std::vector<obs::Finding> got = judge.judge_waits(w, kT0 + 5 * kSec);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(describe_finding(got[0]), "hang attributed open [dp AllReduce #5] suspects 1");
}

TEST(WaitFilter, ARepeatedDrillDownWithUnchangedWaitsRefreshesTheHangWithoutANewAnalysis) {
  obs::CoreJudge judge(obs::HangConfig{kSec, kSec, true});
  std::vector<obs::Finding> got = judge.judge_waits(two_node_hang(), kT0 + 5 * kSec);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].evidence["stalled_ms"], 5000);
  // Ten rounds later, the same waits (times aside): the same finding, seen again, its evidence
  // as the last analysis found it.
  std::vector<net::NodeWaits> later = two_node_hang();
  later[0].waits.procs[0].last_event_ns = kT0 + 14 * kSec;
  got = judge.judge_waits(later, kT0 + 15 * kSec);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].open);
  EXPECT_EQ(got[0].last_seen_ns, kT0 + 15 * kSec);
  EXPECT_EQ(got[0].evidence["stalled_ms"], 5000);
  EXPECT_EQ(describe_finding(got[0]), "hang attributed open [dp AllReduce #5] suspects 1");
  // Rank 0 completed #5 at kT0 + 20 s (its counters moved): analysed again, the hang closes.
  got = judge.judge_waits(two_node_hang(6), kT0 + 25 * kSec);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].open);
}

TEST(ScaleScenario, AtTwoHundredFiftySixRanksTheSdcAndTheHangRootAreNamed) {
  ScalePhases ph;
  ph.healthy_steps = 8;
  ph.sdc_steps = 12;
  ph.hang_steps = 30;
  ScaleScenario s(32, ph);  // 256 ranks: DP 8
  net::InprocNetwork network(32);
  std::string error;
  std::thread others([&] { run_other_nodes(s, network, &error); });
  net::Channel& ch = network.endpoint(0);
  ch.set_timeout(std::chrono::milliseconds(120000));
  TempDir dir;
  LeaderResult r = run_leader(s, ch, dir.path());
  others.join();
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_TRUE(r.healthy_ok) << r.why;
  EXPECT_TRUE(r.sdc_ok) << r.why;
  EXPECT_TRUE(r.hang_ok) << r.why;
  EXPECT_TRUE(r.others_ok) << r.why;
  // Exact attribution: rank 253 (node 31, TP rank 5) received the corrupted bytes of its DP
  // AllReduce #53 (step 13 x 4 per step + 1); rank 251 (node 31, TP rank 3) never entered its DP
  // AllReduce #104 (step 26 x 4); every other rank waits behind it.
  EXPECT_EQ(s.sdc_rank, 253);
  EXPECT_EQ(s.hang_rank, 251);
  int sdc = 0, hang = 0;
  for (const obs::Finding& f : r.findings) {
    if (f.kind == obs::FindingKind::kSdc) {
      ++sdc;
      ASSERT_EQ(f.suspects.size(), 1u);
      EXPECT_EQ(f.suspects[0].global_rank, 253);
      ASSERT_TRUE(f.key);
      EXPECT_EQ(f.key->func, "AllReduce");
      EXPECT_EQ(f.key->seq, 53u);
    } else if (f.kind == obs::FindingKind::kHang) {
      ++hang;
      ASSERT_EQ(f.suspects.size(), 1u);
      EXPECT_EQ(f.suspects[0].global_rank, 251);
      ASSERT_TRUE(f.key);
      EXPECT_EQ(f.key->func, "AllReduce");
      EXPECT_EQ(f.key->seq, 104u);
    }
  }
  EXPECT_EQ(sdc, 1);
  EXPECT_EQ(hang, 1);
  // The hang finding, as the job-wide analysis words it: the root never entered its DP
  // AllReduce; every other rank waits behind it.
  for (const obs::Finding& f : r.findings) {
    if (f.kind != obs::FindingKind::kHang) continue;
    EXPECT_EQ(f.evidence["class"], "absent");
    EXPECT_EQ(f.evidence["root"][0]["reason"], "idle");
    EXPECT_EQ(f.evidence["waiting_ranks"].size(), size_t(s.job.ranks() - 1));
    EXPECT_EQ(f.suspects[0].host, "node31");
  }
}

}  // namespace
