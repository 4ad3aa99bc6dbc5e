// Decides each live operation once its evidence is in, then drops it from the Model:
//  - first, the sequence check of every communicator (sequence_check.h): what each rank called at
//    each position; while a sequence desync is open, the metadata and fingerprint votes of the
//    operations it displaced are not reported;
//  - metadata agreement as soon as every participant's record is present (desync findings; an
//    inconclusive one is voted again with the equivalent communicators, class_vote.h);
//  - when every record is final (complete, fingerprints written), or `settle_timeout` after the
//    op was first seen with every present record complete: receive-fingerprint agreement (sdc
//    findings), the per-collective summary and per-rank timings for the Sink, and a JudgedOp for
//    the window-based detectors.
// Operations of communicators whose members are not all known on this node are not judged here
// (a cross-node layer completes them); they are dropped after the timeout and counted.
#pragma once

#include <cstdint>
#include <vector>

#include "observer/detect/class_vote.h"
#include "observer/detect/judged_op.h"
#include "observer/detect/sequence_check.h"
#include "observer/model/finding_board.h"
#include "observer/model/job.h"
#include "observer/model/model.h"

namespace scout::obs {

struct JudgeConfig {
  int64_t settle_timeout_ns = 10'000'000'000;  // SCOUT_OBSERVER_FP_TIMEOUT_S
};

struct JudgeOutput {
  std::vector<OpSummary> summaries;  // collectives only (the store keys p2p pairs poorly)
  std::vector<OpRankTiming> timings;
  std::vector<JudgedOp> judged;  // collectives and p2p pairs, in judgement order
};

struct JudgeStats {
  uint64_t judged = 0;
  uint64_t partial = 0;          // judged with missing records or fingerprints
  uint64_t dropped_unknown = 0;  // dropped unjudged: communicator members not all known
};

class OpJudge {
 public:
  explicit OpJudge(JudgeConfig cfg) : cfg_(cfg) {}
  // Judges every ready operation of `m` at observer time `now_ns`; findings go to `board`,
  // summaries, timings and judged ops are appended to `out`.
  void pass(Model& m, int64_t now_ns, FindingBoard& board, JudgeOutput* out);
  const JudgeStats& stats() const { return stats_; }
  // The sequence check run at the start of each pass (the hang detector folds into it).
  SequenceCheck& sequence() { return seq_; }

 private:
  void finish(Model& m, Comm& c, Op& op, int64_t now_ns, FindingBoard& board, JudgeOutput* out);
  // A complete send/receive pair: counted in the communicator and summed into its pair.
  static void add_p2p(const Model& m, Comm& c, const Op& op, const JudgedOp& j);
  JudgeConfig cfg_;
  JudgeStats stats_;
  ClassVote classes_;
  SequenceCheck seq_;
};

}  // namespace scout::obs
