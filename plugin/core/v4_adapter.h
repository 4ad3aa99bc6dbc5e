// Translation of NCCL's v4 profiler descriptors (NCCL 2.27) into the v5 layout the event layer
// handles. Facts from docs/nccl-notes.md §2.5 and 2.6: the v4 type is 8 bits; for Coll/P2p, parentObj is the
// legacy Group handle (there are no API events in v4); p2p.nChannels is never filled by NCCL's
// v4 adapter (uninitialised memory): the event layer treats it as unknown.
#pragma once

#include "scout/nccl_profiler_abi.h"

namespace scout::core {

// Copies `in` into `out`. Returns false for a type bit v4 cannot carry (>= bit 8: NCCL never
// sends those to a v4 plugin), in which case `out` is unspecified.
bool descr_from_v4(const abi::DescrV4& in, abi::DescrV5* out);

// startEvent of the v4 table.
void start_event_v4(void* ctx, void** handle, const abi::DescrV4* d);

}  // namespace scout::core
