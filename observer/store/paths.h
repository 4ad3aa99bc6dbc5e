// Where a job's files live on a node: the ONE rule shared by scout-observer (which writes the
// store) and the scout CLI (which finds it from --job). Pure functions, no I/O.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace scout::store {

// Default store of node `node_rank` of job `job`:
//   <state_dir>/<job>/node-<node_rank>.db
// `state_dir` is SCOUT_STATE_DIR (default /tmp/scout); `job` is reduced to [A-Za-z0-9_-] the
// same way segment names reduce it (shm::sanitize_component), so a job id can never escape
// state_dir. Returns "" with *error set when job is empty, state_dir is empty or node_rank < 0.
std::string default_store_path(std::string_view state_dir, std::string_view job, int node_rank,
                               std::string* error);


}  // namespace scout::store
