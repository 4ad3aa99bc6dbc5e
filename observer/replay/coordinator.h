// Replay cycles for one observer (docs/replay.md): the observer side of replay, hooked into each
// pass (observer/pipeline/observer.h, the after-detect step) the way CrossNode
// (observer/cluster/cross_node.h) and the Certifier (observer/ckpt/certifier.h) are. Split by job:
//   triggers.h  when a cycle runs and what it runs (findings, requests, the periodic budget);
//   worker.h    the thread that runs it: the scout-replay channel, the cross-node key store;
//   reporter.h  its verdicts as findings with typed evidence (observer/model/evidence.h).
// One cycle at a time (cycle.h, CycleState); a pass never waits for replay.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "observer/detect/judged_op.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"
#include "observer/model/sink.h"
#include "observer/replay/cycle.h"
#include "observer/replay/options.h"
#include "observer/replay/reporter.h"
#include "observer/replay/triggers.h"
#include "observer/replay/worker.h"

namespace scout::obs {

class ReplayCoordinator {
 public:
  // `node_rank`: this observer's node (its GPUs are the procs with that node_rank); `log`: one
  // line per cycle and per notable event (may be empty).
  ReplayCoordinator(const ReplayOptions& opt, const std::string& job, const std::string& shm_dir, int node_rank,
                    std::function<void(const std::string&)> log);

  // The pass hook: observe() every judged operation, step(), and the finished cycles' records
  // into `sink` (the pass's batch).
  void on_pass(const Model& m, const std::vector<JudgedOp>& judged, FindingBoard& board, Sink& sink, int64_t now_ns);

  // A judged operation of the job (collective classes and communicators for the recipes).
  void observe(const Model& m, const JudgedOp& j);
  // Once per pass, after the detectors: applies a finished cycle to `board`, marks straggler
  // findings with their cause, and starts the next cycle when one is due. Never blocks on replay.
  void step(const Model& m, FindingBoard& board, int64_t now_ns);
  // Cycles finished since the last call, for the Sink.
  std::vector<ReplayCycleRecord> take_records();

  // For tests: the scout-replay process now running (0 none), cycles finished, the slot's state,
  // whether a cycle is in flight.
  int child_pid() const { return worker_.child_pid(); }
  uint64_t cycles_done() const { return worker_.cycles_done(); }
  CycleState state() const { return worker_.state(); }
  bool busy() const { return state() != CycleState::kIdle; }

 private:
  void apply(const Model& m, FindingBoard& board, const CycleResult& d, int64_t now_ns);

  std::function<void(const std::string&)> log_;
  std::atomic<uint64_t> next_cycle_{1};
  ReplayReporter reporter_;
  ReplayTriggers triggers_;
  std::vector<ReplayCycleRecord> records_;
  std::optional<CycleJob> held_;        // made while the worker took the slot: submitted next pass
  int64_t members_ns_ = INT64_MIN / 2;  // pass time the node's members were last computed
  ReplayWorker worker_;                 // last: its thread stops first
};

}  // namespace scout::obs
