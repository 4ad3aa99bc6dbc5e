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

#include "common/hex.h"
#include "observer/cluster/core_judge.h"
#include "observer/cluster/job_waits.h"
#include "observer/model/limits.h"
#include "observer/net/digest.h"
#include "observer/net/inproc_channel.h"
#include "observer/net/vote_summary.h"
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
    // The range [100, 150) holding seq 120 is digested in round 3 (0-based) and drilled there;
    // in round 4 it still disagrees, but its drill-down is not due: nothing is gathered.
    EXPECT_EQ(res[0].gathered, r == 3) << "round " << r;
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
  EXPECT_EQ(bytes[0], 6);  // NodeReport version 6: findings only (records travel as votes)
  NodeReport back;
  std::string err;
  ASSERT_TRUE(decode_report(bytes, &back, &err)) << err;
  ASSERT_EQ(back.findings.size(), 1u);
  EXPECT_EQ(back.findings[0].dedup_key, "k");
  EXPECT_EQ(back.findings[0].kind, obs::FindingKind::kNan);
  EXPECT_FALSE(back.findings[0].open);
  ASSERT_EQ(back.findings[0].suspects.size(), 1u);
  EXPECT_EQ(back.findings[0].suspects[0].host, "h");
}

// One DP AllReduce of a 4,096-node job (comm rank = node, global rank node * 32 + 3): every node
// casts its rank's vote, node 4,093 received other bytes. Merged in any order, the votes are two
// groups: 4,095 ranks as one run without identities, and the dissenter with its node and identity.
constexpr uint64_t kDp27 = 0xd927;
VoteSummary dp_votes(int nodes, int dissenter, const std::vector<int>& order) {
  VoteSummary all;
  for (int node : order) {
    shm::RecordSnapshot rec = sample_record(440, node == dissenter ? 7 : 6);
    rec.index = 9000 + uint64_t(node);  // per rank: does not travel
    rec.fp_send = 50 + uint64_t(node);
    rec.enqueue_ns = 1000 + node;
    rec.complete_ns = 5000 + node;
    merge(all, one_vote({kDp27, uint8_t(shm::kFuncAllReduce), nodes, "dp27"}, 400, 448, 440, node, node * 32 + 3,
                        node, {node * 32 + 3, "node" + std::to_string(node), 1000 + node, "GPU-3"}, rec));
  }
  return all;
}

