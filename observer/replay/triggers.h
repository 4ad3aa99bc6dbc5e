// When the observer runs a replay cycle and what it runs (docs/replay.md, "Triggers and budget"):
// the triggers, checked once per pass when no cycle is in flight, first match wins:
//   demand     a request of `scout replay run` (request.h): the recipe kinds it asks for on the
//              ranks it names (default: every kind, every GPU of this node);
//   sdc        an inconclusive sdc finding: GEMM, collective and link recipes on the GPUs of its
//              communicator plus every other GPU of this node as voters;
//   straggler  an open straggler finding without a replay verdict since it opened: GEMM timing
//              on its GPU and every other GPU of this node (cause "gpu" or "host");
//   slowlink   a slowlink finding of class "comm": the link sweep inside its communicator;
//   periodic   GEMM recipes on every GPU (the next check cycle of the captured shapes' plan when
//              there is one), the job's collective classes and the directed pairs of its
//              communicators (round-robin, at most max_pairs per cycle), paced so that the GPU
//              time replay takes from any one GPU stays within SCOUT_REPLAY_BUDGET of wall time (a
//              cycle that ran nothing backs off, doubling up to 60 s).
// (Cycles across nodes are the worker's: worker.h.) Runs on the pass thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "observer/detect/judged_op.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"
#include "observer/replay/cycle.h"
#include "observer/replay/options.h"
#include "observer/replay/reporter.h"
#include "observer/replay/request.h"
#include "replay/schedule/plan.h"

namespace scout::obs {

class ReplayTriggers {
 public:
  // `next_cycle`: the cycle numbers, shared with the worker's cycles across nodes.
  ReplayTriggers(const ReplayOptions& opt, int node_rank, std::atomic<uint64_t>* next_cycle,
                 std::function<void(const std::string&)> log);

  // A judged operation of the job: its collective class and communicator for later recipes.
  void observe(const Model& m, const JudgedOp& j);
  // The collective classes of this node's communicators spanning nodes, from their live
  // operations (never judged on one node), for node_members: the leader's plans across nodes.
  void observe_spanning(const Model& m);
  // The next cycle to run at pass time `now_ns`, or nullopt. A demand request that cannot run
  // (no GPU, nothing of the kinds asked) is answered at once: its record goes to *answered.
  std::optional<CycleJob> next_job(const Model& m, const FindingBoard& board, const ReplayReporter& reporter,
                                   int64_t now_ns, std::vector<ReplayCycleRecord>* answered);
  // A finished cycle: the next periodic cycle within the budget; GEMMs no GPU could run are left
  // out of later periodic cycles (logged once).
  void pace(const CycleResult& d, int64_t now_ns);
  // This node's ranks and spanning communicators, for the cycles across nodes.
  NodeMembers node_members(const Model& m) const;

 private:
  std::optional<CycleJob> demand_job(const Model& m, const ReplayRequest& rq, int64_t now_ns,
                                     std::vector<ReplayCycleRecord>* answered);
  // A trigger from an open finding (sdc, straggler, slowlink), its recipes in *plan.
  std::optional<Trigger> finding_trigger(const Model& m, const FindingBoard& board, const ReplayReporter& reporter,
                                         const std::set<int>& local, replay::RecipePlan* plan);
  void periodic_plan(const Model& m, const std::set<int>& local, replay::RecipePlan* plan);
  // The running ranks of this node with a known GPU, by global rank.
  std::vector<replay::Participant> local_participants(const Model& m) const;
  // Collective classes (at most max_colls) whose members are all in `members` and on this node:
  // the first seen, or with `cursor` (periodic cycles) the next ones round-robin from it.
  std::vector<replay::CollClass> colls_within(const std::set<int>& local, const std::vector<int>& members,
                                              size_t* cursor = nullptr) const;
  std::vector<replay::GemmShape> gemm_shapes();  // SCOUT_REPLAY_GEMMS, else the default set
  // Whether `c` has members on other nodes (or members not all known here): published as spanning.
  static bool spans_nodes(const Comm& c);
  // The GEMMs of a periodic cycle: SCOUT_REPLAY_GEMMS when set; else, when this node's ranks
  // captured shapes (SCOUT_GEMM_CAPTURE), the recipes of the next check cycle of the coverage
  // plan over them (replay/schedule/plan.h, round-robin); else the default set.
  std::vector<replay::GemmShape> periodic_gemms(const Model& m, const std::set<int>& local);

  ReplayOptions opt_;
  int node_rank_ = 0;
  std::atomic<uint64_t>* next_cycle_;
  std::function<void(const std::string&)> log_;
  replay::CollClassSet classes_;
  // Collective classes of communicators spanning nodes, by cross_comm_key (at most
  // kMaxSpanningComms communicators, kMaxSpanningClasses classes each).
  static constexpr size_t kMaxSpanningComms = 1024, kMaxSpanningClasses = 16, kSpanningOpsPerFunc = 64;
  std::map<std::string, replay::CollClassSet> spanning_;
  std::vector<std::vector<int>> groups_;  // communicator memberships (global ranks) seen
  size_t pair_cursor_ = 0;
  size_t coll_cursor_ = 0;                    // the next collective class of a periodic cycle
  size_t plan_cursor_ = 0;                    // the next check cycle of the GEMM plan
  std::shared_ptr<replay::ReplayPlan> plan_;  // the GEMM plan of the captured shapes, made at plan_key_
  uint64_t plan_key_ = 0;  // local ranks, their shape counts and the peer groups the plan was made for
  int64_t first_seen_ns_ = 0;
  int64_t next_periodic_ns_ = 0;
  int64_t idle_period_ns_ = 0;     // backoff while cycles run nothing
  std::set<std::string> handled_;  // findings a trigger already ran for
  bool gemm_unavailable_ = false;  // every GEMM was skipped: no periodic GEMMs
};

}  // namespace scout::obs
