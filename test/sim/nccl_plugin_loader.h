// Loads a profiler plugin the way NCCL does (docs/nccl-notes.md §1.1 and 1.2), for scout-sim and
// the tests: same environment variable, same dlopen name resolution, same dlsym order.
#pragma once

#include <string>

#include "scout/nccl_profiler_abi.h"

namespace scout::sim {

// Which NCCL's lookup to follow.
enum class NcclLookup {
  k2_28,  // NCCL 2.28.9: ncclProfiler_v5, v4 (v3..v1 are not supported by scout: not loaded)
  k2_30,  // NCCL 2.30.x: ncclProfiler_v6, v5, v4
};

// A loaded plugin. Exactly one of v4/v5/v6 is non-null when ok().
struct LoadedPlugin {
  void* handle = nullptr;  // dlopen handle (RTLD_NOW | RTLD_LOCAL)
  int version = 0;         // 4, 5 or 6
  const abi::ProfilerV4* v4 = nullptr;
  const abi::ProfilerV5* v5 = nullptr;
  const abi::ProfilerV6* v6 = nullptr;
  std::string opened;  // the name dlopen succeeded with
  std::string error;   // why nothing was loaded
  bool ok() const { return version != 0; }
};

// Resolves and loads the plugin named by `env_value` (the value of NCCL_PROFILER_PLUGIN, or
// nullptr when unset) exactly as NCCL's openPluginLib does:
//   "none" (any case)                -> nothing loaded, error "disabled";
//   unset or empty                   -> dlopen("libnccl-profiler.so");
//   X                                -> dlopen(X); if that fails and X has no '/' and is not
//                                       "lib*.so", dlopen("libnccl-profiler-X.so");
//   a case-insensitive prefix of "STATIC_PLUGIN" -> dlopen(NULL): the executable itself.
// NCCL's last resort, searching an already loaded external net plugin (docs/nccl-notes.md §1.1 item 5), does
// not apply: scout-sim loads no net plugin.
// Then dlsym in the order of `lookup`. Returns the first table found; a library without any of
// the symbols is closed and reported ("unsupported").
LoadedPlugin load_profiler_plugin(const char* env_value, NcclLookup lookup = NcclLookup::k2_28);

// dlclose()s the library (NCCL does this when the last communicator is finalized).
void unload_profiler_plugin(LoadedPlugin* p);

}  // namespace scout::sim
