// One scout-observer per node of an emulated multi-node job, all on this machine, meeting through
// a rendezvous (a file or a Redis server): how the cross-node end-to-end tests start the observers
// (test/observer/replay_e2e_test.cc, replay_redis_e2e_test.cc).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test/support/subprocess.h"

namespace scout::testing {

// The environment of observers meeting across nodes, with their job in `dir`: SCOUT_SHM_DIR
// `dir`, SCOUT_STATE_DIR `dir`/state, fingerprints on every operation (SCOUT_FP_BUDGET=0), digest
// rounds every 100 ms, a peer silent for 10 s is lost, 30 s for every observer to join.
std::map<std::string, std::string> node_observer_env(const std::string& dir);

// Starts one observer per entry of `stores`: node k runs `scout-observer --job JOB --interval 100
// --store STORES[k] --host node<k> --nodes N --node-rank k --rdzv RDZV` (N: stores.size()) with
// `env`. Returns them running, node k at index k; each is killed when its Subprocess is destroyed.
std::vector<std::unique_ptr<Subprocess>> start_node_observers(const std::string& job,
                                                              const std::vector<std::string>& stores,
                                                              const std::string& rdzv,
                                                              const std::map<std::string, std::string>& env);

}  // namespace scout::testing
