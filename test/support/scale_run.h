// The scaling scenario of test/support/scale_job.h run end to end: the leader (node-rank 0) as
// scout-observer runs it (its Observer over its 8 ranks' segments written by FakeJob, its SQLite
// store, the cross-node step of observer/cluster/cross_node.h with NodeView, LeaderMerge and
// CoreJudge, and its digest rounds), the other nodes' observers as DigestExchange over
// ScaleJob::Node views, one thread each. Used by test/bench/scale_bench.cc (the leader alone in
// its process, the other nodes in another) and test/observer/scale_test.cc (one process).
//
// Timeline: observer passes every 250 ms and digest rounds every second (the defaults), hang
// timeout and stall 10 s; warm-up, then the phases: healthy (the leader's board holds one closed
// finding per node from earlier in the job; four nodes keep an open straggler finding and refresh
// it every 10 s), sdc (one rank on the last node receives different bytes in one DP AllReduce),
// hang (one rank on the last node stops before its DP AllReduce; the job blocks behind it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "observer/net/channel.h"
#include "observer/net/inproc_channel.h"
#include "test/support/scale_job.h"

namespace scout::testing {

struct ScalePhases {
  int warmup_steps = 4;  // seconds (one step per second), not measured
  int healthy_steps = 32;
  int sdc_steps = 72;  // long enough for the stream to be compared at 2,048 nodes (every P = 32 rounds)
  int hang_steps = 96;  // a stall is two comparisons of a stream apart
};

// The job and its faults: the same in every process that runs a part of it.
struct ScaleScenario {
  static constexpr int64_t kPassNs = 250 * kMs;  // observer pass (SCOUT_OBSERVER_INTERVAL_MS default)
  static constexpr int kPassesPerRound = 4;      // a digest round every second (SCOUT_NET_INTERVAL_MS)
  static constexpr int64_t kHangTimeoutNs = 10 * kSec;
  static constexpr int kStragglerNodes = 4;
  static constexpr int kRefreshRounds = 10;

  explicit ScaleScenario(int nodes, ScalePhases phases = {});
  ScaleJob job;
  ScalePhases ph;
  int hang_rank, sdc_rank;  // both on the last node
  int64_t sdc_step, hang_step;
  uint64_t sdc_seq;  // DP AllReduce seqNumber the sdc rank receives corrupted

  int passes() const { return (ph.warmup_steps + ph.healthy_steps + ph.sdc_steps + ph.hang_steps) * kPassesPerRound; }
  static int64_t pass_time(int k) { return kT0 + int64_t(k + 1) * kPassNs; }
  static bool has_round(int k) { return k % kPassesPerRound == kPassesPerRound - 1; }
  // "warmup", "healthy", "sdc" or "hang".
  const char* phase_of(int k) const;
  // Nodes with an open straggler finding, and a node's finding (closed ones: the leader's history).
  std::vector<int> straggler_nodes() const;
  obs::Finding straggler(int node, int64_t t, bool open) const;
};

// Node-ranks [1, N) on `network` (endpoint 0 is the leader, here or across a bridge), one thread
// each, every digest round of the scenario. False with *error when a round failed.
bool run_other_nodes(const ScaleScenario& s, net::InprocNetwork& network, std::string* error);

struct LeaderSample {
  const char* phase;
  int64_t cpu_ns;    // the leader thread's CPU in this 250 ms interval: its pass + its round, if any
  int64_t pass_ns;   // ... of which the observer pass
  int64_t round_ns;  // ... and the digest round (with what it judged)
  uint64_t store_bytes;  // bytes written (write(2)) during the interval, other writes excluded
};

struct LeaderResult {
  std::vector<LeaderSample> samples;  // every pass after the warm-up
  double drill_kib = -1;       // leader wire bytes received in the round that decided the sdc
  double hang_drill_kib = -1;  // ... in the round that decided the hang
  int digest_drills = 0;       // rounds of the sdc phase that gathered a digest drill-down
  bool healthy_ok = false;     // the healthy phase opened no finding
  bool sdc_ok = false;         // one sdc finding: attributed to sdc_rank, its dp, AllReduce #sdc_seq
  bool hang_ok = false;        // one hang finding: open, attributed to hang_rank, its dp, AllReduce #(4 x hang_step)
  bool others_ok = false;      // no finding of another kind; the stragglers exactly the scenario's own
  std::string why;             // what a failed check saw
  std::vector<obs::Finding> findings;  // the leader's board at the end
};

// The leader on `ch` (endpoint 0 of the network the other nodes use), store and segments in `dir`.
// `other_writes`, if given, returns the bytes this process wrote that are not the store's (the
// benchmark's bridge). `verbose`: one line per round on stderr.
LeaderResult run_leader(const ScaleScenario& s, net::Channel& ch, const std::string& dir,
                        const std::function<uint64_t()>& other_writes = {}, bool verbose = false);

// One line of a finding for messages: kind, verdict, status, [comm func #seq], suspects.
std::string describe_finding(const obs::Finding& f);

}  // namespace scout::testing
