// Process identity from the launcher's environment (identity.h).
#include "plugin/core/identity.h"

#include <unistd.h>

#include <cstdlib>

namespace scout::core {
namespace {

// First variable of `names` that is set to a valid non-negative int; -1 if none.
int first_int(const char* const* names, int n, const config::EnvLookup& env, const config::WarnSink& warn) {
  for (int i = 0; i < n; ++i) {
    const char* v = env(names[i]);
    if (v == nullptr || v[0] == '\0') continue;
    int64_t out = 0;
    std::string err;
    if (config::parse_int(v, 0, 0x7fffffff, &out, &err)) return int(out);
    if (warn) warn(std::string(names[i]) + "=\"" + v + "\" ignored: " + err);
  }
  return -1;
}

}  // namespace

Identity identity_from_env(const config::Config& cfg, const config::EnvLookup& env_in, const config::WarnSink& warn) {
  config::EnvLookup env =
      env_in ? env_in : config::EnvLookup([](const char* n) -> const char* { return std::getenv(n); });
  Identity id;
  id.job = config::resolve_job_id(cfg.job_id, env);
  id.host = config::resolve_host(cfg.host);
  id.gpu = cfg.gpu;
  static const char* const kRank[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "PMIX_RANK"};
  static const char* const kLocal[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"};
  static const char* const kWorld[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"};
  id.global_rank = first_int(kRank, 5, env, warn);
  id.local_rank = first_int(kLocal, 3, env, warn);
  id.world_size = first_int(kWorld, 3, env, warn);
  return id;
}

}  // namespace scout::core
