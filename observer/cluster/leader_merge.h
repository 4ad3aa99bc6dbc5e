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
//
// Cost per round: proportional to the findings that came and to what changed on the board since
// the last round (an index of the open attributed hangs by suspects, kept up to date from
// FindingBoard::changed_since), not to the board's size.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "observer/model/finding.h"
#include "observer/model/finding_board.h"

namespace scout::obs {

class LeaderMerge {
 public:
  // Applies one round's findings to `board` (report, then close when not open). `board` must be
  // the same board on every call (the index follows its changes).
  void apply(FindingBoard& board, std::vector<Finding> forwarded, std::vector<Finding> decided);

 private:
  void put(FindingBoard& board, Finding f);
  // The key of the first reported open attributed hang on `board` naming suspects `sig`, if any.
  const std::string* same_hang(const FindingBoard& board, const std::string& sig);
  void sync(const FindingBoard& board);  // brings the index up to the board's stamp

  std::set<std::string> decided_open_;  // keys (after unification) the Judge holds open
  // Open attributed hangs on the board: signature -> (first-report order -> key), and the
  // signature each key is indexed under.
  std::map<std::string, std::map<int64_t, std::string>> by_sig_;
  std::unordered_map<std::string, std::string> sig_of_;
  uint64_t synced_ = 0;  // board stamp the index reflects
};

// The suspects of an attributed hang or stall as "host:pid,host:pid" (sorted); "" for any other finding.
std::string hang_signature(const Finding& f);

}  // namespace scout::obs
