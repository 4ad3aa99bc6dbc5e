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

// The job id a process uses when none is given on the command line: `configured`
// (SCOUT_JOB_ID) if not empty, else TORCHELASTIC_RUN_ID, else SLURM_JOB_ID, else "default"
// (rule of the SCOUT_JOB_ID entry in include/scout/config_vars.def). `getenv_fn` returns an
// environment value or nullptr (std::getenv when empty).
std::string resolve_job_id(std::string_view configured,
                           const std::function<const char*(const char*)>& getenv_fn = {});

}  // namespace scout::store
