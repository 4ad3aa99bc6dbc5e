#include "test/support/node_observers.h"

#include "test/support/tmpdir.h"

namespace scout::testing {

std::map<std::string, std::string> node_observer_env(const std::string& dir) {
  return {
      {"SCOUT_SHM_DIR", dir},           {"SCOUT_STATE_DIR", dir + "/state"}, {"SCOUT_FP_BUDGET", "0"},
      {"SCOUT_NET_INTERVAL_MS", "100"}, {"SCOUT_NET_TIMEOUT_MS", "10000"},   {"SCOUT_NET_JOIN_TIMEOUT_MS", "30000"}};
}

std::vector<std::unique_ptr<Subprocess>> start_node_observers(const std::string& job,
                                                              const std::vector<std::string>& stores,
                                                              const std::string& rdzv,
                                                              const std::map<std::string, std::string>& env) {
  std::vector<std::unique_ptr<Subprocess>> observers;
  for (size_t k = 0; k < stores.size(); ++k)
    observers.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{build_path("bin/scout-observer"), "--job", job, "--interval", "100", "--store",
                                 stores[k], "--host", "node" + std::to_string(k), "--nodes",
                                 std::to_string(stores.size()), "--node-rank", std::to_string(k), "--rdzv", rdzv},
        env));
  return observers;
}

}  // namespace scout::testing
