// The thread that runs the observer's replay cycles (docs/replay.md, "Supervision", "Across
// nodes"): it owns the scout-replay channel (channel.h) and, with several nodes, the cross-node
// key store (cross_store.h), so a pass never waits for replay. One cycle at a time, through the
// slot of CycleState (cycle.h): the pass submits a local cycle when the slot is idle and takes the
// judged one back; between local cycles the worker publishes this node's members, makes the
// leader's plans and runs this node's ends of each new plan.
//
// A cycle: readiness contract (prepare), admission (replay/contract.h), run with a deadline,
// judgement (replay/judge.h). A scout-replay that dies or misses the deadline ends the cycle
// "inconclusive"; the next cycle starts a fresh one. Store errors across nodes are logged (the
// plan is skipped).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "observer/replay/channel.h"
#include "observer/replay/cross_store.h"
#include "observer/replay/cycle.h"
#include "observer/replay/options.h"
#include "replay/contract.h"

namespace scout::obs {

class ReplayWorker {
 public:
  // `next_cycle`: the cycle numbers, shared with the triggers. Starts the thread; opens the key
  // store of opt.rdzv when opt.nodes > 1 (a store that cannot be opened is logged: no cross-node
  // cycles).
  ReplayWorker(const ReplayOptions& opt, const std::string& job, const std::string& shm_dir, int node_rank,
               std::atomic<uint64_t>* next_cycle, std::function<void(const std::string&)> log);
  // Stops the thread and scout-replay (asked to quit, killed after 1 s).
  ~ReplayWorker();
  ReplayWorker(const ReplayWorker&) = delete;
  ReplayWorker& operator=(const ReplayWorker&) = delete;

  // ---- pass side
  CycleState state() const;
  // Hands a local cycle to the worker: kIdle -> kQueued. False (job dropped) when the slot is busy.
  bool submit(CycleJob job);
  // Ends the local cycle in flight at once when it was not started by a stuck collective
  // (scout-replay is killed; the cycle ends inconclusive, "preempted"), so that the stuck
  // collective's cycle runs next (docs/replay.md, "Triggers and budget"). False when there is
  // nothing to preempt.
  bool preempt();
  // The judged cycle, if the slot holds one (kJudged -> kIdle).
  std::optional<CycleResult> take_judged();
  // Lines the worker logged since the last call (the pass prints them).
  std::vector<std::string> take_log();
  // Whether cycles across nodes run (a key store is open).
  bool across_nodes() const { return cross_ != nullptr; }
  // This node's members as the pass sees them; the worker publishes them when they changed.
  void set_members(NodeMembers members);
  // Leader: comm rank -> global rank of every spanning communicator, from every node's members.
  std::map<std::string, std::map<int, int>> comm_ranks() const;

  // For tests: the scout-replay process now running (0 none), cycles finished.
  int child_pid() const;
  uint64_t cycles_done() const;

 private:
  void loop();
  void set_state(CycleState s);
  void finish(CycleResult d);  // -> kJudged
  CycleResult run_local(const CycleJob& job);
  // Cross-node cycles (worker_cross.cc): publish this node's members, make the next plan
  // (leader), run this node's ends of a new plan when the slot is idle.
  void cross_tick();
  // Leader: the next plan from every node's members into the store (the first as soon as every
  // node has published its members, later ones paced; docs/replay.md, "Across nodes").
  void leader_plan();
  void cross_failed(const std::string& what);  // backoff, counted, said at most once a minute
  CycleResult run_cross(const CrossPlan& plan);
  // This node's ends of the plan's admitted pairs, one at a time in the plan's order; samples into
  // *samples, pairs that could not run into adm->inconclusive.
  void run_cross_pairs(const CrossPlan& plan, const std::vector<replay::Recipe>& recipes, int64_t deadline,
                       replay::Admission* adm, std::vector<replay::Sample>* samples);
  // This node's voters' GEMM recipes of the plan (cross_gemm.cc), those admitted, through one "run";
  // samples into *samples, recipes that could not run into adm->inconclusive (why in rec).
  void run_cross_gemms(const CrossPlan& plan, const std::vector<replay::Recipe>& recipes, int64_t deadline,
                       replay::Admission* adm, std::vector<replay::Sample>* samples, ReplayCycleRecord* rec);
  // This node's members of the plan's admitted collective recipes (worker_cross_coll.cc), one
  // recipe at a time in the plan's order: the lowest member's node makes the bootstrap id
  // (coll_id) and publishes it as "uid/coll-<i>", every other member's node waits for it, each
  // runs its members (coll_end). Samples into *samples, recipes that could not run into
  // adm->inconclusive.
  void run_cross_colls(const CrossPlan& plan, const std::vector<replay::Recipe>& recipes, int64_t deadline,
                       replay::Admission* adm, std::vector<replay::Sample>* samples);
  // Asks scout-replay to prepare `job` under `contract`: its readiness answers in *answers, false
  // (the record says why) when it did not answer "ready".
  bool prepare(const CycleJob& job, const replay::Contract& contract, int64_t deadline, ReplayCycleRecord* rec,
               nlohmann::json* answers);
  // A cycle's record as it starts (cycle, trigger, start, participants, recipe ids).
  static void start_record(const CycleJob& job, ReplayCycleRecord* rec);
  // The GPU time the OK samples took: d->any_ok, and d->gpu_cost_ns the most of any one GPU (a
  // link counts for both ends).
  static void tally_cost(const std::vector<replay::Sample>& samples, CycleResult* d);
  // Judges `recipes` from `samples` into d (verdict, record outcome and detail, end time).
  void judge(const std::vector<replay::Recipe>& recipes, const std::vector<replay::GpuInfo>& gpus,
             const std::vector<replay::Sample>& samples,
             const std::vector<std::pair<std::string, std::string>>& blocked, CycleResult* d) const;

