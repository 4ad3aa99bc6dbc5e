// How the leader puts what the network brings into its finding board, so that its store holds one
// finding per failure for the whole job (docs/observer-network.md, "Findings on the leader").
//
// Two sources: findings other nodes decided locally (forwarded), and what the leader's Judge
// decided from drill-downs (decided). They can describe the same failure: a rank that stops on
// node 3 is named by node 3's own hang detector (through the communicator its local peers wait
// in) and by the job-wide analysis (through the earliest operation anyone waits for it in, with
// the whole wait-for chain), under different dedup keys. Rules:
//   - an attributed hang finding takes the dedup key of the open attributed hang finding on the
//     board that names the same suspects (same host and pid), if there is one: one finding per
//     stopped rank set, updated by whichever source saw it last;
//   - a decided finding wins: while it is open, forwarded findings with its key are dropped (the
//     job-wide view is the more complete one);
//   - in one batch of decided findings, a closed hang whose suspects also appear in an open one
//     is dropped (the job-wide detector moved the same hang to another primary operation).
// Every other finding is stored as it comes (its dedup key is already failure-unique:
// crash:<host>:<pid>, sdc:recv:<comm>:<op>, straggler:<host>:<pid>:..., ...).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "observer/model/finding_board.h"

namespace scout::obs {

class LeaderMerge {
 public:
  // Applies one round's findings to `board` (report, then close when not open).
  void apply(FindingBoard& board, std::vector<Finding> forwarded, std::vector<Finding> decided);

 private:
  void put(FindingBoard& board, Finding f);
  std::set<std::string> decided_open_;  // keys (after unification) the Judge holds open
};

// The suspects of an attributed hang as "host:pid,host:pid" (sorted); "" for any other finding.
std::string hang_signature(const Finding& f);

}  // namespace scout::obs
