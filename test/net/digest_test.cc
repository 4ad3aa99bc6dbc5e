// The digest protocol on the in-process channel with a synthetic job (test/support/net_workload):
// healthy rounds are one allreduce and no drill-down; one corrupted fingerprint, a desync, a
// stopped rank and node findings reach the leader naming the right global rank (decided by the
// core's own detectors, obs::CoreJudge); collisions, lateness across clock offsets,
// configuration mismatch, report decoding.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "observer/cluster/core_judge.h"
#include "observer/cluster/job_waits.h"
#include "observer/model/limits.h"
#include "observer/net/digest.h"
#include "observer/net/inproc_channel.h"
#include "observer/net/wait_summary.h"
#include "test/support/net_workload.h"

namespace scout::net {
namespace {

using scout::testing::NetWorkload;
constexpr int64_t kSecond = 1000000000;

int64_t clock_offset(int node) { return int64_t(node) * 3 * kSecond - 5 * kSecond + node * 777; }

// N observers over one synthetic job; round(t) runs one digest round on every node, in threads.
struct Cluster {
  Cluster(int nodes, int ranks_per_node, DigestConfig cfg = {}, int funcs = 2)
      : job(nodes, ranks_per_node, funcs), net(nodes), judge(obs::HangConfig{cfg.stall_ns, 1000000000, true}) {
    for (int n = 0; n < nodes; ++n) {
      views.push_back(std::make_unique<NetWorkload::Node>(&job, n, clock_offset(n)));
      ClockEstimate e;
      e.offset_ns = clock_offset(n) - clock_offset(0);
      clocks.push_back(e);
      net.endpoint(n).set_timeout(std::chrono::milliseconds(10000));
      exchanges.push_back(std::make_unique<DigestExchange>(&net.endpoint(n), &judge, cfg));
    }
  }
  std::vector<RoundResult> round(int64_t t, const std::map<int, std::vector<obs::Finding>>& findings = {}) {
    const int n = job.nodes();
    std::vector<RoundResult> res(n);
    std::vector<std::string> errors(n);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        try {
          views[i]->set_time(t);
          auto it = findings.find(i);
          res[i] = exchanges[i]->round(*views[i], t + clock_offset(i), clocks[i],
                                       it == findings.end() ? std::vector<obs::Finding>{} : it->second);
        } catch (const std::exception& e) { errors[i] = e.what(); }
      });
    }
    for (auto& th : threads) th.join();
    for (int i = 0; i < n; ++i) {
      if (!errors[i].empty()) throw std::runtime_error("node " + std::to_string(i) + ": " + errors[i]);
    }
    return res;
  }
  NetWorkload job;
  InprocNetwork net;
  obs::CoreJudge judge;
  std::vector<std::unique_ptr<NetWorkload::Node>> views;
  std::vector<ClockEstimate> clocks;
  std::vector<std::unique_ptr<DigestExchange>> exchanges;
};

TEST(Digest, HealthyJobIsOneAllreducePerRoundAndNoDrillDown) {
  Cluster c(4, 8);  // 8 DP communicators x 2 functions = 16 cross-node streams on every node
  for (int r = 0; r < 6; ++r) {
    std::vector<Traffic> before;
    for (int n = 0; n < 4; ++n) before.push_back(c.net.endpoint(n).traffic());
    auto res = c.round((r + 1) * kSecond);
    for (int n = 0; n < 4; ++n) {
      EXPECT_FALSE(res[n].gathered) << "round " << r;
      EXPECT_EQ(res[n].streams_placed, 16);
      EXPECT_EQ(res[n].collisions + res[n].streams_disagreeing + res[n].range_mismatches, 0);
      EXPECT_TRUE(res[n].findings.empty());
      EXPECT_TRUE(res[n].decided.empty());
      // Streams present in the channel's first round are digested from seqNumber 0 once the
      // first job-wide watermark is known (the second round).
      EXPECT_EQ(res[n].streams_compared, r >= 1 ? 16 : 0) << "round " << r;
      const Traffic t = c.net.endpoint(n).traffic() - before[n];
      // One allreduce of 6 + 10*128 + 6*128 words = 16432 bytes: 2 log2(4) messages, 2*3/4 of it.
      EXPECT_EQ(t.messages_sent, 4u);
      EXPECT_EQ(t.payload_sent, 24648u);
    }
  }
}

