// scout-sim's ground truth next to what the observer found, for the end-to-end tests: both
// reduced to (kind, ranks named) so they compare as multisets. Ground-truth lines are those of
// `scout-sim --truth` (docs/scout-sim.md, "Ground truth").
#pragma once

#include <compare>
#include <set>
#include <string>
#include <vector>

#include "observer/model/finding.h"

namespace scout::testing {

// What a finding or a ground-truth line says: its kind ("sdc", "hang", ...) and the global ranks
// it names (suspects, plus the peer of a slow link).
struct Named {
  std::string kind;
  std::set<int> ranks;
  auto operator<=>(const Named&) const = default;
};

// " sdc{5,} hang{7,}" for failure messages; " (none)" when empty.
std::string show(const std::multiset<Named>& v);

// What the findings name: per finding its kind and its suspects' and peer's global ranks.
std::multiset<Named> named(const std::vector<obs::Finding>& findings);

// The ground-truth file of a scout-sim run: one Named per line (global_rank, and peer when the
// line has one). A missing file reads as empty; a malformed line throws nlohmann's parse error.
std::multiset<Named> read_truth(const std::string& path);

}  // namespace scout::testing
