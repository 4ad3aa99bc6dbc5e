// Who this process is in the job: job id, global/local rank, world size, host, GPU.
// Read from the launcher's environment at the first communicator init
// (docs/record-format.md, SegmentHeader). Pure functions of an environment lookup, so tests pass their own.
#pragma once

#include <string>

#include "scout/config.h"

namespace scout::core {

struct Identity {
  std::string job;       // SCOUT_JOB_ID, else TORCHELASTIC_RUN_ID, else SLURM_JOB_ID, else "default"
  std::string host;      // SCOUT_HOST, else gethostname(), else "unknown-host"
  std::string gpu;       // SCOUT_GPU, else "" (the fingerprint engine may set the UUID later)
  int global_rank = -1;  // first set of RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK, PMIX_RANK
  int local_rank = -1;   // first set of LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID
  int world_size = -1;   // first set of WORLD_SIZE, OMPI_COMM_WORLD_SIZE, SLURM_NTASKS
};

// Builds the identity from the parsed SCOUT_* configuration and the launcher variables read
// through `env` (getenv when empty). A launcher variable that is set but not a non-negative
// integer is reported once through `warn` and skipped (the next one in the list is tried).
Identity identity_from_env(const config::Config& cfg, const config::EnvLookup& env = {},
                           const config::WarnSink& warn = {});

}  // namespace scout::core
