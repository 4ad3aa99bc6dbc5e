// scout-sim's ground truth next to what the observer found, for the end-to-end tests: both
// reduced to (kind, ranks named) so they compare as multisets. Ground-truth lines are those of
// `scout-sim --truth` (docs/scout-sim.md, "Ground truth").
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// Operations per communicator of a healthy `scout-sim --ranks 8 --tp 2 --pp 2 --steps N` run
// (docs/scout-sim.md, "Per-step operations"): per step 4 TP collectives (AllReduce, AllGather, ReduceScatter,
// AllReduce) on tp0..tp3, 4 gradient AllReduces on dp0..dp3, a Send each way in each pipeline
// pair pp0..pp3, and a world Broadcast every `bcast_every` steps (step % K == 0).
std::map<std::string, uint64_t> sim_ops_tp2_pp2(int steps, int bcast_every = 10);

// The ground-truth file of a scout-sim run: one Named per line (global_rank, and peer when the
// line has one). A missing file reads as empty; a malformed line throws nlohmann's parse error.
std::multiset<Named> read_truth(const std::string& path);

// The ground-truth file's lines as JSON values, in order (empty lines skipped). A missing file
// reads as empty; a malformed line throws nlohmann's parse error.
std::vector<nlohmann::json> truth_lines(const std::string& path);

}  // namespace scout::testing