TEST(Digest, VotesMergeIntoOneGroupPerValueAndTheLeaderAttributesTheDissenter) {
  std::vector<int> order(4096);
  for (int i = 0; i < 4096; ++i) order[size_t(i)] = (i * 1237) % 4096;  // a permutation: any tree order
  const VoteSummary all = dp_votes(4096, 4093, order);
  ASSERT_EQ(all.streams.size(), 1u);
  ASSERT_EQ(all.streams[0].ops.size(), 1u);
  const std::vector<VoteGroup>& g = all.streams[0].ops[0].groups;
  ASSERT_EQ(g.size(), 2u);
  const VoteGroup& many = g[0].count > 1 ? g[0] : g[1];
  const VoteGroup& one = g[0].count > 1 ? g[1] : g[0];
  EXPECT_EQ(many.count, 4095u);
  EXPECT_EQ(many.runs.size(), 2u);  // comm ranks 0..4092 and 4094..4095, global stride 32
  EXPECT_EQ(many.runs[0].stride, 32);
  EXPECT_TRUE(many.identities.empty());
  EXPECT_EQ(many.rec.enqueue_ns, 1000);       // the earliest enqueue
  EXPECT_EQ(many.rec.complete_ns, 5000 + 4095);  // the latest completion
  EXPECT_EQ(many.rec.index, 0u);              // per-rank fields do not travel
  EXPECT_EQ(many.rec.fp_send, 0u);
  EXPECT_EQ(one.count, 1u);
  ASSERT_EQ(one.identities.size(), 1u);
  EXPECT_EQ(one.identities[0].node, 4093);
  EXPECT_EQ(one.identities[0].id.host, "node4093");
  // What the leader receives does not grow with the ranks that agree.
  const std::vector<uint8_t> bytes = encode_votes(all);
  EXPECT_EQ(bytes[0], 1);  // vote summary version 1
  EXPECT_LT(bytes.size(), 300u);
  VoteSummary back;
  std::string err;
  ASSERT_TRUE(decode_votes(bytes, &back, &err)) << err;
  EXPECT_EQ(encode_votes(back), bytes);
  // The leader: one vote per rank, judged by the core's fingerprint check.
  Identities ids;
  const std::vector<DigestDrill> drills = expand(back, &ids);
  ASSERT_EQ(drills.size(), 1u);
  EXPECT_EQ(drills[0].from, 400u);
  EXPECT_EQ(drills[0].to, 448u);
  ASSERT_EQ(drills[0].votes.at(440).size(), 4096u);
  EXPECT_EQ(drills[0].votes.at(440)[4093].node, 4093);
  EXPECT_EQ(drills[0].votes.at(440)[17].node, -1);  // a member of the large group: no node carried
  obs::CoreJudge judge(obs::HangConfig{});
  const std::vector<obs::Finding> found = judge.judge_digest(drills[0], ids, 7000);
  ASSERT_EQ(found.size(), 1u);
  const obs::Finding& f = found[0];
  EXPECT_EQ(f.kind, obs::FindingKind::kSdc);
  EXPECT_EQ(f.verdict, obs::Verdict::kAttributed);
  ASSERT_EQ(f.suspects.size(), 1u);
  EXPECT_EQ(f.suspects[0].global_rank, 4093 * 32 + 3);
  EXPECT_EQ(f.suspects[0].host, "node4093");
  EXPECT_EQ(f.suspects[0].pid, 1000 + 4093);
  EXPECT_EQ(f.suspects[0].comm_rank, 4093);
  EXPECT_EQ(f.evidence["voters"], 4096);
  EXPECT_EQ(f.evidence["votes"][0]["ranks"].size(), 4095u);
  EXPECT_EQ(f.evidence["votes"][0]["ranks"][1], 32 + 3);
  EXPECT_EQ(f.first_seen_ns, 5000 + 4095);  // dated by the latest completion, as on a node
  // The same votes twice (a node that sends again, or a hostile one): every rank kept once.
  VoteSummary twice = back;
  merge(twice, back);
  EXPECT_EQ(twice.members(), 4096u);
  EXPECT_EQ(expand(twice, &ids)[0].votes.at(440).size(), 4096u);
}

