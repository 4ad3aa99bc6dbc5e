// What configures the observer's replay cycles (docs/replay.md; docs/configuration.md): the SCOUT_REPLAY*
// variables of the registry (include/scout/config_vars.def, "observer: replay") and what the
// observer's command line adds (where `scout replay run` leaves requests, the rendezvous of the
// observers for links across nodes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "observer/pipeline/command_line.h"
#include "replay/outlier.h"
#include "scout/config.h"

namespace scout::obs {

struct ReplayOptions {
  bool enabled = false;                   // SCOUT_REPLAY (the registry's default is on)
  double budget = 0.01;                   // SCOUT_REPLAY_BUDGET: fraction of wall time
  int64_t max_mem = int64_t(2) << 30;     // SCOUT_REPLAY_MAX_MEM: device bytes per GPU
  std::string gemms;                      // SCOUT_REPLAY_GEMMS ("" = the default set)
  int64_t deadline_ns = 30'000'000'000;   // SCOUT_REPLAY_DEADLINE_S: one cycle, contract to verdict
  int64_t min_period_ns = 1'000'000'000;  // periodic cycles at most this often
  int max_pairs = 64;                     // link recipes per periodic cycle
  int max_colls = 8;                      // collective recipes per cycle
  // Each recipe's deadline (docs/replay.md, "Deadlines"): in a cycle run for a stuck collective,
  // and in every other local cycle (a hung GPU or dead link holds a cycle at most this long per
  // GPU or pair). Fixed; tests shorten them.
  int64_t stuck_recipe_deadline_ns = 1'000'000'000;
  int64_t recipe_deadline_ns = 10'000'000'000;
  std::vector<std::string> program;  // scout-replay argv ("" = next to this executable)
  std::string request_prefix;        // on-demand requests (request.h); "" = none
  replay::OutlierRule rule;
  std::string rdzv;                         // observers' rendezvous ("" = one node: no cross-node links)
  int nodes = 1;                            // observers in the job
  int64_t cross_period_ns = 5'000'000'000;  // cross-node plans at most this often (leader)
  // The rendezvous store stopped answering (a Redis server restarted): reconnect after
  // cross_retry_first_ns, doubling up to cross_retry_max_ns; the failure is said at once, then at
  // most every cross_say_every_ns (docs/replay.md, "Across nodes"). Fixed; tests shorten them.
  int64_t cross_retry_first_ns = 1'000'000'000;
  int64_t cross_retry_max_ns = 30'000'000'000;
  int64_t cross_say_every_ns = 60'000'000'000;
};

// The replay options of scout-observer: the SCOUT_REPLAY* values of `cfg`, the request prefix of
// the store `cl.store` (request.h) and, with several nodes, the rendezvous `cl.rdzv`. False with
// *error ("SCOUT_REPLAY_GEMMS item '...': ...") when SCOUT_REPLAY_GEMMS does not parse.
bool replay_options(const config::Config& cfg, const CommandLine& cl, ReplayOptions* out, std::string* error);

// scout-replay's path: SCOUT_REPLAY_PROGRAM is not a variable; the program next to the running
// executable (<dir of /proc/self/exe>/scout-replay).
std::string default_replay_program();

}  // namespace scout::obs
