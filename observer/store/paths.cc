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


}  // namespace scout::store
