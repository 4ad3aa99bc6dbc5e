// The built profiler plugin loaded for a benchmark as NCCL 2.28 loads it: segments in `shm_dir`,
// job "bench", fingerprints off (SCOUT_FP=0). Returns its v5 table, or nullptr after printing why
// on stderr; `lp` keeps the library for unload_profiler_plugin.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "scout/nccl_profiler_abi.h"
#include "test/sim/nccl_plugin_loader.h"
#include "test/support/tmpdir.h"

namespace scout::bench {

inline const abi::ProfilerV5* load_bench_plugin(const std::string& shm_dir, sim::LoadedPlugin* lp) {
  setenv("SCOUT_SHM_DIR", shm_dir.c_str(), 1);
  setenv("SCOUT_JOB_ID", "bench", 1);
  setenv("SCOUT_FP", "0", 1);
  const std::string so = testing::build_path("lib/libnccl-profiler-scout.so");
  *lp = sim::load_profiler_plugin(so.c_str());
  if (!lp->ok() || lp->version != 5) {
    std::fprintf(stderr, "cannot load %s as v5: %s\n", so.c_str(), lp->error.c_str());
    return nullptr;
  }
  return lp->v5;
}

}  // namespace scout::bench
