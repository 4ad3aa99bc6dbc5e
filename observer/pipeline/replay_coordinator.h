// Replay cycles for one observer (docs/replay.md): decides when scout-replay runs what, talks to
// it through a ReplayChannel on a worker thread (a pass never waits for replay), judges the
// samples (replay/judge.h) and turns the verdicts into findings.
//
// Triggers, checked once per pass (step()):
//   straggler  an open straggler finding without a replay verdict since it opened: GEMM timing
//              on its GPU and every other GPU of this node (cause "gpu" or "host");
//   sdc        an inconclusive sdc finding: GEMM, collective and link recipes on the GPUs of its
//              communicator plus every other GPU of this node as voters;
//   slowlink   a slowlink finding of class "comm": the link sweep inside its communicator;
//   demand     a request of `scout replay run` (replay_request.h): the recipe kinds it asks for
//              on the ranks it names (default: every kind, every GPU of this node); taken
//              before any other trigger;
//   cross      (several nodes) a plan of the leader: link recipes whose ends are on two nodes
//              (replay_cross.h), paced like periodic cycles, at most every cross_period;
//   periodic   GEMM recipes on every GPU (the next check cycle of the captured shapes' plan
//              when there is one), the job's collective classes and the directed pairs
//              of its communicators (round-robin, at most max_pairs per cycle), at most as often
//              as keeps the GPU time replay takes from any one GPU within SCOUT_REPLAY_BUDGET of
//              wall time (a cycle that ran nothing backs off, doubling up to 60 s).
// Each cycle: readiness contract (prepare), admission (replay/contract.h), run with a deadline,
// judgement. A scout-replay that dies or misses the deadline ends the cycle "inconclusive"; the
// next cycle starts a fresh one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "observer/detect/judged_op.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"
#include "observer/model/replay_cycle.h"
#include "observer/pipeline/replay_channel.h"
#include "observer/pipeline/replay_cross.h"
#include "observer/pipeline/replay_request.h"
#include "replay/backend.h"
#include "replay/contract.h"
#include "replay/judge.h"
#include "replay/recipe.h"
#include "replay/schedule/plan.h"

namespace scout::obs {

struct ReplayOptions {
  bool enabled = false;                   // SCOUT_REPLAY (the registry's default is on)
  double budget = 0.01;                   // SCOUT_REPLAY_BUDGET: fraction of wall time
  int64_t max_mem = int64_t(2) << 30;     // SCOUT_REPLAY_MAX_MEM: device bytes per GPU
  std::string gemms;                      // SCOUT_REPLAY_GEMMS ("" = the default set)
  int64_t deadline_ns = 30'000'000'000;   // SCOUT_REPLAY_DEADLINE_S: one cycle, contract to verdict
  int64_t min_period_ns = 1'000'000'000;  // periodic cycles at most this often
  int max_pairs = 64;                     // link recipes per periodic cycle
  int max_colls = 8;                      // collective recipes per cycle
  std::vector<std::string> program;       // scout-replay argv ("" = next to this executable)
  std::string request_prefix;             // on-demand requests (replay_request.h); "" = none
  replay::OutlierRule rule;
  std::string rdzv;                        // observers' rendezvous ("" = one node: no cross-node links)
  int nodes = 1;                           // observers in the job
  int64_t cross_period_ns = 5'000'000'000;  // cross-node plans at most this often (leader)
};

class ReplayCoordinator {
 public:
  // `node_rank`: this observer's node (its GPUs are the procs with that node_rank).
  ReplayCoordinator(ReplayOptions opt, std::string job, std::string shm_dir, int node_rank,
                    std::function<void(const std::string&)> log);
  ~ReplayCoordinator();

  // A judged operation of the job (collective classes for the recipes).
  void observe(const Model& m, const JudgedOp& j);
  // Once per pass, after the detectors: applies a finished cycle to `board`, marks straggler
  // findings with their cause, and starts the next cycle when one is due. Never blocks on replay.
  void step(const Model& m, FindingBoard& board, int64_t now_ns);
  // Cycles finished since the last call, for the Sink.
  std::vector<ReplayCycleRecord> take_records();

  // For tests: the scout-replay process now running (0 none), cycles finished, whether a cycle
  // is in flight.
  int child_pid() const;
  uint64_t cycles_done() const;
  bool busy() const;

 private:
  struct Job {
    uint64_t cycle = 0;
    std::string trigger;
    std::string request;  // demand: the request's id
    std::vector<replay::Participant> participants;
    std::vector<replay::Recipe> recipes;
    int64_t started_ns = 0;
  };
  struct Done {
    Job job;
    ReplayCycleRecord record;
    replay::CycleVerdict verdict;
    bool have_verdict = false;
    int64_t gpu_cost_ns = 0;  // the most GPU time the cycle took from one GPU
    bool any_ok = false;      // some recipe ran somewhere
    bool report = true;       // its verdicts become findings here (cross: the leader only)
    std::map<int, CrossMember> remote;  // cross: the ranks of other nodes it measured
  };
  struct Cause {
    std::string cause;  // "gpu", "host"
    int64_t at_ns = 0;  // when the cycle started
    nlohmann::json evidence;
  };