TEST(Digest, OneDifferingFingerprintOnOneNodeDrillsDownToThatRank) {
  Cluster c(4, 8);
  const int guilty = 3 * 8 + 5;  // node 3, local index 5: DP communicator dp5
  c.job.corrupt_fp(guilty, 120);
  std::vector<obs::Finding> found;
  for (int r = 0; r < 5; ++r) {
    auto res = c.round((r + 1) * kSecond);
    // The range [100, 150) holding seq 120 is digested in round 3 (0-based).
    EXPECT_EQ(res[0].gathered, r >= 3) << "round " << r;
    for (auto& f : res[0].decided) found.push_back(f);
    for (int n = 1; n < 4; ++n) EXPECT_TRUE(res[n].decided.empty());
    if (r == 3) {
      for (int n = 0; n < 4; ++n) EXPECT_EQ(res[n].streams_disagreeing, 2) << "node " << n;
    }
  }
  // One drill-down (round 3) of the range [100, 150) of both streams; the core's fingerprint
  // check names every corrupted operation (120..149, as for a node-local communicator); the
  // lasting disagreement is not drilled again before drill_repeat_rounds.
  std::set<std::pair<std::string, uint64_t>> ops;
  for (const auto& f : found) {
    EXPECT_EQ(f.kind, obs::FindingKind::kSdc);
    EXPECT_EQ(f.verdict, obs::Verdict::kAttributed);
    ASSERT_EQ(f.suspects.size(), 1u) << f.summary;
    EXPECT_EQ(f.suspects[0].global_rank, guilty);
    EXPECT_EQ(f.suspects[0].host, "node3");
    EXPECT_EQ(f.suspects[0].pid, 1000 + guilty);
    EXPECT_EQ(f.suspects[0].comm_rank, 3);
    EXPECT_EQ(f.comm_name, "dp5");
    EXPECT_EQ(f.comm_hash, c.job.comm_hash(5));
    ASSERT_TRUE(f.key.has_value());
    EXPECT_EQ(f.evidence["check"], "recv");
    EXPECT_EQ(f.evidence["votes"][0]["ranks"].size(), 3u);
    EXPECT_EQ(f.dedup_key.rfind("sdc:recv:", 0), 0u);
    ops.insert({f.key->func, f.key->seq});
  }
  ASSERT_EQ(found.size(), 60u);
  EXPECT_EQ(ops.size(), 60u);
  EXPECT_EQ(ops.begin()->second, 120u);
  EXPECT_EQ(ops.rbegin()->second, 149u);
}

// Findings of the leader over `rounds` rounds at t = 1 s, 2 s, ...; res_at(r) sees each round.
template <typename F>
std::vector<obs::Finding> run_rounds(Cluster& c, int rounds, F res_at) {
  std::vector<obs::Finding> found;
  for (int r = 0; r < rounds; ++r) {
    auto res = c.round((r + 1) * kSecond);
    res_at(r, res);
    for (auto& f : res[0].decided) found.push_back(f);
  }
  return found;
}

void expect_attributed_with_every_vote(const std::vector<obs::Finding>& found, int guilty, uint64_t first_seq) {
  ASSERT_FALSE(found.empty());
  for (const auto& f : found) {
    EXPECT_EQ(f.kind, obs::FindingKind::kSdc);
    EXPECT_EQ(f.verdict, obs::Verdict::kAttributed) << f.summary;
    ASSERT_EQ(f.suspects.size(), 1u) << f.summary;
    EXPECT_EQ(f.suspects[0].global_rank, guilty);
    EXPECT_EQ(f.evidence["voters"], 4) << f.evidence.dump();
  }
  ASSERT_TRUE(found.front().key.has_value());
  EXPECT_EQ(found.front().key->seq, first_seq);
}

TEST(Digest, SecondCorruptionSoonAfterAFirstInTheSameCommunicatorIsFound) {
  // Two one-shot corruptions in dp0 on two nodes: seq 120 of rank 2 (node 1), judged in the
  // drill-down of round 3 ([100, 150)), and seq 170 of rank 4 (node 2), in round 4's range
  // [150, 200) while the drill-down of dp0 is put off (drill_repeat_rounds = 10). The put-off range
  // stays the start of dp0's digest, which keeps disagreeing, and round 13's drill-down covers it:
  // both corruptions are found, each by one drill-down.
  Cluster c(4, 2);
  const int first = 1 * 2 + 0, second = 2 * 2 + 0;  // local index 0 of nodes 1 and 2: dp0
  c.job.corrupt_fp_once(first, 120);
  c.job.corrupt_fp_once(second, 170);
  std::map<int, std::set<uint64_t>> decided_in;  // round -> seqs the leader decided on
  auto found = run_rounds(c, 14, [&](int r, const std::vector<RoundResult>& res) {
    for (const auto& f : res[0].decided) decided_in[r].insert(f.key ? f.key->seq : ~0ull);
    if (r >= 4 && r <= 12) {
      for (int n = 0; n < 4; ++n) EXPECT_EQ(res[n].streams_disagreeing, 2) << "round " << r << " node " << n;
    }
  });
  EXPECT_EQ(decided_in, (std::map<int, std::set<uint64_t>>{{3, {120}}, {13, {170}}}));
  std::map<uint64_t, std::set<int>> by_seq;  // seq -> suspects
  std::set<std::string> funcs;
  for (const auto& f : found) {
    EXPECT_EQ(f.kind, obs::FindingKind::kSdc);
    EXPECT_EQ(f.verdict, obs::Verdict::kAttributed) << f.summary;
    EXPECT_EQ(f.comm_name, "dp0");
    ASSERT_EQ(f.suspects.size(), 1u) << f.summary;
    ASSERT_TRUE(f.key.has_value());
    by_seq[f.key->seq].insert(f.suspects[0].global_rank);
    funcs.insert(f.key->func);
  }
  EXPECT_EQ(found.size(), 4u);  // two streams (functions) of dp0, two operations each
  EXPECT_EQ(funcs.size(), 2u);
  EXPECT_EQ(by_seq, (std::map<uint64_t, std::set<int>>{{120, {first}}, {170, {second}}}));
}

