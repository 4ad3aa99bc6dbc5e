// One observer's loop body: a pass reads what the plugin wrote, judges it and writes to the
// Sink. The binary (observer/bin/scout-observer.cc) calls pass() every interval; tests call it
// with synthetic clocks.
//
// A pass, in order:
//   1. ingest        discover segments of the job on this node, read every ring into the Model;
//   2. cross-node    optional step (set_cross_node_step): the observer network
//                    (observer/cluster/cross_node.h) captures what it compares across nodes, hands
//                    this node's findings to the network and applies what came back: the
//                    leader's job-wide findings, cross-node lateness for the straggler windows;
//   3. judge         metadata and fingerprint consensus of finished operations (desync, sdc),
//                    summaries for the store; judged operations leave the Model;
//   4. windows       NaN origin, equivalent communicators, straggler and slow-link windows;
//   5. hangs         wait-for analysis (hang, deadlock, crash), then straggler/slow-link verdicts
//                    and the network links of the link tables (netlink.h);
//   5b. after-detect optional step (set_after_detect_step): replay cycles
//                    (observer/replay/coordinator.h) see the judged operations and the findings,
//                    report their verdicts and put their records into this pass's batch;
//   6. write         job, ranks, communicators, operations and changed findings to the Sink;
//   7. reclaim       unlink segments whose owner is gone once everything in them is judged;
//   8. after-pass    optional step (set_after_pass_step): checkpoint certification.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "observer/detect/equiv.h"
#include "observer/detect/hang.h"
#include "observer/detect/nan_origin.h"
#include "observer/detect/netlink.h"
#include "observer/detect/op_judge.h"
#include "observer/detect/slowlink.h"
#include "observer/detect/straggler.h"
#include "observer/ingest/ingestor.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"
#include "observer/model/sink.h"
#include "observer/pipeline/options.h"

namespace scout::obs {

class Observer {
 public:
  // `sink` must outlive the observer.
  Observer(ObserverOptions opt, Sink* sink);

  // One pass at observer time `now_ns` (CLOCK_REALTIME ns in production).
  void pass(int64_t now_ns);

  // Step 2 of the pass, after local ingestion: what it may read and update.
  struct CrossNodeIo {
    Model& model;
    FindingBoard& board;
    StragglerDetector& straggler;
    int64_t now_ns;
    bool hung;      // the previous pass left a communicator of this node hung (hang timeout passed)
    NetState& net;  // the network's state, written to the store with the job header
  };
  using CrossNodeStep = std::function<void(CrossNodeIo& io)>;
  void set_cross_node_step(CrossNodeStep step) { cross_node_ = std::move(step); }

  // Step 5b, after the detectors and before the write: this pass's judged operations (displaced
  // ones included, flagged), the findings, and the Sink (what the step puts there is stored with
  // this pass's batch). The step must not block.
  struct AfterDetectIo {
    const Model& model;
    const std::vector<JudgedOp>& judged;
    FindingBoard& board;
    Sink& sink;
    int64_t now_ns;
  };
  using AfterDetectStep = std::function<void(AfterDetectIo& io)>;
  void set_after_detect_step(AfterDetectStep step) { after_detect_ = std::move(step); }

  // Step 8, after the write (findings carry their store ids): what this pass judged, for
  // consumers above the pipeline such as checkpoint certification (observer/ckpt/certifier.h).
  using AfterPassStep =
      std::function<void(const Model& model, const JudgeOutput& out, const FindingBoard& board, int64_t now_ns)>;
  void set_after_pass_step(AfterPassStep step) { after_pass_ = std::move(step); }

  // Held for the duration of every pass: another thread (the network agent, through the
  // NodeView of observer/cluster/node_view.h) reads the Model under it.
  std::mutex& mutex() { return mu_; }

  const Model& model() const { return model_; }
  const FindingBoard& findings() const { return board_; }
  IngestStats ingest_stats() const { return ingest_.stats(); }
  const JudgeStats& judge_stats() const { return judge_.stats(); }
  uint64_t passes() const { return passes_; }
  // One line of counters (segments, records read/lost/rejected, ops judged, findings).
  std::string stats_line() const;

 private:
  void write(int64_t now_ns, JudgeOutput& out);
  void reclaim(int64_t now_ns);
  void write_gemm();
  // Opens the progress sources of the collectives the hang detector found stuck: a trace request
  // to each member's plugin (docs/observer.md, "Stuck collectives"), failures logged once each.
  void request_traces(int64_t now_ns);
  std::set<std::string> trace_errors_;  // GEMM capture rows of processes whose table changed (Sink::put_gemm)

  ObserverOptions opt_;
  Sink* sink_;
  Model model_;
  FindingBoard board_;
  Ingestor ingest_;
  OpJudge judge_;
  NanOrigin nan_;
  EquivChecker equiv_;
  StragglerDetector straggler_;
  SlowLinkDetector slowlink_;
  NetLinkDetector netlink_;
  HangDetector hang_;
  CrossNodeStep cross_node_;
  AfterDetectStep after_detect_;
  AfterPassStep after_pass_;
  int64_t started_ns_ = 0;
  uint64_t passes_ = 0;
  bool hung_ = false;         // some communicator's state was "hung" at the last write
  NetState net_;              // set by the cross-node step (multi-node jobs)
  std::string warned_;        // ingestion warning last logged
  uint64_t lost_logged_ = 0;  // records_lost at the last write (a rise is logged)
  std::mutex mu_;
  std::map<int, uint64_t> gemm_written_;            // proc id -> change stamp last written
  std::vector<ReplayCycleRecord> unstored_replay_;  // replay cycles of batches the sink could not store
  // What the Sink holds from the last stored batches (write() puts only what differs).
  std::vector<std::optional<RankInfo>> ranks_written_;  // by proc id
  struct CommRow {
    uint64_t members_version = 0;
    std::string name;
    int nnodes = 0;
    uint64_t ops_complete = 0;
    uint64_t last_seq[shm::kNumNumberedFuncs] = {};
    int64_t last_progress_ns = 0;
    std::string state;
  };
  std::map<CommKey, CommRow> comms_written_;
};

}  // namespace scout::obs
