// Replays a call recording (plugin/record/call_log_format.h) into a loaded profiler plugin:
// the same callbacks, with the same descriptor fields, on one replay thread per recorded thread,
// in the recorded global order (each call starts only after the previous one returned).
//
// Contexts and handles the plugin returns during replay replace the recorded values wherever
// the recording uses them (parentObj, parentGroup, stop/state handles, contexts). Recorded raw
// pointers NCCL owned are treated as follows: buffers are replaced by host buffers owned by the
// replayer (zero-filled, sized for the largest use of each recorded address), so a plugin
// without a CUDA driver can hash them safely; streams and PXN parents are passed through as
// opaque values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "test/sim/nccl_plugin_loader.h"

namespace scout::testing {

struct ReplayStats {
  uint64_t entries = 0;  // callbacks replayed
  uint64_t inits = 0;
  uint64_t starts = 0;
  uint64_t unmapped = 0;  // handles referenced that the replay never produced (passed raw)
  uint32_t threads = 0;
  int abi = 0;  // ABI version of the recording (4, 5 or 6)
};

// Reads `path` and replays it into `plugin`, whose version must match the recording's ABI.
// Returns false with *error on a malformed file or a version mismatch; nothing is replayed then.
bool replay_calls(const std::string& path, const sim::LoadedPlugin& plugin, ReplayStats* stats, std::string* error);

// The ABI version of a recording (first init entry), 0 with *error if unreadable.
int recording_abi(const std::string& path, std::string* error);

}  // namespace scout::testing
