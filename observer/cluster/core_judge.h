// The leader's Judge (observer/net/drill.h) made of the node-local core's own detectors, so each
// rule has one implementation (docs/observer-network.md, "Drill-down"):
//   judge_digest  the records the nodes sent for a disagreeing stream become one Op per
//                 seqNumber in a scratch Model; metadata agreement (check_metadata,
//                 desync_finding) and receive-fingerprint agreement (check_recv_fingerprints,
//                 sdc_finding) decide exactly as for a node-local communicator, with the same
//                 findings, evidence and dedup keys;
//   judge_waits   the job's wait summary (every node's snapshot, merged on the way) updates one
//                 Model of the whole job (JobWaits: only communicators whose summary changed are
//                 rebuilt) and a HangDetector kept across drill-downs runs its pass on it: roots
//                 named with the absent / stuck / mismatch classification and the wait-for chain
//                 across nodes, deadlocks, crashes; it closes what no longer holds. A repeated
//                 drill-down of a lasting hang whose waits did not change (waits_signature: the
//                 same groups, members, records and stalled communicators, no dead process)
//                 gives the same graph: the open findings are refreshed (last seen, and how long
//                 the stall has lasted) without running the detector, so the leader's cost
//                 follows what changed, not the job;
//                 Each communicator is judged by the stall clock of the node with the largest
//                 threshold for it (the nodes' snapshots carry their rules: the leader saw none of
//                 its gaps); waits_due_ns says when a communicator ranks wait in passes that
//                 threshold, so the leader asks for the snapshots again exactly then, and
//                 hang_due_ns when one passes the hang timeout (where a stall becomes the hang);
//   all_clear     no observer reports a stall: the detector's open findings close, and its stall
//                 episodes end (a pause that ended is remembered even when its repeat was not
//                 reported).
#pragma once

#include <cstdint>
#include <vector>

#include "observer/cluster/job_waits.h"
#include "observer/detect/hang.h"
#include "observer/model/finding_board.h"
#include "observer/net/drill.h"

namespace scout::obs {

class CoreJudge : public net::Judge {
 public:
  // `hang`: the leader's hang settings (its --hang-timeout; defer_cross_node is forced on, since
  // a communicator some node did not report on cannot be followed).
  explicit CoreJudge(HangConfig hang);

  std::vector<Finding> judge_digest(const net::DigestDrill& d, const net::Identities& ids, int64_t now_ns) override;
  std::vector<Finding> judge_waits(const net::WaitSummary& job, int64_t now_ns) override;
  std::vector<Finding> all_clear(int64_t now_ns) override;
  int64_t waits_due_ns() const override { return due_ns_; }
  int64_t hang_due_ns() const override { return hang_due_ns_; }

 private:
  std::vector<Finding> changed();  // findings the hang detector changed since the last call

  int64_t timeout_ns_;
  uint64_t signature_ = 0;  // waits_signature of the last waits analysed (0: none)
  HangDetector hang_;
  JobWaits job_;  // the job's waits as of the last analysed drill-down (cleared at all_clear)
  FindingBoard board_;
  bool open_ = false;        // some finding of hang_ is open
  bool judged_ = false;      // hang_ ran on waits since the last all_clear (stall episodes may be pending)
  int64_t due_ns_ = 0;       // HangDetector::stall_pending after the last pass
  int64_t hang_due_ns_ = 0;  // HangDetector::hang_pending after the last pass
};

}  // namespace scout::obs