TEST(Digest, TruncatedOrHostileVoteSummariesAreRejectedNotTrusted) {
  const auto bytes = encode_votes(dp_votes(16, 3, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  for (size_t n = 0; n < bytes.size(); ++n) {
    VoteSummary s;
    std::string err;
    EXPECT_FALSE(decode_votes(std::span<const uint8_t>(bytes.data(), n), &s, &err)) << n;
    EXPECT_FALSE(err.empty());
  }
  std::mt19937 g(11);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> b = bytes;
    for (int k = 0; k < 4; ++k) b[g() % b.size()] = uint8_t(g());
    VoteSummary s;
    std::string err;
    if (!decode_votes(b, &s, &err)) continue;  // any outcome but a crash or a huge allocation
    Identities ids;
    for (const DigestDrill& d : expand(s, &ids)) {
      for (const auto& [seq, votes] : d.votes) EXPECT_LE(votes.size(), size_t(std::max(d.stream.nranks, 0)));
    }
  }
  // A child whose bytes do not decode is dropped from the merge and counted; the other stays.
  int bad = 0;
  std::string first;
  const std::vector<uint8_t> kept = merge_encoded_votes(bytes, {9, 9, 9}, &bad, &first);
  EXPECT_EQ(kept, bytes);
  EXPECT_EQ(bad, 1);
  EXPECT_EQ(first, "unknown vote summary version");
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
  EXPECT_EQ(bytes[0], 2);  // wait summary version 2: a table of states
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

// 4,096 model-parallel communicators whose ranks wait alike (each its own hash, name, ranks and
// times): their groups share one entry of the state table and send only their differences, so
// the summary costs tens of bytes per communicator, not the state's hundred; every time and ring
// index comes back exactly.
TEST(Digest, CommunicatorsWaitingAlikeShareOneStateInTheSummary) {
  WaitSummary all;
  size_t alone = 0;  // bytes of the first communicator's summary on its own (its state included)
  for (int d = 0; d < 4096; ++d) {
    WaitSnapshot w;
    w.procs.push_back({d * 32, 0, "node" + std::to_string(d * 4), 1000 + d, "GPU-0", 0, 0, 5, 0});
    CommWaitView c;
    c.comm_hash = 0x3000 + uint64_t(d);
    c.nranks = 32;
    c.name = "mp" + std::to_string(d);
    c.last_progress_ns = 100'000 + d;
    MemberView m;
    m.comm_rank = 0;
    m.proc = 0;
    m.issued[4] = m.started[4] = 111;
    m.completed[4] = 110;
    m.last_completed = {true, 0, 4, 109, -1, -1, 90'000 + d};
    shm::RecordSnapshot running = sample_record(110, 0);
    running.index = 5000 + uint64_t(d);
    running.state = shm::kStateRunning;
    running.gpu_start_ns = 95'000 + d;
    m.records.push_back(running);
    c.members.push_back(m);
    w.comms.push_back(c);
    if (d == 0) alone = encode_summary(summarize(w)).size();
    merge(all, summarize(w));
  }
  const std::vector<uint8_t> bytes = encode_summary(all);
  EXPECT_LT(bytes.size(), 4096u * alone / 2);  // each alone would carry its state (v1: ~4,096 x alone)
  EXPECT_LT(bytes.size(), 4096u * 96u);
  WaitSummary back;
  std::string err;
  ASSERT_TRUE(decode_summary(bytes, &back, &err)) << err;
  EXPECT_EQ(encode_summary(back), bytes);
  ASSERT_EQ(back.comms.size(), 4096u);
  const MemberGroup& g = back.comms[4000].groups[0];
  EXPECT_EQ(back.comms[4000].comm.name, "mp4000");
  EXPECT_EQ(g.state.last_completed.ns, 90'000 + 4000);
  ASSERT_EQ(g.state.records.size(), 1u);
  EXPECT_EQ(g.state.records[0].index, 5000u + 4000u);
  EXPECT_EQ(g.state.records[0].gpu_start_ns, 95'000 + 4000);
  EXPECT_EQ(g.state.records[0].key, 110u);
}

// The bytes of a merged vote summary and a merged wait summary, pinned: a large group (runs, no
// identities), small groups with identities, a dissenter; observers of one build send and read
// exactly these (docs/observer-network.md, "Drill-down", "Hangs across nodes").
std::string hex_bytes(const std::vector<uint8_t>& b) { return shm::bytes_hex(b.data(), b.size()); }

TEST(Digest, SummaryBytesArePinned) {
  std::vector<int> order(20);
  for (int i = 0; i < 20; ++i) order[size_t(i)] = (i * 7) % 20;
  EXPECT_EQ(hex_bytes(encode_votes(dp_votes(20, 3, order))),
            "010127d9000000000000042804000000647032379003c00301b80302130200060640088602204000b803010407070001"
            "80088008802000d10f0300000000d10fd10fc71f000200000000000000000600000000000000000080200100010106c6"
            "01020200b80301040707000180088008802000e03e0300000000cb0fd10fa71f00020000000000000000070000000000"
            "000000008020010106050000006e6f646533d60f050000004750552d33");
  EXPECT_EQ(hex_bytes(encode_votes(dp_votes(8, 5, {7, 6, 5, 4, 3, 2, 1, 0}))),
            "010127d9000000000000041004000000647032379003c00301b80302070200060a400c8603044000b803010407070001"
            "80088008802000d10f0300000000d10fd10faf1f00020000000000000000060000000000000000008020010100050000"
            "006e6f646530d00f050000004750552d3302050000006e6f646531d20f050000004750552d3304050000006e6f646532"
            "d40f050000004750552d3306050000006e6f646533d60f050000004750552d3308050000006e6f646534d80f05000000"
            "4750552d330c050000006e6f646536dc0f050000004750552d330e050000006e6f646537de0f050000004750552d3301"
            "010ac602020200b80301040707000180088008802000c43e0300000000c70fd10fab1f00020000000000000000070000"
            "00000000000000802001010a050000006e6f646535da0f050000004750552d33");
  WaitSummary waits = summarize(sample_waits());
  for (int i = 0; i < 20; ++i) {  // 20 members of one state, merged out of order: one run, no identities
    const int node = (i * 7) % 20;
    WaitSnapshot w;
    w.procs.push_back({node * 8 + 1, 1, "node" + std::to_string(node), 2000 + node, "GPU-1", 1, 0, 50 + node, 0});
    CommWaitView c;
    c.comm_hash = 0xd0;
    c.nranks = 20;
    c.name = "dp";
    c.last_progress_ns = 300 + node;
    MemberView m;
    m.comm_rank = node;
    m.proc = 0;
    m.issued[4] = m.started[4] = 21;
    m.completed[4] = 20;
    m.last_completed = {true, 0, 4, 19, -1, -1, 4000 + node};
    c.members.push_back(m);
    w.comms.push_back(c);
    merge(waits, summarize(w));
  }
  merge(waits, summarize(sample_waits()));  // the same node again: its members kept once
  EXPECT_EQ(hex_bytes(encode_summary(waits)),
            "02030000000000000000000000000000001515140000000001010000000000010100010004130101c13e000000000000"
            "000000000000000000000d0d0c00000000010100000000000101000100040b0101d00f01700c01040707000180088008"
            "802000881f0200000202b90fd10f01000100000000000000000000000000000000000080200102000000000000000000"
            "00000000000c0c0c0000000001010000000000010100000000000101000002d0000000000000002802000000647000f2"
            "290000000100000000001401000228109a040000bc0a0000000000001002000000647008c70b80b4c4c3212880bcc196"
            "0b020100000000000000000000020102100410b40a000102050000006e6f646531c601050000004750552d3802040500"
            "00006e6f646531c801060000004750552d31360402000000000101063002020597050106050000006e6f646531ca0106"
            "0000004750552d323406");
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
  std::vector<uint8_t> huge = {6, 0xff, 0xff, 0xff, 0xff};  // 4 billion findings announced
  NodeReport r;
  std::string err;
  EXPECT_FALSE(decode_report(huge, &r, &err));
  std::vector<uint8_t> v5 = bytes;
  v5[0] = 5;  // an observer of the previous protocol
  EXPECT_FALSE(decode_report(v5, &r, &err));
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
  const std::vector<uint8_t> garbage = {2, 0xff, 0xff, 0xff, 0xff, 0x0f};
  EXPECT_EQ(merge_encoded(bytes, garbage, &bad, &why), bytes);
  EXPECT_EQ(bad, 1);
  EXPECT_EQ(why, "truncated state table");
  // Two groups of one state in a communicator (summarize and merge make one): refused, else the
  // summary merged with itself would count their members twice (drill_fuzz found it).
  WaitSummary twice = summarize(sample_waits());
  twice.comms[0].groups.push_back(twice.comms[0].groups[0]);
  WaitSummary back;
  EXPECT_FALSE(decode_summary(encode_summary(twice), &back, &why));
  EXPECT_EQ(why, "two groups of one state in a communicator");
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
