// Which operation a rank that stopped would have called next (docs/observer.md, "Hangs": the
// operation a hang names).
//
// A training step repeats the same calls in the same order. From a process's latest calls
// (Proc::calls, in API call order) the prediction finds the earlier point of its history that
// matches the longest run of calls ending at its latest one (at most kMaxContext calls; the most
// recent of equally long runs), and reads what the process called after that point: the first
// of the candidate operations to appear there is the one the process stopped before. Calls match
// by place, not number: the same communicator and function, and for point-to-point the same pair.
#pragma once

#include <cstddef>
#include <vector>

#include "observer/model/model.h"

namespace scout::obs {

inline constexpr size_t kMaxContext = 64;  // calls compared backwards from the latest one

class NextCalls {
 public:
  // The continuation predicted from `p.calls` (empty when its history has no earlier match).
  explicit NextCalls(const Proc& p);
  // 1 when operation `id` of communicator `comm` is at the place of the call predicted to come
  // next, 2 for the one after, ...; 0 when the prediction does not reach it (unknown).
  size_t position(const CommKey& comm, const OpId& id) const;

 private:
  std::vector<const IssuedCall*> next_;
};

// True when call `c` is at the place of operation `id` of `comm`: same communicator, class and
// function (point-to-point: the same sender and receiver).
bool same_place(const IssuedCall& c, const CommKey& comm, const OpId& id);

}  // namespace scout::obs
