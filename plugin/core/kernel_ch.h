// KernelCh events: GPU start/stop per channel, operation completion, GPU clock conversion.
//
// NCCL's proxy thread starts a KernelCh event when a channel's kernel work started (pTimer =
// GPU start time) and records KernelChStop (args pTimer = GPU stop time) then stops it when the
// work completed (docs/nccl-notes.md §3.5). The parent is the Coll/P2p handle, whose payload names the
// record directly (ring + record index), validated with RingWriter::at() on every callback, so
// an event for an overwritten record (ring overrun, docs/nccl-notes.md §3.5 caveat 2) is counted as an
// orphan and touches nothing.
//
// Per record: ch_started / ch_stopped count distinct channels (a duplicate channel or more
// channels than the descriptor's nChannels are ignored and counted in kernelch_extra, so the
// counters never pass nChannels); state goes Enqueued -> Running at the first start; the stop of
// the last of nChannels channels sets complete_ns then state Complete (release) and calls the
// fingerprint engine's on_op_complete exactly once (docs/record-format.md: completion =
// KernelCh stopped on all channels). gpu_start_ns = earliest start (set when the first channel
// starts), gpu_end_ns = latest stop (set at completion), both converted with the
// communicator's ClockOffset (clock.h) and re-converted at completion with the freshest offset.
#pragma once

#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::core {

struct Process;
struct CommState;

// KernelCh start. `ctx` is the callback's context (only decoded to count a bad parent against
// its communicator). Returns the handle to give NCCL (never null).
void* kernelch_start(Process* p, void* ctx, const abi::DescrV5& d);

// recordEventState(KernelChStop) on a KernelCh handle payload; `args` may be null.
void kernelch_stop_state(Process* p, uint64_t payload, const abi::StateArgs* args);

// stopEvent on a KernelCh handle payload.
void kernelch_stop(Process* p, uint64_t payload);

}  // namespace scout::core
