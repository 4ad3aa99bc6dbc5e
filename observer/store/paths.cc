#include "observer/store/paths.h"

#include <cstdlib>

#include "plugin/shm/segment.h"

namespace scout::store {

std::string default_store_path(std::string_view state_dir, std::string_view job, int node_rank,
                               std::string* error) {
  auto fail = [&](const char* why) {
    if (error) *error = why;
    return std::string();
  };
  if (state_dir.empty()) return fail("empty state directory (SCOUT_STATE_DIR)");
  if (job.empty()) return fail("empty job id");
  if (node_rank < 0) return fail("negative node rank");
  std::string dir(state_dir);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/" + shm::sanitize_component(job) + "/node-" + std::to_string(node_rank) + ".db";
}

std::string resolve_job_id(std::string_view configured,
                           const std::function<const char*(const char*)>& getenv_fn) {
  if (!configured.empty()) return std::string(configured);
  auto get = [&](const char* name) -> const char* {
    return getenv_fn ? getenv_fn(name) : std::getenv(name);
  };
  for (const char* name : {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"}) {
    const char* v = get(name);
    if (v && *v) return v;
  }
  return "default";
}

}  // namespace scout::store