  ReplayOptions opt_;
  int node_rank_ = 0;
  std::atomic<uint64_t>* next_cycle_;
  std::function<void(const std::string&)> log_;
  std::unique_ptr<ReplayChannel> channel_;
  std::unique_ptr<CrossStore> cross_;  // null: one node (or no store)
  uint64_t cross_failures_ = 0;        // consecutive failed store calls or reconnections
  int64_t cross_backoff_ns_ = 0, cross_retry_ns_ = 0, cross_said_ns_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  CycleState state_ = CycleState::kIdle;
  std::optional<CycleJob> pending_;      // kQueued
  std::optional<CycleResult> judged_;    // kJudged
  std::vector<std::string> worker_log_;  // lines for log_, written from the pass
  bool stop_ = false;
  uint64_t cycles_done_ = 0;
  std::optional<Trigger> local_trigger_;   // the local cycle in flight
  std::atomic<bool> cancel_{false};        // preempt(): the channel call in flight gives up
  NodeMembers members_;                    // as the pass last set them
  std::optional<NodeMembers> to_publish_;  // changed since the last publication
  std::map<std::string, std::map<int, int>> cross_comm_ranks_;

  // Worker thread only (cross-node state): the newest plan handled (nullopt before the first
  // look: plans older than this observer are not run), the leader's next plan.
  std::optional<uint64_t> cross_seen_;
  int64_t next_cross_ns_ = 0;
  size_t cross_cursor_ = 0;
  size_t gemm_shape_cursor_ = 0, gemm_node_cursor_ = 0;  // the leader's GEMM votes across nodes
  bool cross_planned_ = false;                           // the leader wrote its first plan
  int64_t cross_first_look_ns_ = 0;                      // when the leader first looked for the observers' meeting
  size_t cross_coll_cursor_ = 0;                         // the leader's next collective class across nodes
  std::thread thread_;
};

// The samples of a JSON array appended to *out (entries that do not parse are left out), also
// kept as JSON in *kept when given.
void add_samples(const nlohmann::json& a, std::vector<replay::Sample>* out, nlohmann::json* kept = nullptr);

// A skipped sample ("no sample from rank R's node") for every round of every member of a
// collective recipe of `recipes` that has no sample at all in *samples: the leader's judgement
// of a collective is then inconclusive, not a pass, when a node sent nothing for its members.
void add_missing_members(const std::vector<replay::Recipe>& recipes, std::vector<replay::Sample>* samples);

// scout-replay's readiness answers ([{gpu, digest}]) checked against `contract` (replay/contract.h):
// the GPUs and the check into rec->detail ("gpus", "contract"), their identities into *gpus;
// returns which recipes may run.
replay::Admission admit_answers(const replay::Contract& contract, const nlohmann::json& answers,
                                const std::vector<replay::Recipe>& recipes, ReplayCycleRecord* rec,
                                std::vector<replay::GpuInfo>* gpus);

}  // namespace scout::obs
