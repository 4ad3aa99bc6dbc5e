// A finished replay cycle's verdicts as findings (docs/replay.md, "Findings"; docs/findings.md),
// with the typed evidence of observer/model/evidence.h:
//   sdc        one finding per rank a check named (ReplaySdcEvidence, key sdc:replay:<host>:<pid>);
//   slowlink   class link per slow pair the live detectors do not already name
//              (ReplaySlowLinkEvidence); a pair measured normal later closes it;
//   straggler  GEMM timing verdicts become causes ("gpu", "host") written into open straggler
//              findings (StragglerEvidence::cause, ::replay), "unknown" until one is known;
//   stuck      a cycle run for a stuck collective (trigger "stuck"): the GPU or link its timeouts
//              name (replay/judge.h, TimeoutVerdict) become the suspects, verdict and `replay`
//              evidence of that stall or hang (EvStuckReplay; trace source "replay"), written
//              again at every pass while it stays open (the hang detector rewrites it each pass).
// Runs on the pass thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "observer/model/evidence.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"
#include "observer/replay/cycle.h"
#include "replay/outlier.h"

namespace scout::obs {

class ReplayReporter {
 public:
  explicit ReplayReporter(replay::OutlierRule rule) : rule_(rule) {}

  // Reports the verdicts of `d` (a cycle with have_verdict) to `board` at pass time `now_ns`.
  // `comm_ranks`: comm rank -> global rank of the communicators spanning nodes ("<hash>:<nranks>",
  // cross_store.h), so a live finding naming a far end by its comm rank is matched.
  void apply(const Model& m, FindingBoard& board, const CycleResult& d,
             const std::map<std::string, std::map<int, int>>& comm_ranks, int64_t now_ns);
  // Writes each open straggler finding's cause (and the cycle that decided it) into its evidence.
  void mark_stragglers(FindingBoard& board) const;
  // Writes each open stuck finding's replay result (suspects, verdict, evidence.replay, summary)
  // into it when the hang detector's latest report left it out.
  void mark_stuck(FindingBoard& board) const;
  // Whether a cycle that started at or after `since_ns` decided the cause of `global_rank`.
  bool cause_known(int global_rank, int64_t since_ns) const;

 private:
  struct Cause {
    std::string cause;  // "gpu", "host"
    int64_t at_ns = 0;  // when the cycle started
    EvReplayCause evidence;
  };
  void report_sdc(const Model& m, FindingBoard& board, const CycleResult& d, int64_t now_ns);
  void report_slow_pairs(const Model& m, FindingBoard& board, const CycleResult& d,
                         const std::map<std::string, std::map<int, int>>& comm_ranks, int64_t now_ns);
  void note_causes(const CycleResult& d);
  void note_stuck(const Model& m, const CycleResult& d, int64_t now_ns);
  struct StuckResult {
    EvStuckReplay replay;
    std::vector<Suspect> suspects;  // empty: replay named nobody
  };
  std::map<std::string, StuckResult> stuck_;  // stuck finding's dedup key -> what its cycle found

  replay::OutlierRule rule_;
  std::map<std::string, std::pair<int, int>> replay_links_;  // open slowlink findings replay made: their pair
  std::map<int, Cause> causes_;                              // global rank -> latest timing verdict
};

// A suspect / its words for a global rank of this node or, in a cross cycle, of another node.
Suspect replay_suspect(const Model& m, int global_rank, const CycleResult& d);
std::string replay_who(const Model& m, int global_rank, const CycleResult& d);

}  // namespace scout::obs
