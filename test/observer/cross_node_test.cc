// Several observers in one process, each with its own node's segments (FakeJob), joined by the
// observer network over the in-process channel: the whole path of scout-observer --nodes 4 but
// with every record written by the test. Layout of `scout-sim --ranks 8 --tp 2 --nodes 4`: node
// n holds global ranks 2n and 2n+1, TP group tp<n> inside the node, DP groups dp0 = {0,2,4,6}
// and dp1 = {1,3,5,7} across the nodes (comm rank = node). Each node's clock runs
// kOffset(n) apart from the leader's; the observers estimate it.
//
// What must hold (docs/observer-network.md):
//   - healthy steps: no finding anywhere, digests compared, no drill-down;
//   - a corrupted receive buffer of rank 7 in dp1 (cross-node): the leader's store gets exactly
//     one sdc finding naming rank 7, decided by the core's own fingerprint check;
//   - rank 7 stops before a dp1 AllReduce: the leader gets exactly one hang finding naming
//     rank 7 with the absent-rank classification and the wait-for chain across nodes
//     (0 -> 1 in tp0, 1 -> 7 in dp1, ..., 6 -> 7 in tp3), while nodes 0-2, which see only half
//     of the chain, name nobody;
//   - rank 7 arrives 30 ms late in every dp1 AllReduce only: node 3 names it a straggler from
//     the cross-node lateness (clock offsets applied), and the finding reaches the leader.
#include "observer/cluster/cross_node.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "observer/model/memory_sink.h"
#include "observer/net/inproc_channel.h"
#include "test/support/fake_job.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::testing;
namespace obs = scout::obs;
namespace net = scout::net;

constexpr int kNodes = 4;
constexpr int64_t kHangTimeout = 1 * kSec;
int64_t offset(int node) { return int64_t(node) * 7 * kSec + node * 333; }  // node clock - leader clock
uint64_t tp_hash(int node) { return 0x7000 + uint64_t(node); }
constexpr uint64_t kDp0 = 0xd0d0, kDp1 = 0xd1d1;

// One in-process network per epoch (what GlooChannel::connect does through the rendezvous).
class InprocEpochs {
 public:
  std::unique_ptr<net::Channel> connect(uint64_t epoch, int rank) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& n = nets_[epoch];
    if (!n) n = std::make_unique<net::InprocNetwork>(kNodes);
    auto ch = n->connect(rank);
    ch->set_timeout(std::chrono::milliseconds(10000));
    return ch;
  }

 private:
  std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<net::InprocNetwork>> nets_;
};

struct Node {
  Node(int n, const net::Clock& base, InprocEpochs& epochs)
      : rank(n), clock(base, offset(n)), job(dir.path(), "job1", 2, "node" + std::to_string(n), 256, 8, 2 * n) {
    tp = job.add_comm(tp_hash(n), {0, 1}, "tp" + std::to_string(n));
    dp0 = job.add_comm(kDp0, {0}, "dp0", kNodes, {n}, kNodes);
    dp1 = job.add_comm(kDp1, {1}, "dp1", kNodes, {n}, kNodes);
    obs::ObserverOptions o;
    o.job = "job1";
    o.host = "node" + std::to_string(n);
    o.shm_dir = dir.path();
    o.nodes = kNodes;
    o.node_rank = n;
    o.liveness = job.liveness();
    o.reclaim_after_ns = -1;
    o.hang.timeout_ns = kHangTimeout;
    o.hang.defer_cross_node = true;
    o.judge.settle_timeout_ns = kSec;
    observer = std::make_unique<obs::Observer>(o, &sink);
    obs::CrossNodeOptions c;
    c.agent.interval = std::chrono::milliseconds(20);
    c.agent.clock_sync_rounds = 50;
    c.agent.clock_samples = 4;
    c.agent.retry = std::chrono::milliseconds(50);
    c.agent.digest.stall_ns = kHangTimeout;
    c.agent.digest.drill_repeat_rounds = 10;
    c.gloo.rank = n;
    c.gloo.size = kNodes;
    c.view.settle_ns = kSec;
    c.hang = o.hang;
    c.forward_refresh_ns = 200 * kMs;
    network = std::make_unique<obs::CrossNode>(
        *observer, c, clock, [&epochs, n](uint64_t e, const std::atomic<bool>&) { return epochs.connect(e, n); },
        [] { return uint64_t(0); });
  }
  void pass() { observer->pass(clock.now_ns()); }
  int64_t local(int64_t leader_ns) const { return leader_ns + offset(rank); }