TEST(Digest, NodeWithoutADigestThisRoundStillVotesInTheDrillDown) {
  // Node 0 (the leader) lists its streams from round 1 on, so in round 1 it has no watermark and
  // digests nothing, while nodes 1-3 compare [0, 50) and disagree (seq 10 of rank 5). Node 0 must
  // still send its records of that range: with 3 of 4 votes (2 against 1) there is no strict
  // majority of the communicator's 4 ranks and the finding would be inconclusive.
  Cluster c(4, 2);
  const int guilty = 2 * 2 + 1;  // node 2, local index 1: dp1
  c.views[0]->hide_streams_until(2 * kSecond);
  c.job.corrupt_fp(guilty, 10);
  auto found = run_rounds(c, 2, [](int r, const std::vector<RoundResult>& res) {
    if (r == 1) {
      EXPECT_EQ(res[0].streams_compared, 0);
      EXPECT_EQ(res[1].streams_compared, 4);
      EXPECT_EQ(res[1].streams_disagreeing, 2);
      EXPECT_TRUE(res[0].gathered);
    }
  });
  expect_attributed_with_every_vote(found, guilty, 10);
}

TEST(Digest, NodeThatSawTheStreamLateMakesTheOthersRecoverTheRange) {
  // Node 0 sees its streams one round late and proposes [0, 100) in round 2 while the others
  // propose [50, 100): the ranges differ, nothing is compared, and every node restarts at 0, so
  // round 3 compares [0, 150) everywhere and the corruption at seq 60 is found with every vote.
  Cluster c(4, 2);
  const int guilty = 3 * 2 + 1;  // node 3, local index 1: dp1
  c.views[0]->hide_streams_until(2 * kSecond);
  c.job.corrupt_fp(guilty, 60);
  auto found = run_rounds(c, 4, [](int r, const std::vector<RoundResult>& res) {
    if (r == 2) {
      for (int n = 0; n < 4; ++n) {
        EXPECT_EQ(res[n].range_mismatches, 4) << "node " << n;
        EXPECT_EQ(res[n].streams_compared, 0) << "node " << n;
      }
      EXPECT_FALSE(res[0].gathered);
    }
    if (r == 3) {
      for (int n = 0; n < 4; ++n) EXPECT_EQ(res[n].streams_disagreeing, 2) << "node " << n;
      EXPECT_TRUE(res[0].gathered);
    }
  });
  expect_attributed_with_every_vote(found, guilty, 60);
}

TEST(Digest, OperationsCompletedBeforeTheObserversMetAreCompared) {
  // The observers form their channel at t = 3 s, when 150 operations of every stream are done;
  // the corruption is in operation 10. The first range of a stream present in the first round
  // starts at seqNumber 0, so it is compared (the second round), not skipped.
  Cluster c(4, 2);
  const int guilty = 2 * 2 + 0;  // node 2, local index 0: dp0
  c.job.corrupt_fp(guilty, 10);
  std::vector<obs::Finding> found;
  for (int r = 0; r < 2; ++r) {
    auto res = c.round((r + 3) * kSecond);
    for (auto& f : res[0].decided) found.push_back(f);
  }
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().kind, obs::FindingKind::kSdc);
  ASSERT_TRUE(found.front().key.has_value());
  EXPECT_EQ(found.front().key->seq, 10u);
  ASSERT_EQ(found.front().suspects.size(), 1u);
  EXPECT_EQ(found.front().suspects[0].global_rank, guilty);
}

TEST(Digest, DesyncOnOneRankIsAttributedToIt) {
  Cluster c(5, 4);  // 5 nodes: allreduce with a folded endpoint
  const int guilty = 2 * 4 + 1;
  c.job.desync(guilty, 160);
  std::vector<obs::Finding> found;
  for (int r = 0; r < 5; ++r) {
    const auto res = c.round((r + 1) * kSecond);
    for (const auto& f : res[0].decided) found.push_back(f);
  }
  // Range [150, 200) of dp1's AllReduce and AllGather: every operation from 160 on.
  ASSERT_EQ(found.size(), 80u);
  uint64_t first = ~0ull;
  for (const auto& f : found) {
    EXPECT_EQ(f.kind, obs::FindingKind::kDesync);
    ASSERT_EQ(f.suspects.size(), 1u);
    EXPECT_EQ(f.suspects[0].global_rank, guilty);
    EXPECT_EQ(f.evidence["source"], "metadata");
    first = std::min(first, f.key->seq);
  }
  EXPECT_EQ(first, 160u);
}

