// NaN/Inf origin (docs/observer.md#consensus): once a non-finite value enters a collective it
// spreads to every rank, so what matters is the FIRST rank whose send buffer carried one. The
// tracker watches the send-buffer NaN/Inf counts of every judged operation (only fingerprinted
// sends have them) and names the rank(s) of the earliest such operation: ordered by the time the
// carriers issued it (CPU clock of the API call, else of the enqueue), then by seqNumber.
//
// One finding per episode: it opens at the first carrier, is updated if an earlier carrier is
// judged later (ops are judged as their evidence completes, not strictly in time order), and
// closes after kCleanOpsToClose consecutive fingerprinted operations without non-finite sends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "observer/detect/judged_op.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"

namespace scout::obs {

class NanOrigin {
 public:
  static constexpr int kCleanOpsToClose = 100;
  // Looks at one judged operation.
  void observe(const Model& m, const JudgedOp& op, int64_t now_ns, FindingBoard& board);

 private:
  struct Origin {
    int64_t time_ns = 0;
    uint64_t seq = 0;
    CommKey comm;
    OpId id;
    std::vector<JudgedOp::Part> carriers;  // parts whose send buffer held NaN/Inf
  };
  void report(const Model& m, int64_t now_ns, FindingBoard& board);

  bool open_ = false;
  std::string key_;
  Origin origin_;
  uint64_t ops_with_nonfinite_ = 0;
  int clean_run_ = 0;
  std::vector<int> ranks_seen_;  // global ranks that carried non-finite sends in this episode
};

}  // namespace scout::obs
