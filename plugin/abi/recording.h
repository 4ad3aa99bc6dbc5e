// The ABI layer's hook for the call recorder (plugin/record/recorder.h, SCOUT_RECORD_CALLS):
// when recording is on, every entry point of exports.cc runs its callback and the append under
// the recorder's mutex, so the file order is a valid global order.
#pragma once

#include <atomic>

namespace scout::rec {
class Recorder;
}

namespace scout::abi_hook {

// The open recorder, or nullptr (recording off). One acquire load.
extern std::atomic<rec::Recorder*> g_recorder;
inline rec::Recorder* recorder() { return g_recorder.load(std::memory_order_acquire); }

// Called by every init before the event layer's init: opens PATH.<pid>.bin when
// SCOUT_RECORD_CALLS=PATH is set and no recorder is open in this load (a failure is said once
// through NCCL's logger and recording stays off).
void recording_on_init();

// Called after every finalize: when the event layer holds no communicator any more, flushes and
// closes the recorder (NCCL may dlclose the library next, docs/nccl-notes.md §1.2).
void recording_on_finalize();

}  // namespace scout::abi_hook