TEST(Digest, StoppedRankOnAnotherNodeIsNamedAsTheHangRoot) {
  DigestConfig cfg;
  cfg.stall_ns = 3 * kSecond;
  Cluster c(4, 8, cfg, 1);
  const int absent = 3 * 8 + 2;
  c.job.stop(absent, 200);  // progress of dp2 stops at seq 200 (t = 4 s)
  std::vector<obs::Finding> found;
  int first_stall_round = -1;
  for (int r = 0; r < 12; ++r) {
    auto res = c.round((r + 1) * kSecond);
    if (first_stall_round < 0 && !res[1].stalls.empty()) first_stall_round = r;
    for (auto& f : res[0].decided) found.push_back(f);
  }
  // Watermark 200 first seen at round 3 (t = 4 s); 3 s later (round 6) it is a stall.
  EXPECT_EQ(first_stall_round, 6);
  ASSERT_FALSE(found.empty());
  const obs::Finding& f = found[0];
  EXPECT_EQ(f.kind, obs::FindingKind::kHang);
  EXPECT_EQ(f.verdict, obs::Verdict::kAttributed);
  ASSERT_EQ(f.suspects.size(), 1u);
  EXPECT_EQ(f.suspects[0].global_rank, absent);
  EXPECT_EQ(f.suspects[0].host, "node3");
  EXPECT_EQ(f.comm_name, "dp2");
  EXPECT_EQ(f.key->func, "AllReduce");
  EXPECT_EQ(f.key->seq, 200u);
  // The core's hang detector on the job-wide Model: absent rank, the three waiting ranks of the
  // other nodes, each waiting for it in dp2.
  EXPECT_EQ(f.evidence["class"], "absent");
  EXPECT_EQ(f.evidence["root"][0]["reason"], "idle");
  EXPECT_EQ(f.evidence["waiting_ranks"], nlohmann::json({2, 10, 18}));
  ASSERT_EQ(f.evidence["chain"].size(), 3u);
  for (const auto& e : f.evidence["chain"]) {
    EXPECT_EQ(e["waits_for"], absent);
    EXPECT_EQ(e["why"], "absent");
    EXPECT_EQ(e["comm"]["name"], "dp2");
  }
  EXPECT_NE(f.summary.find("never entered AllReduce #200 of dp2"), std::string::npos) << f.summary;
  // Drilled once, then again every drill_repeat_rounds (10): one finding in 12 rounds.
  EXPECT_EQ(found.size(), 1u);
}

TEST(Digest, NodeFindingsReachTheLeaderOnTheLeadersClock) {
  Cluster c(4, 2);
  obs::Finding f;
  f.kind = obs::FindingKind::kStraggler;
  f.suspects.push_back({21, "node2", 4242, "GPU-x", 0});
  f.first_seen_ns = 5 * kSecond + clock_offset(2);  // node 2's clock
  f.last_seen_ns = 6 * kSecond + clock_offset(2);
  f.summary = "rank 21 is late";
  f.dedup_key = "straggler:21";
  auto res = c.round(kSecond);
  EXPECT_FALSE(res[0].gathered);
  std::vector<Traffic> before;
  for (int n = 0; n < 4; ++n) before.push_back(c.net.endpoint(n).traffic());
  res = c.round(2 * kSecond, {{2, {f}}});
  EXPECT_TRUE(res[0].gathered);
  ASSERT_EQ(res[0].findings.size(), 1u);
  const obs::Finding& g = res[0].findings[0];
  EXPECT_EQ(g.summary, "rank 21 is late");
  EXPECT_EQ(g.dedup_key, "straggler:21");
  EXPECT_EQ(g.suspects[0].global_rank, 21);
  EXPECT_EQ(g.first_seen_ns, 5 * kSecond + clock_offset(0));
  EXPECT_EQ(g.last_seen_ns, 6 * kSecond + clock_offset(0));
  // Only node 2 sent its report; the others only took part in the count (one word).
  for (int n : {1, 3}) {
    const Traffic t = c.net.endpoint(n).traffic() - before[n];
    EXPECT_LE(t.payload_sent, 24648u + 16u) << "node " << n;
  }
  const Traffic t2 = c.net.endpoint(2).traffic() - before[2];
  EXPECT_GT(t2.payload_sent, 24648u + 8u + 8u + 100u);
  res = c.round(3 * kSecond);
  EXPECT_FALSE(res[0].gathered);
  EXPECT_TRUE(res[0].findings.empty());
}

TEST(Digest, FewSlotsManyStreamsPartitionsWithoutFalseFindings) {
  DigestConfig cfg;
  cfg.stream_slots = 16;
  cfg.timing_slots = 16;
  Cluster c(4, 16, cfg, 4);  // 16 DP communicators x 4 functions = 64 streams, 16 slots
  int compared = 0;
  for (int r = 0; r < 60; ++r) {
    auto res = c.round((r + 1) * kSecond);
    for (int n = 0; n < 4; ++n) {
      EXPECT_FALSE(res[n].gathered) << "round " << r;
      EXPECT_EQ(res[n].streams_disagreeing, 0);
      EXPECT_EQ(res[n].partitions, res[0].partitions);
    }
    compared += res[1].streams_compared;
  }
  // About K/4 = 4 streams per round: 64 streams need 16 partitions.
  EXPECT_EQ(c.exchanges[0]->partitions(), 16u);
  EXPECT_GE(compared, 32);
  EXPECT_EQ(cfg.words(), 6u + 10 * 16 + 6 * 16);  // the same vector whatever the stream count
}

