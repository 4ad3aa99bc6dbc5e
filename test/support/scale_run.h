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
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "observer/cluster/cross_node.h"
#include "observer/model/finding.h"
#include "observer/net/channel.h"
#include "observer/net/digest.h"
#include "observer/net/inproc_channel.h"
#include "observer/pipeline/observer.h"
#include "observer/store/writer.h"
#include "test/support/fake_job.h"
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

// The digest settings of every observer of the scenario (its hang timeout as the stall time).
net::DigestConfig scale_digest_config();

// One node's observer of the scenario, as scout-observer runs it: its Observer over its 8 ranks'
// segments (written by FakeJob from ScaleJob's records as the scenario's time advances), its SQLite
// store, and the cross-node step (NodeView, and on the leader LeaderMerge and CoreJudge). The
// caller drives the digest rounds on view() / judge() and hands their results back with harvest().
class ScaleNode {
 public:
  // Node `node` of `s`, its segments and store in `dir` (which must outlive it).
  ScaleNode(const ScaleScenario& s, int node, const std::string& dir);
  ~ScaleNode();
  // Writes what the node's ranks have done by `t_ns` and runs one observer pass at `t_ns`.
  void pass(int64_t t_ns);
  // A round's results for the next pass (leader: other nodes' findings and the decided ones).
  void harvest(net::RoundResult& r);
  // On other nodes: the findings the last pass handed to the network (sent at the next round).
  std::vector<obs::Finding> take_outbox();

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  obs::Observer& observer() { return *observer_; }
  obs::CrossNodeStep& step() { return *step_; }
  net::LocalView& view() { return step_->view(); }
  net::Judge* judge() { return node_ == 0 ? &step_->judge() : nullptr; }

 private:
  void write_records(int64_t t);
  struct Cursor {
    int64_t step = 0;
    size_t written = 0;
    bool running = false;
  };
  const ScaleScenario& s_;
  int node_;
  bool ok_ = false;
  std::string error_;
  std::unique_ptr<FakeJob> fj_;
  std::map<int, int> fj_comm_;                    // ScaleJob comm -> FakeJob comm
  std::map<std::pair<int, int>, int> member_;     // (comm, local rank) -> member index
  std::unique_ptr<store::StoreWriter> store_;
  std::unique_ptr<obs::Observer> observer_;
  std::unique_ptr<obs::CrossNodeStep> step_;
  net::NetAgent::Harvest pending_;
  std::vector<obs::Finding> outbox_;
  std::vector<Cursor> cur_;
  std::vector<ScaleJob::Reached> reached_;
};

// Node-ranks [1, N) on `network` (endpoint 0 is the leader, here or across a bridge), one thread
// each, every digest round of the scenario. False with *error when a round failed.
// One simulated node-rank `n` (ScaleJob::Node's view, no observer) through every digest round of
// the scenario on `ch`, with the straggler findings the scenario gives it; `judge` on the leader.
// `before_round`, if given, is called before each round with its number (failure injection).
// Throws what the rounds throw (ChannelError).
void run_simulated_node(const ScaleScenario& s, int n, net::Channel& ch, net::Judge* judge = nullptr,
                        const std::function<void(int round)>& before_round = {});

// `before_round`, if given, is called by node-rank 1 before each of its rounds with the round's
// number (the benchmark's failure injection).
bool run_other_nodes(const ScaleScenario& s, net::InprocNetwork& network, std::string* error,
                     const std::function<void(int round)>& before_round = {});

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

// A non-leader node's observer (ScaleNode) through the scenario on `ch`: its pass and its rounds.
struct NodeResult {
  std::vector<LeaderSample> samples;  // per 250 ms interval after the warm-up; store_bytes: wire bytes sent
  std::vector<uint64_t> round_sent;   // wire bytes sent in each round after the warm-up
  std::vector<bool> round_hang;       // ... whether that round was in the hang phase
  uint64_t wire_sent = 0;             // bytes the node put on the wire over the whole run
  uint64_t peak_heap = 0;             // heap in use (malloc'd bytes, mallinfo2) at its largest after a pass
  int waits_rounds = 0;               // rounds that gathered wait snapshots (hang drill-downs)
  bool ok = false;
  std::string why;
};
NodeResult run_node(const ScaleScenario& s, int node, net::Channel& ch, const std::string& dir);

// One line of a finding for messages: kind, verdict, status, [comm func #seq], suspects.
std::string describe_finding(const obs::Finding& f);

}  // namespace scout::testing