  void worker();
  Done run(const Job& job);
  // A cycle's record as it starts (cycle, trigger, start, participants, recipe ids); *parts and
  // *recipes: the participants and recipes as scout-replay's prepare takes them.
  static void start_record(const Job& job, ReplayCycleRecord* rec, nlohmann::json* parts, nlohmann::json* recipes);
  // scout-replay's readiness answers ([{gpu, digest}]) checked against `contract` (replay/contract.h):
  // the GPUs and the check into rec->detail ("gpus", "contract"), their identities into *gpus;
  // returns which recipes may run.
  static replay::Admission admit_answers(const replay::Contract& contract, const nlohmann::json& answers,
                                         const std::vector<replay::Recipe>& recipes, ReplayCycleRecord* rec,
                                         std::vector<replay::GpuInfo>* gpus);
  // The GPU time the OK samples took: d->any_ok, and d->gpu_cost_ns the most of any one GPU (a
  // link counts for both ends).
  static void tally_cost(const std::vector<replay::Sample>& samples, Done* d);
  // Cross-node links (replay_cross.h), on the worker thread: publish this node's members, make
  // the next plan (leader), run this node's ends of a new plan. Store errors are logged.
  void cross_tick();
  Done run_cross(const CrossPlan& plan);
  NodeMembers node_members(const Model& m) const;  // this node's ranks and spanning communicators
  // A suspect / its words for a global rank of this node or, in a cross cycle, of another.
  Suspect suspect_for(const Model& m, int global_rank, const Done& d) const;
  std::string who_for(const Model& m, int global_rank, const Done& d) const;
  // A finished cycle, once per pass: pacing, log line, then its verdicts as findings and causes.
  void apply(const Model& m, FindingBoard& board, const Done& d, int64_t now_ns);
  void pace_periodic(const Done& d, int64_t now_ns);  // the next periodic cycle within the budget
  void report_sdc(const Model& m, FindingBoard& board, const Done& d, int64_t now_ns);  // sdc per rank
  // Slow pairs as slowlink (class link); pairs measured normal close their replay finding.
  void report_slow_pairs(const Model& m, FindingBoard& board, const Done& d, int64_t now_ns);
  void note_causes(const Done& d);  // GEMM timing verdicts: straggler causes per rank
  void mark_stragglers(const Model& m, FindingBoard& board);
  std::optional<Job> next_job(const Model& m, const FindingBoard& board, int64_t now_ns);
  // A job for an on-demand request, or nullopt after recording why it cannot run.
  std::optional<Job> demand_job(const Model& m, const ReplayRequest& rq, int64_t now_ns);
  // The running ranks of this node with a known GPU, by global rank.
  std::vector<replay::Participant> local_participants(const Model& m) const;
  // Collective classes (at most max_colls) whose members are all in `members` and on this node:
  // the first seen, or with `cursor` (periodic cycles) the next ones round-robin from it.
  std::vector<replay::CollClass> colls_within(const std::set<int>& local, const std::vector<int>& members,
                                              size_t* cursor = nullptr) const;
  std::vector<replay::GemmShape> gemm_shapes();  // SCOUT_REPLAY_GEMMS, else the default set
  // The GEMMs of a periodic cycle: SCOUT_REPLAY_GEMMS when set; else, when this node's ranks
  // captured shapes (SCOUT_GEMM_CAPTURE), the recipes of the next check cycle of the coverage
  // plan over them (replay/schedule/plan.h, round-robin); else the default set.
  std::vector<replay::GemmShape> periodic_gemms(const Model& m, const std::set<int>& local);

  ReplayOptions opt_;
  std::string job_, shm_dir_;
  int node_rank_ = 0;
  std::map<std::string, std::pair<int, int>> replay_links_;  // open slowlink findings replay made: their pair
  std::function<void(const std::string&)> log_;
  replay::CollClassSet classes_;
  std::vector<std::vector<int>> groups_;  // communicator memberships (global ranks) seen
  size_t pair_cursor_ = 0;
  size_t coll_cursor_ = 0;  // the next collective class of a periodic cycle
  size_t plan_cursor_ = 0;  // the next check cycle of the GEMM plan
  std::shared_ptr<replay::ReplayPlan> plan_;  // the GEMM plan of the captured shapes, made at plan_key_
  uint64_t plan_key_ = 0;  // local ranks, their shape counts and the peer groups the plan was made for
  std::atomic<uint64_t> next_cycle_{1};
  int64_t first_seen_ns_ = 0;
  int64_t next_periodic_ns_ = 0;
  int64_t idle_period_ns_ = 0;     // backoff while cycles run nothing
  std::map<int, Cause> causes_;    // global rank -> latest timing verdict
  std::set<std::string> handled_;  // findings a trigger already ran for
  bool gemm_unavailable_ = false;  // every GEMM was skipped: no periodic GEMMs
  std::vector<ReplayCycleRecord> records_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Job> pending_;
  std::deque<Done> done_;
  std::vector<std::string> worker_log_;  // lines for log_, written from the pass
  bool in_flight_ = false;
  bool stop_ = false;
  uint64_t cycles_done_ = 0;
  std::unique_ptr<ReplayChannel> channel_;
  // Cross-node state: the store (null: one node), this node's members as the last pass saw them
  // (published by the worker when changed), the newest plan handled, the leader's next plan.
  std::unique_ptr<CrossStore> cross_;
  NodeMembers members_;
  bool members_dirty_ = false;
  int64_t members_ns_ = INT64_MIN / 2;  // pass time members_ was last computed
  bool cross_started_ = false;
  uint64_t cross_seen_ = 0;
  int64_t next_cross_ns_ = 0;
  size_t cross_cursor_ = 0;
  // Leader: comm rank -> global rank of every spanning communicator, from every node's members
  // (guarded by mu_): a live finding that names a far end by its comm rank is the same link.
  std::map<std::string, std::map<int, int>> cross_comm_ranks_;
  std::thread thread_;
};

// scout-replay's path: SCOUT_REPLAY_PROGRAM is not a variable; the program next to the running
// executable (<dir of /proc/self/exe>/scout-replay).
std::string default_replay_program();

}  // namespace scout::obs
