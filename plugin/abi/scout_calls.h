// scout's own handling of each profiler callback, as the exported tables call it: the event
// layer (plugin/core/events.h), and, with SCOUT_RECORD_CALLS set, the callback and its append to
// the call recording under the recorder's mutex (plugin/abi/recording.h). The entry points of
// plugin/abi/exports.cc call these directly, or through the delegate forwarding
// (plugin/abi/forward.h) when SCOUT_PROFILER_DELEGATE names a second plugin. None of them catches:
// the entry points do.
#pragma once

#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::abi_hook {

// init of ABI `version` (4, 5, 6); `extra_mask`: a delegate's bits (core::init).
void scout_init(int version, void** ctx, uint64_t hash, int* mask, const char* name, int nnodes, int nranks, int rank,
                abi::Logger logfn, int extra_mask);
void scout_start_v4(void* ctx, void** handle, abi::DescrV4* d);
void scout_start_v5(void* ctx, void** handle, abi::DescrV5* d);
void scout_start_v6(void* ctx, void** handle, abi::DescrV6* d);
void scout_stop(int version, void* handle);
void scout_record(int version, void* handle, int state, abi::StateArgs* args);
void scout_finalize(int version, void* ctx);

}  // namespace scout::abi_hook