  int rank;
  net::ShiftedClock clock;
  TempDir dir;
  FakeJob job;
  obs::MemorySink sink;
  std::unique_ptr<obs::Observer> observer;
  std::unique_ptr<obs::CrossNode> network;
  int tp = -1, dp0 = -1, dp1 = -1;
};

// What to do differently in a step.
struct Fault {
  int64_t dp1_delay_ns = 0;  // rank 7's arrival in dp1
  bool corrupt_dp1 = false;  // rank 7's receive buffer in dp1
};

class Cluster {
 public:
  Cluster() {
    for (int n = 0; n < kNodes; ++n) nodes.push_back(std::make_unique<Node>(n, mono, epochs));
    for (auto& n : nodes) n->network->start();
  }
  ~Cluster() {
    for (auto& n : nodes) n->network->stop();
  }

  // One training step s (leader-clock time t): tp AllReduce #s, then dp0 and dp1 AllReduce #s.
  void step(uint64_t s, const Fault& f = {}) {
    const int64_t t = mono.now_ns() - 60 * kMs;
    for (auto& n : nodes) {
      FakeColl tp;
      tp.seq = s;
      tp.t0 = n->local(t);
      tp.start = {n->local(t + kMs), n->local(t + kMs)};
      tp.duration_ns = kMs;
      tp.fp_recv = {0xa000 + s, 0xa000 + s};
      n->job.collective(n->tp, tp);
      for (int d : {0, 1}) {
        const bool seven = d == 1 && n->rank == 3;
        FakeColl c;
        c.seq = s;
        c.t0 = n->local(t + 3 * kMs);
        c.start = {n->local(t + 4 * kMs + (seven ? f.dp1_delay_ns : 0))};
        c.duration_ns = 2 * kMs;
        c.fp_recv = {0xb000 + 16 * s + uint64_t(d) + (seven && f.corrupt_dp1 ? 0x400000 : 0)};
        n->job.collective(d == 0 ? n->dp0 : n->dp1, c);
      }
    }
    settle();
  }
  // Passes on every node while the agents run rounds.
  void settle(int passes = 2) {
    for (int i = 0; i < passes; ++i) {
      for (auto& n : nodes) n->pass();
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  // Runs passes until `done()` or `seconds` passed.
  template <typename F>
  bool until(F done, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
    while (std::chrono::steady_clock::now() < end) {
      settle(1);
      if (done()) return true;
    }
    return false;
  }
  std::vector<obs::Finding> at(int node) const { return nodes[node]->sink.findings(); }

  net::MonotonicClock mono;
  InprocEpochs epochs;
  std::vector<std::unique_ptr<Node>> nodes;
};

std::vector<int> ranks_of(const obs::Finding& f) {
  std::vector<int> r;
  for (const auto& s : f.suspects) r.push_back(s.global_rank);
  return r;
}

TEST(CrossNode, HealthyStepsGiveNoFindingAndCompareDigests) {
  Cluster c;
  for (uint64_t s = 0; s < 30; ++s) c.step(s);
  c.settle(4);
  for (int n = 0; n < kNodes; ++n) {
    EXPECT_TRUE(c.at(n).empty()) << "node " << n << ": " << c.at(n)[0].summary;
    const auto st = c.nodes[n]->network->status();
    EXPECT_TRUE(st.connected);
    EXPECT_EQ(st.failures, 0u) << st.last_error;
    EXPECT_GT(st.rounds, 10u);
    EXPECT_EQ(st.gathers, 0u);  // nothing to drill down, no finding to send
    // The estimate against the injected offset: within the accuracy it states (error_ns, plus 1 ns
    // for the halving's rounding; observer/net/clock_sync.h), and within 5 ms whatever it states
    // (in-process round trips take microseconds; 5 ms leaves room for a loaded machine).
    const double miss = std::abs(double(st.clock.offset_ns - offset(n)));
    EXPECT_LE(miss, double(st.clock.error_ns) + 1) << "node " << n;
    EXPECT_LT(miss, 5e6) << "node " << n << " error_ns " << st.clock.error_ns;
  }
  EXPECT_GT(c.nodes[0]->network->view().retained(), 0u);
}

TEST(CrossNode, CorruptedCrossNodeAllReduceIsNamedByTheLeader) {
  Cluster c;
  for (uint64_t s = 0; s < 12; ++s) c.step(s, Fault{0, s == 6});
  ASSERT_TRUE(c.until([&] { return !c.at(0).empty(); }, 5.0)) << "no finding on the leader";
  c.settle(6);
  const auto leader = c.at(0);
  ASSERT_EQ(leader.size(), 1u) << leader[1].summary;
  const obs::Finding& f = leader[0];
  EXPECT_EQ(f.kind, obs::FindingKind::kSdc);
  EXPECT_EQ(f.verdict, obs::Verdict::kAttributed);
  EXPECT_EQ(ranks_of(f), std::vector<int>{7});
  EXPECT_EQ(f.suspects[0].host, "node3");
  EXPECT_EQ(f.suspects[0].pid, FakeJob::kPidBase + 7);
  EXPECT_EQ(f.suspects[0].comm_rank, 3);
  EXPECT_EQ(f.comm_name, "dp1");
  ASSERT_TRUE(f.key.has_value());
  EXPECT_EQ(f.key->func, "AllReduce");
  EXPECT_EQ(f.key->seq, 6u);
  EXPECT_EQ(f.evidence["majority"], "0x000000000000b061");
  EXPECT_EQ(f.evidence["votes"][0]["ranks"], nlohmann::json({1, 3, 5}));
  // First seen: when the corrupted operation completed, on the leader's clock.
  EXPECT_LT(f.first_seen_ns, c.mono.now_ns());
  EXPECT_GT(f.first_seen_ns, c.mono.now_ns() - 10 * kSec);
  for (int n = 1; n < kNodes; ++n) EXPECT_TRUE(c.at(n).empty()) << "node " << n;  // not decidable locally
}

TEST(CrossNode, RankThatStopsOnNodeThreeIsTheRootOfOneHangOnTheLeader) {
  Cluster c;
  const uint64_t K = 8;
  for (uint64_t s = 0; s < K; ++s) c.step(s);
  // Step K: every TP AllReduce and dp0 complete; rank 7 never issues dp1 #K, whose other ranks
  // run it. Step K+1: ranks 0, 2, 4, 6 enter their TP AllReduce; 1, 3, 5 are still in dp1 #K.
  const int64_t t = c.mono.now_ns() - 60 * kMs;
  for (auto& n : c.nodes) {
    FakeColl tp;
    tp.seq = K;
    tp.t0 = n->local(t);
    tp.duration_ns = kMs;
    n->job.collective(n->tp, tp);
    FakeColl d0;
    d0.seq = K;
    d0.t0 = n->local(t + 3 * kMs);
    n->job.collective(n->dp0, d0);
    OpSpec o;
    o.key = K;
    o.enqueue_ns = n->local(t + 3 * kMs);
    if (n->rank != 3) FakeJob::start(n->job.enqueue(n->dp1, 0, o), n->local(t + 4 * kMs));
    o.key = K + 1;
    o.enqueue_ns = n->local(t + 10 * kMs);
    FakeJob::start(n->job.enqueue(n->tp, 0, o), n->local(t + 11 * kMs));
  }
  auto hang_on_leader = [&] {
    for (const auto& f : c.at(0)) {
      if (f.kind == obs::FindingKind::kHang && f.evidence.contains("chain") && f.evidence["chain"].size() == 7)
        return true;
    }
    return false;
  };
  ASSERT_TRUE(c.until(hang_on_leader, 8.0)) << "no job-wide hang finding on the leader";
  c.settle(8);
  const auto leader = c.at(0);
  ASSERT_EQ(leader.size(), 1u) << leader[0].summary << " / " << leader[1].summary;
  const obs::Finding& f = leader[0];
  EXPECT_EQ(f.kind, obs::FindingKind::kHang);
  EXPECT_EQ(f.verdict, obs::Verdict::kAttributed);
  EXPECT_TRUE(f.open);
  EXPECT_EQ(ranks_of(f), std::vector<int>{7});
  EXPECT_EQ(f.suspects[0].host, "node3");
  EXPECT_EQ(f.comm_name, "dp1");  // the earliest operation anyone waits for it in
  EXPECT_EQ(f.key->seq, K);
  EXPECT_EQ(f.evidence["class"], "absent");
  EXPECT_EQ(f.evidence["root"][0]["reason"], "idle");
  EXPECT_EQ(f.evidence["waiting_ranks"], nlohmann::json({0, 1, 2, 3, 4, 5, 6}));
  // The chain across nodes, closest to the root first: who waits for whom, and in what.
  std::map<int, std::pair<int, std::string>> edges;
  for (const auto& e : f.evidence["chain"]) {
    edges[e["rank"].get<int>()] = {e["waits_for"].get<int>(), e["comm"]["name"].get<std::string>()};
    EXPECT_EQ(e["why"], "absent");
  }
  const std::map<int, std::pair<int, std::string>> want = {{0, {1, "tp0"}}, {1, {7, "dp1"}}, {2, {3, "tp1"}},
                                                           {3, {7, "dp1"}}, {4, {5, "tp2"}}, {5, {7, "dp1"}},
                                                           {6, {7, "tp3"}}};
  EXPECT_EQ(edges, want);
  EXPECT_NE(f.summary.find("rank 7 (node3"), std::string::npos) << f.summary;
  // Nodes 0-2 see their ranks wait for ranks that wait elsewhere: they name nobody. Node 3 sees
  // the root through tp3 and names it; the leader holds that as the same finding.
  for (int n = 1; n < 3; ++n) EXPECT_TRUE(c.at(n).empty()) << "node " << n << ": " << c.at(n)[0].summary;
  const auto node3 = c.at(3);
  ASSERT_EQ(node3.size(), 1u);
  EXPECT_EQ(node3[0].kind, obs::FindingKind::kHang);
  EXPECT_EQ(ranks_of(node3[0]), std::vector<int>{7});
  EXPECT_EQ(node3[0].comm_name, "tp3");
}

TEST(CrossNode, LateArrivalsOnlyAcrossNodesMakeAStragglerWithClockOffsetsApplied) {
  Cluster c;
  for (uint64_t s = 0; s < 6; ++s) c.step(s);
  for (uint64_t s = 6; s < 40; ++s) c.step(s, Fault{30 * kMs, false});
  auto straggler_on_leader = [&] {
    for (const auto& f : c.at(0)) {
      if (f.kind == obs::FindingKind::kStraggler) return true;
    }
    return false;
  };
  ASSERT_TRUE(c.until(straggler_on_leader, 5.0));
  const auto leader = c.at(0);
  ASSERT_EQ(leader.size(), 1u) << leader[1].summary;
  const obs::Finding& f = leader[0];
  EXPECT_EQ(ranks_of(f), std::vector<int>{7});
  EXPECT_EQ(f.suspects[0].host, "node3");
  EXPECT_EQ(f.comm_name, "dp1");
  const auto& w = f.evidence["comms"][0];
  EXPECT_EQ(w["comm"]["name"], "dp1");
  EXPECT_EQ(w["comm_rank"], 3);
  // Lateness against the job-wide earliest arrival: 30 ms, although node 3's clock is 21 s ahead.
  EXPECT_NEAR(w["median_late_ms"].get<double>(), 30.0, 0.1);
  // Decided on node 3 (its rank's lateness), sent to the leader; nodes 1 and 2 blame nobody.
  ASSERT_EQ(c.at(3).size(), 1u);
  EXPECT_EQ(c.at(3)[0].dedup_key, f.dedup_key);
  for (int n : {1, 2}) EXPECT_TRUE(c.at(n).empty()) << "node " << n << ": " << c.at(n)[0].summary;
}

}  // namespace
