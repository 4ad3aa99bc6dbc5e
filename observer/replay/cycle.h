// One replay cycle as the observer sees it (docs/replay.md, "Cycles"): what starts it (Trigger),
// what it runs (CycleJob), where it is in its life (CycleState) and what came back (CycleResult).
// Shared by the triggers (triggers.h), the worker (worker.h) and the reporter (reporter.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "observer/model/replay_cycle.h"
#include "observer/replay/cross_store.h"
#include "replay/judge.h"
#include "replay/recipe.h"

namespace scout::obs {

// Why a cycle runs (docs/replay.md, "Triggers and budget"); stored as its name in
// ReplayCycleRecord::trigger.
enum class Trigger { kPeriodic, kStraggler, kSdc, kSlowLink, kDemand, kCross, kStuck };
// "periodic", "straggler", "sdc", "slowlink", "demand", "cross", "stuck".
const char* to_string(Trigger t);

// The life of the observer's one replay slot: at most one cycle exists at a time, local or
// across nodes. The pass moves kIdle -> kQueued (a local trigger fired) and kJudged -> kIdle (it
// applied the verdict); the worker moves kQueued or kIdle (a cross-node plan) -> kPreparing ->
// kRunning -> kJudged. A cycle that ends early (scout-replay lost, nothing admitted) still goes
// through kJudged, with its record saying why.
enum class CycleState {
  kIdle,       // no cycle: the next pass may start one
  kQueued,     // a local cycle handed to the worker, not started yet
  kPreparing,  // the readiness contract is out to scout-replay (and, across nodes, the peers)
  kRunning,    // admitted recipes are running
  kJudged,     // verdict and record ready; the next pass applies them
};
// "idle", "queued", "preparing", "running", "judged".
const char* to_string(CycleState s);

// What one cycle runs.
struct CycleJob {
  uint64_t cycle = 0;
  Trigger trigger = Trigger::kPeriodic;
  std::string request;  // demand: the request's id
  std::string finding;  // stuck: the dedup key of the stuck stall / hang it runs for
  // Each recipe call's own deadline (docs/replay.md, "Deadlines"); 0: the cycle's only.
  int64_t recipe_deadline_ns = 0;
  std::vector<replay::Participant> participants;
  std::vector<replay::Recipe> recipes;
  int64_t started_ns = 0;  // pass time it was made
};

// What one cycle gave back.
struct CycleResult {
  CycleJob job;
  ReplayCycleRecord record;
  replay::CycleVerdict verdict;
  bool have_verdict = false;
  int64_t gpu_cost_ns = 0;            // the most GPU time the cycle took from one GPU
  bool any_ok = false;                // some recipe ran somewhere
  bool report = true;                 // its verdicts become findings here (cross: the leader only)
  std::map<int, CrossMember> remote;  // cross: the ranks of other nodes it measured
};

}  // namespace scout::obs
