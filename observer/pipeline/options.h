// Everything that configures one observer: identity of the job and node, where segments are,
// pass interval, and the thresholds of every detector. Defaults come from the SCOUT_* registry
// (include/scout/config_vars.def, "observer" section); command-line flags override them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "observer/detect/equiv.h"
#include "observer/detect/hang.h"
#include "observer/detect/netlink.h"
#include "observer/detect/op_judge.h"
#include "observer/detect/slowlink.h"
#include "observer/detect/straggler.h"
#include "observer/ingest/liveness.h"
#include "scout/config.h"

namespace scout::obs {

struct ObserverOptions {
  std::string job;
  std::string host;  // segments of this host only ("" = all hosts in shm_dir)
  std::string shm_dir = "/dev/shm";
  int node_rank = 0;
  int nodes = 1;
  int64_t interval_ns = 250'000'000;
  int64_t reclaim_after_ns = 60'000'000'000;  // < 0: never reclaim
  // Without any segment of the job this long after the first pass, the observer warns (log and
  // the store's status line) with the reason (Ingestor::no_segment_reason).
  int64_t no_segment_grace_ns = 10'000'000'000;
  JudgeConfig judge;
  HangConfig hang;
  StragglerConfig straggler;
  SlowLinkConfig slowlink;
  NetLinkConfig netlink;
  std::vector<EquivGroup> equiv;
  LivenessFn liveness;                          // empty: owner_running
  std::function<void(const std::string&)> log;  // empty: silent
};

// Options from a loaded configuration (SCOUT_* variables). Equivalence declarations in
// SCOUT_EQUIV that do not parse make it return false with *error.
bool options_from_config(const config::Config& cfg, ObserverOptions* out, std::string* error);

}  // namespace scout::obs
