// Small Model lookups the replay layer shares (by global rank, by communicator key).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "observer/model/model.h"

namespace scout::obs {

// The Model's process id of `global_rank`, -1 when no process of this node has it.
int proc_of_rank(const Model& m, int global_rank);
// Global ranks of a communicator's members, ascending; empty if one of them is unknown.
std::vector<int> members_of(const Model& m, const Comm& c);
// The communicator (hash, nranks), null when the Model has none.
const Comm* comm_by_hash(const Model& m, uint64_t hash, int nranks);
// "12.3 ms": a duration in log lines and summaries.
std::string ms_text(int64_t ns);

}  // namespace scout::obs