TEST(Digest, FewSlotsStillFindTheCorruption) {
  DigestConfig cfg;
  cfg.stream_slots = 16;
  cfg.timing_slots = 16;
  Cluster c(4, 16, cfg, 4);
  const int guilty = 1 * 16 + 6;
  c.job.corrupt_fp(guilty, 100);
  bool found = false;
  for (int r = 0; r < 80 && !found; ++r) {
    const auto res = c.round((r + 1) * kSecond);
    for (const auto& f : res[0].decided) {
      EXPECT_EQ(f.kind, obs::FindingKind::kSdc);
      ASSERT_EQ(f.suspects.size(), 1u);
      EXPECT_EQ(f.suspects[0].global_rank, guilty);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Digest, CrossNodeLatenessUsesTheLeadersClock) {
  Cluster c(4, 2);
  const int late = 3 * 2 + 1;  // node 3, dp1
  c.job.delay(late, 5000000);  // 5 ms
  std::vector<RoundResult> res;
  for (int r = 0; r < 4; ++r) res = c.round((r + 1) * kSecond);
  // Node 3's view of dp1 samples: its rank is 5 ms late although its clock is 4 s ahead.
  int seen = 0;
  for (const CrossNodeTiming& t : res[3].timings) {
    ASSERT_EQ(t.ranks.size(), 1u);
    EXPECT_EQ(t.nranks, 4);
    EXPECT_EQ(t.ranks[0].comm_rank, 3);
    if (t.comm_hash == c.job.comm_hash(1)) {
      EXPECT_EQ(t.ranks[0].global_rank, late);
      EXPECT_EQ(t.ranks[0].lateness_ns, 5000000);
      EXPECT_EQ(t.ranks[0].gap_ns, 10000000 + 5000000);
      EXPECT_EQ(t.latest_arrival_ns - t.earliest_arrival_ns, 5000000);
      EXPECT_EQ(t.min_gap_ns, 10000000);  // the punctual ranks' gap: half a period
      ++seen;
    } else {
      EXPECT_EQ(t.ranks[0].lateness_ns, 0);
    }
  }
  EXPECT_EQ(seen, 2 * 2);  // 2 functions x timing_ops 2
  for (const CrossNodeTiming& t : res[1].timings) EXPECT_EQ(t.ranks[0].lateness_ns, 0);
}

TEST(Digest, ObserversWithDifferentSettingsFailClearly) {
  InprocNetwork net(2);
  obs::CoreJudge judge(obs::HangConfig{});
  NetWorkload job(2, 1);
  std::vector<std::string> err(2);
  std::vector<std::thread> th;
  for (int n = 0; n < 2; ++n) {
    th.emplace_back([&, n] {
      DigestConfig cfg;
      if (n == 1) cfg.stall_ns = 5 * kSecond;
      DigestExchange ex(&net.endpoint(n), &judge, cfg);
      NetWorkload::Node view(&job, n, 0);
      try {
        ex.round(view, kSecond, ClockEstimate{}, {});
      } catch (const std::exception& e) { err[n] = e.what(); }
    });
  }
  for (auto& t : th) t.join();
  for (int n = 0; n < 2; ++n) EXPECT_NE(err[n].find("different digest settings"), std::string::npos) << err[n];
}

TEST(Digest, DeadObserverMakesTheRoundFail) {
  Cluster c(4, 2);
  c.round(kSecond);
  c.net.kill(2);
  EXPECT_THROW(c.round(2 * kSecond), std::runtime_error);
}

shm::RecordSnapshot sample_record(uint64_t seq, uint64_t fp) {
  shm::RecordSnapshot r;
  r.index = seq + 100;
  r.key = seq;
  r.kind = shm::kKindColl;
  r.func = shm::kFuncAllReduce;
  r.datatype = r.api_datatype = shm::kTypeFloat32;
  r.count = r.api_count = 1024;
  r.bytes = 4096;
  r.enqueue_ns = 1000 + int64_t(seq);
  r.state = shm::kStateComplete;
  r.ch_started = r.ch_stopped = 2;
  r.gpu_start_ns = 2000;
  r.gpu_end_ns = r.complete_ns = 3000;
  r.fp_recv_status = shm::kFpDone;
  r.fp_recv = fp;
  r.fp_bytes = 4096;
  r.fp_version = 1;
  return r;
}

NodeReport sample_report() {
  NodeReport r;
  obs::Finding f;
  f.kind = obs::FindingKind::kNan;
  f.summary = "nan";
  f.dedup_key = "k";
  f.open = false;
  f.suspects.push_back({3, "h", 1, "g", 0});
  r.findings.push_back(f);
  NodeStreamOps d;
  d.stream = {0xabc, 4, 8, "dp"};
  d.from = 10;
  d.to = 12;
  d.ranks = {{0, 0}, {1, 8}};
  NodeOpValues a;
  a.seq = 10;
  a.agree = true;
  a.rec = sample_record(10, 6);
  NodeOpValues b;
  b.seq = 11;
  b.per_rank = {{true, sample_record(11, 7)}, {false, {}}};
  d.ops = {a, b};
  r.digests.push_back(d);
  r.identities.push_back({8, "node1", 99, "GPU-8"});
  return r;
}

// One node's wait snapshot: two members of an 8-rank communicator running AllReduce #12 (comm
// ranks 1 and 2, global ranks 8 and 16), one idle (comm rank 3, global rank 24, its process dead).
WaitSnapshot sample_waits() {
  WaitSnapshot w;
  w.procs.push_back({8, 1, "node1", 99, "GPU-8", 1, 0, 123, 0});
  w.procs.push_back({16, 2, "node1", 100, "GPU-16", 2, 0, 124, 0});
  w.procs.push_back({24, 3, "node1", 101, "GPU-24", 3, 2, 125, 456});
  CommWaitView c;
  c.comm_hash = 0xabc;
  c.nranks = 8;
  c.name = "dp";
  c.nnodes = 4;
  c.last_progress_ns = 789;
  c.stall_threshold_ns = 4'500'000'000;
  c.stall_gaps = 40;
  c.stall_p99_ns = 1'500'000'000;
  for (int i = 0; i < 2; ++i) {
    MemberView m;
    m.comm_rank = 1 + i;
    m.proc = i;
    m.issued[4] = 13;
    m.started[4] = 13;
    m.completed[4] = 12;
    m.last_completed = {true, 0, 4, 11, -1, -1, 3000 + i};
    shm::RecordSnapshot running = sample_record(12, 0);
    running.state = shm::kStateRunning;
    running.fp_recv_status = shm::kFpPending;
    running.gpu_start_ns = 2000 + i;  // times differ: the same state
    m.records.push_back(running);
    c.members.push_back(m);
  }
  MemberView idle;
  idle.comm_rank = 3;
  idle.proc = 2;
  idle.issued[4] = 12;
  idle.started[4] = 12;
  idle.completed[4] = 12;
  c.members.push_back(idle);
  w.comms.push_back(c);
  return w;
}

TEST(Digest, ReportRoundTrip) {
  const auto bytes = encode_report(sample_report());
  EXPECT_EQ(bytes[0], 5);  // NodeReport version 5: no wait snapshot (it travels as a summary)
  NodeReport back;
  std::string err;
  ASSERT_TRUE(decode_report(bytes, &back, &err)) << err;
  ASSERT_EQ(back.findings.size(), 1u);
  EXPECT_EQ(back.findings[0].dedup_key, "k");
  EXPECT_EQ(back.findings[0].kind, obs::FindingKind::kNan);
  EXPECT_FALSE(back.findings[0].open);
  ASSERT_EQ(back.digests.size(), 1u);
  EXPECT_EQ(back.digests[0].ranks[1].second, 8);
  EXPECT_TRUE(back.digests[0].ops[0].agree);
  EXPECT_EQ(back.digests[0].ops[0].rec.fp_recv, 6u);
  EXPECT_EQ(back.digests[0].ops[0].rec.count, 1024u);
  EXPECT_FALSE(back.digests[0].ops[1].per_rank[1].present);
  const shm::RecordSnapshot& r = back.digests[0].ops[1].per_rank[0].rec;
  const shm::RecordSnapshot want = sample_record(11, 7);
  EXPECT_EQ(r.index, want.index);
  EXPECT_EQ(r.key, 11u);
  EXPECT_EQ(r.enqueue_ns, want.enqueue_ns);
  EXPECT_EQ(r.fp_recv, 7u);
  EXPECT_EQ(r.fp_recv_status, shm::kFpDone);
  EXPECT_EQ(r.ch_stopped, 2);
  EXPECT_EQ(r.fp_version, 1u);
  EXPECT_EQ(back.identities[0].host, "node1");
}

// Members in the same state are one group whatever their times; the idle one is another; the
// identities of small groups travel; the summary's bytes decode to the same summary.
TEST(Digest, WaitSummaryGroupsMembersByStateAndRoundTrips) {
  const WaitSummary s = summarize(sample_waits());
  ASSERT_EQ(s.comms.size(), 1u);
  ASSERT_EQ(s.comms[0].groups.size(), 2u);
  const MemberGroup& run = s.comms[0].groups[0];
  EXPECT_EQ(run.count, 2u);
  ASSERT_EQ(run.runs.size(), 1u);  // comm ranks 1-2, global ranks 8, 16: one run of stride 8
  EXPECT_EQ(run.runs[0].comm_rank, 1);
  EXPECT_EQ(run.runs[0].global_rank, 8);
  EXPECT_EQ(run.runs[0].count, 2);
  EXPECT_EQ(run.runs[0].stride, 8);
  EXPECT_EQ(run.state.records[0].gpu_start_ns, 2000);  // the first member's times
  ASSERT_EQ(run.identities.size(), 2u);
  EXPECT_EQ(run.identities[1].pid, 100);
  const MemberGroup& idle = s.comms[0].groups[1];
  EXPECT_EQ(idle.count, 1u);
  EXPECT_EQ(idle.proc_state, 2);
  EXPECT_EQ(idle.gone_ns, 456);
  EXPECT_TRUE(idle.state.records.empty());

  const auto bytes = encode_summary(s);
  EXPECT_EQ(bytes[0], 1);  // wait summary version 1
  WaitSummary back;
  std::string err;
  ASSERT_TRUE(decode_summary(bytes, &back, &err)) << err;
  EXPECT_EQ(encode_summary(back), bytes);
  EXPECT_EQ(back.comms[0].comm.stall_threshold_ns, 4'500'000'000);
  EXPECT_EQ(back.comms[0].comm.stall_gaps, 40u);
  EXPECT_EQ(back.comms[0].comm.last_progress_ns, 789);
  EXPECT_EQ(back.members(), 3u);

  // Expanded: one member per comm rank, a process per global rank with its identity.
  const WaitSnapshot w = expand(back);
  ASSERT_EQ(w.comms.size(), 1u);
  ASSERT_EQ(w.comms[0].members.size(), 3u);
  EXPECT_EQ(w.comms[0].members[1].comm_rank, 2);
  EXPECT_EQ(w.procs[size_t(w.comms[0].members[1].proc)].global_rank, 16);
  EXPECT_EQ(w.procs[size_t(w.comms[0].members[1].proc)].host, "node1");
  EXPECT_EQ(w.comms[0].members[1].records[0].state, shm::kStateRunning);
  EXPECT_EQ(w.procs[size_t(w.comms[0].members[2].proc)].state, 2);
}

// 4,096 members of one communicator, one per node, merge into one group of one run: what the
// leader receives follows the communicators and states, not the ranks; identities are dropped
// once a group passes kIdentifiedMembers; a comm rank two summaries claim is counted once.
TEST(Digest, WaitSummariesMergeIntoOneRunPerState) {
  WaitSummary all;
  for (int node = 0; node < 4096; ++node) {
    WaitSnapshot w;
    w.procs.push_back({node * 32 + 3, 3, "node" + std::to_string(node), 1000 + node, "GPU", 3, 0, 5, 0});
    CommWaitView c;
    c.comm_hash = 0xd927;
    c.nranks = 4096;
    c.name = "dp27";
    c.last_progress_ns = 100 + node;
    MemberView m;
    m.comm_rank = node;
    m.proc = 0;
    m.issued[4] = 441;
    m.started[4] = 441;
    m.completed[4] = 440;
    shm::RecordSnapshot running = sample_record(440, 0);
    running.state = shm::kStateRunning;
    m.records.push_back(running);
    c.members.push_back(m);
    w.comms.push_back(c);
    merge(all, summarize(w));
    if (node == kIdentifiedMembers - 1) {
      EXPECT_EQ(all.comms[0].groups[0].identities.size(), kIdentifiedMembers);
    }
  }
  ASSERT_EQ(all.comms.size(), 1u);
  ASSERT_EQ(all.comms[0].groups.size(), 1u);
  const MemberGroup& g = all.comms[0].groups[0];
  EXPECT_EQ(g.count, 4096u);
  ASSERT_EQ(g.runs.size(), 1u);
  EXPECT_EQ(g.runs[0].global_rank, 3);
  EXPECT_EQ(g.runs[0].stride, 32);
  EXPECT_TRUE(g.identities.empty());
  EXPECT_EQ(all.comms[0].comm.last_progress_ns, 100 + 4095);  // the latest any node saw
  EXPECT_LT(encode_summary(all).size(), 200u);
  // The same member twice (a node that reports again, or a hostile one): kept once.
  WaitSummary twice = all;
  merge(twice, all);
  EXPECT_EQ(twice.members(), 4096u);
  EXPECT_EQ(expand(twice).comms[0].members.size(), 4096u);
}

TEST(Digest, TimesShiftToTheLeadersClock) {
  WaitSnapshot w = sample_waits();
  w.comms[0].members[0].init_ns = 0;
  shift_times(&w, 100);
  EXPECT_EQ(w.procs[0].last_event_ns, 23);
  EXPECT_EQ(w.comms[0].last_progress_ns, 689);
  EXPECT_EQ(w.comms[0].members[0].last_completed.ns, 2900);
  EXPECT_EQ(w.comms[0].members[0].records[0].gpu_start_ns, 1900);
  EXPECT_EQ(w.comms[0].members[0].records[0].enqueue_ns, 1012 - 100);
  EXPECT_EQ(w.comms[0].members[0].init_ns, 0);  // unknown stays unknown
}

TEST(Digest, TruncatedOrHostileReportsAreRejectedNotTrusted) {
  const auto bytes = encode_report(sample_report());
  for (size_t n = 0; n < bytes.size(); ++n) {
    NodeReport r;
    std::string err;
    EXPECT_FALSE(decode_report(std::span<const uint8_t>(bytes.data(), n), &r, &err)) << n;
    EXPECT_FALSE(err.empty());
  }
  std::mt19937 g(7);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> b = bytes;
    for (int k = 0; k < 4; ++k) b[g() % b.size()] = uint8_t(g());
    NodeReport r;
    std::string err;
    decode_report(b, &r, &err);  // any outcome but a crash or a huge allocation
  }
  std::vector<uint8_t> huge = {5, 0xff, 0xff, 0xff, 0xff};  // 4 billion findings announced
  NodeReport r;
  std::string err;
  EXPECT_FALSE(decode_report(huge, &r, &err));
  std::vector<uint8_t> v4 = bytes;
  v4[0] = 4;  // an observer of the previous protocol
  EXPECT_FALSE(decode_report(v4, &r, &err));
  EXPECT_EQ(err, "unknown report version");
}

TEST(Digest, TruncatedOrHostileWaitSummariesAreRejectedNotTrusted) {
  const auto bytes = encode_summary(summarize(sample_waits()));
  for (size_t n = 0; n < bytes.size(); ++n) {
    WaitSummary s;
    std::string err;
    EXPECT_FALSE(decode_summary(std::span<const uint8_t>(bytes.data(), n), &s, &err)) << n;
    EXPECT_FALSE(err.empty());
  }
  std::mt19937 g(11);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> b = bytes;
    for (int k = 0; k < 4; ++k) b[g() % b.size()] = uint8_t(g());
    WaitSummary s;
    std::string err;
    if (decode_summary(b, &s, &err)) (void)expand(s);  // any outcome but a crash or a huge allocation
  }
  // A merge drops what does not decode and counts it.
  int bad = 0;
  std::string why;
  const std::vector<uint8_t> garbage = {1, 0xff, 0xff, 0xff, 0xff, 0x0f};
  EXPECT_EQ(merge_encoded(bytes, garbage, &bad, &why), bytes);
  EXPECT_EQ(bad, 1);
  EXPECT_EQ(why, "truncated communicators");
}

// A communicator's last progress as another observer sends it can be any 64-bit value: the
// leader's "stalled past the timeout" (obs::waits_signature) compares it without overflowing, so
// a time in the far past (INT64_MIN) is as stalled as one just past the timeout, and one in the
// future as fresh as one at it (drill_fuzz found the overflow: test/fuzz/corpus/drill/
// last_progress_int64_min_overflow).
TEST(Digest, LastProgressOfAnyValueIsComparedWithoutOverflow) {
  WaitSummary s = summarize(sample_waits());
  const int64_t now = 2'000'000'000'000'000'000, timeout = 5 * kSecond;
  bool dead = false;
  s.comms[0].comm.last_progress_ns = now - timeout - 1;
  const uint64_t stalled = obs::waits_signature(s, now, timeout, &dead);
  s.comms[0].comm.last_progress_ns = now - timeout;
  const uint64_t fresh = obs::waits_signature(s, now, timeout, &dead);
  EXPECT_NE(stalled, fresh);
  s.comms[0].comm.last_progress_ns = INT64_MIN;
  EXPECT_EQ(obs::waits_signature(s, now, timeout, &dead), stalled);
  s.comms[0].comm.last_progress_ns = INT64_MAX;
  EXPECT_EQ(obs::waits_signature(s, now, timeout, &dead), fresh);
}

// A summary claiming communicators or members beyond what the leader keeps state for is refused
// with one line before anything is sized by it (observer/model/limits.h).
TEST(Digest, HugeClaimsInAWaitSummaryAreRefused) {
  std::string err;
  WaitSummary back;
  WaitSummary s = summarize(sample_waits());
  s.comms[0].comm.nranks = 1 << 30;
  EXPECT_FALSE(decode_summary(encode_summary(s), &back, &err));
  EXPECT_EQ(err, "communicator of 1073741824 ranks outside 0..262144");

  s = summarize(sample_waits());
  s.comms[0].comm.nranks = -1;
  EXPECT_FALSE(decode_summary(encode_summary(s), &back, &err));
  EXPECT_EQ(err, "communicator of -1 ranks outside 0..262144");

  s = summarize(sample_waits());  // a run beyond the communicator
  s.comms[0].groups[0].runs[0].count = 8;
  s.comms[0].groups[0].count = 8;
  EXPECT_FALSE(decode_summary(encode_summary(s), &back, &err));
  EXPECT_EQ(err, "run out of range");

  s = summarize(sample_waits());  // a count its runs do not hold
  s.comms[0].groups[0].count = 1000;
  EXPECT_FALSE(decode_summary(encode_summary(s), &back, &err));
  EXPECT_EQ(err, "group count differs from its runs");

  // Members beyond the rank-slot bound (2^20): five communicators of the largest size (2^18
  // ranks), fully listed; four fill it exactly.
  static_assert(obs::kMaxRankSlots % obs::kMaxCommRanks == 0 && obs::kMaxRankSlots / obs::kMaxCommRanks == 4);
  WaitSummary big;
  for (uint64_t h = 1; h <= 5; ++h) {
    CommSummary cs;
    cs.comm.comm_hash = h;
    cs.comm.nranks = obs::kMaxCommRanks;
    MemberGroup g;
    g.count = uint32_t(obs::kMaxCommRanks);
    g.runs.push_back({0, 0, obs::kMaxCommRanks, 1});
    cs.groups.push_back(g);
    big.comms.push_back(cs);
  }
  EXPECT_FALSE(decode_summary(encode_summary(big), &back, &err));
  EXPECT_EQ(err, "members beyond the rank-slot bound");
  big.comms.pop_back();  // four fill the bound exactly
  ASSERT_TRUE(decode_summary(encode_summary(big), &back, &err)) << err;
  EXPECT_EQ(back.members(), uint64_t(obs::kMaxRankSlots));
}

}  // namespace
}  // namespace scout::net
