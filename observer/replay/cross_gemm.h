// GEMM votes across nodes (docs/replay.md, "Across nodes"): the leader's plan carries a GEMM
// recipe and its voters, running ranks of whole nodes; every node runs the recipe on its voters
// and publishes the fingerprints with its samples (x/<k>/samples/<node>, each with its GPU's
// vote class in the node's readiness answers), and every node with an end in the plan judges the
// vote per class (model, SM count, library versions; replay/contract.h) over every node's
// samples, strict majority (replay/judge.h). A node with one or two GPUs of a class, whose own
// vote has no strict majority, is so out-voted by the job's other GPUs of that class.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "observer/replay/cross_store.h"
#include "replay/recipe.h"

namespace scout::obs {

// Voters of one plan's GEMM vote at most (whole nodes; at least one node): the vote's cost in
// store traffic and samples stays bounded as the job grows, and the nodes take turns.
constexpr int kMaxCrossGemmVoters = 64;

// The shapes cross-node plans vote on, one per plan: SCOUT_REPLAY_GEMMS (`spec`) or, when it is
// empty or does not parse, the default set (replay::default_gemms).
std::vector<replay::GemmShape> cross_gemm_shapes(const std::string& spec);

// Adds to `plan` the next shape of `shapes` (round-robin from *shape_cursor) and its voters:
// every running rank of whole nodes of `all`, taken round-robin from *node_cursor until
// kMaxCrossGemmVoters ranks (at least one node), into plan->members when not there yet. Adds
// nothing when `shapes` is empty or when the voters would be on one node or fewer than 3 (no
// vote across nodes).
void add_cross_gemms(const std::vector<NodeMembers>& all, const std::vector<replay::GemmShape>& shapes,
                     size_t* shape_cursor, size_t* node_cursor, CrossPlan* plan);

}  // namespace scout::obs
