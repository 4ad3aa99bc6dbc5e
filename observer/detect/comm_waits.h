// What the ranks of one communicator are waiting for (docs/observer.md#hangs), from the per-rank
// in-flight operations in the Model. Pure function of the Model; no thresholds.
//
// A rank waits in the communicator when one of its operations runs on its GPU (state Running)
// and cannot finish alone. It waits FOR each other participant of that operation that has not
// arrived on the GPU:
//   "absent"       the participant never enqueued the operation (no record);
//   "not-started"  it enqueued it but its GPU has not started it (its stream is busy elsewhere);
//   "dead"         its process died before completing it.
// Classification of the communicator when some rank waits:
//   absent    some waiting rank waits for a participant (edges above);
//   stuck     every participant of the waited operations started it and none can finish;
//   mismatch  two waiting ranks are in different collectives and neither has the other's:
//             the ranks disagree on what operation N is (desynchronization). The ranks vote
//             with the collective they are in; the majority waits for the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/vote.h"
#include "observer/model/model.h"

namespace scout::obs {

struct WaitEdge {
  int from = -1;    // comm rank that waits
  int to = -1;      // comm rank it waits for
  OpId op;          // the operation `from` is in
  std::string why;  // "absent", "not-started", "mismatch"
};

struct RankWaitState {
  std::string state;  // "running" (in `op` on the GPU), "enqueued" (op not started), "idle"
  OpId op;            // oldest in-flight operation (valid unless idle)
};

struct CommWaits {
  std::string cls;           // "", "absent", "stuck", "mismatch"
  OpId op;                   // the operation most waiting ranks are in (valid unless cls "")
  std::vector<int> waiting;  // comm ranks waiting, ascending
  std::vector<WaitEdge> edges;
  std::vector<RankWaitState> ranks;  // index = comm rank
  VoteResult<OpId> frontier_vote;    // mismatch: ranks' current collective (idle ranks vote kIdleOp)
  bool meta_disagrees = false;       // stuck op whose metadata vote disagreed (a desync hang)
};

// The ballot of a rank in no collective (mismatch vote).
constexpr OpId kIdleOp{OpClass::kColl, 255, UINT64_MAX, -1, -1};

// Analyses communicator `c` (its members need not all be known). With `m`, a participant whose
// process died without completing the operation is waited for as well (why "dead"), by ranks
// that are alive or were seen gone later than it.
CommWaits analyze_waits(const Comm& c, const Model* m = nullptr);

// True when comm rank `rank` has issued operation `id` of `c` (a record is present, or the op is
// no longer live and the rank's issued counter is past it).
bool has_issued(const Comm& c, const OpId& id, int rank);

}  // namespace scout::obs
