// The scout-sim launcher: starts one worker process per rank with the environment torchrun
// gives (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE) plus SCOUT_JOB_ID, SCOUT_HOST (with
// --nodes > 1) and NCCL_PROFILER_PLUGIN (the plugin next to the binary unless the user set it),
// supervises them and prints a one-line summary (docs/scout-sim.md, "Exit codes").
#pragma once

#include <string>

#include "test/sim/options.h"

namespace scout::sim {

constexpr int kExitOk = 0;           // every rank ran every step
constexpr int kExitFailed = 1;       // a rank failed on its own (not an injected crash), or setup
constexpr int kExitUsage = 2;        // bad command line
constexpr int kExitTimedOut = 3;     // --timeout reached (a hang or crash stopped the job)
constexpr int kExitInterrupted = 4;  // SIGINT or SIGTERM to the launcher

// <dir of exe>/../lib/libnccl-profiler-scout.so, made absolute.
std::string default_plugin_path(const std::string& exe);

// Runs the whole job; returns the exit code. `exe` is the scout-sim binary the workers run.
int launch(SimOptions o, const std::string& exe);

// "0-2,4,6-7" for a sorted list of ranks.
std::string rank_ranges(const std::vector<int>& ranks);

}  // namespace scout::sim
