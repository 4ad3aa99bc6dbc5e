// The event layer's entry points: what the exported ABI tables (plugin/abi/exports.cc) call.
//
// Version-neutral: v5 descriptors are handled directly, v6 adds the copy-engine events (its v5
// members have identical offsets, docs/nccl-notes.md §2.5), v4 descriptors are translated by v4_adapter.h.
// Every function returns normally whatever it is given: a bad handle, context or descriptor is
// counted in the segment and ignored (docs/plugin.md). None of them throws; the ABI
// layer still catches everything as a last line of defence.
//
// NCCL's call sequence and threads (docs/nccl-notes.md §1.4, 3.1-3.5), and what each event does here:
//   GroupApi start/stop (user thread)   open/close the thread's group; at the outermost stop,
//                                       unclaimed API calls are decided (api_state.h) and the
//                                       fingerprint engine's on_group_end runs
//   CollApi/P2pApi start (user thread)  API call recorded in the thread's block; api_calls++
//   KernelLaunch start (launcher)       communicator's latest launch time/stream/thread; engine
//                                       on_launch_start (its stop records nothing)
//   Group start/stop                    nothing recorded (a non-null handle keeps NCCL's
//                                       graph seqNumber rule working, docs/nccl-notes.md §3.6)
//   Coll/P2p start (launcher or CUDA    the operation's record (records.h); engine
//     host-callback thread)             on_op_enqueued; Coll/P2p stop: nothing (enqueued only)
//   KernelCh start/stop (proxy thread)  GPU progress and completion (kernel_ch.h)
//   CeColl (v6)                         kKindCeColl record; CeSync/CeBatch ignored and counted
//   ProxyOp, ProxyStep (proxy thread)   pid != ours (PXN): context and parent never touched,
//                                       counted in foreign_proxy; ours: per-peer network step
//                                       times while a ProxyStep window is open (proxy_steps.h),
//                                       else ignored and counted
#pragma once

#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::core {

// The activation mask scout asks for: CollApi | P2pApi | KernelLaunch | Coll | P2p | KernelCh.
// NCCL adds the ancestors GroupApi and Group (docs/nccl-notes.md §2.2).
constexpr int kActivationMask =
    int(abi::kEvCollApi | abi::kEvP2pApi | abi::kEvKernelLaunch | abi::kEvColl | abi::kEvP2p | abi::kEvKernelCh);
static_assert(kActivationMask == 0xE46);

// Communicator init. Never fails: returns kSuccess, with *ctx = NULL when scout records nothing
// for this communicator (SCOUT_ENABLE=0, segment creation failed, more than SCOUT_MAX_COMMS
// communicators, out of memory); then *eActivationMask is left untouched unless another
// communicator is recorded. Otherwise *ctx is an encoded context (handle.h) and
// *eActivationMask = kActivationMask, plus ProxyOp | ProxyStep while a ProxyStep window is open
// (proxy_window.h), plus `extra_mask`: the bits a delegate profiler plugin asked for
// (plugin/core/delegate.h), kept in every mask scout writes so that a ProxyStep window never
// clears them. `abi_version` (4, 5, 6) is stamped into the segment.
// Thread-safe (concurrent inits of several communicators are serialized on a mutex).
abi::Result init(void** ctx, uint64_t comm_hash, int* mask, const char* comm_name, int nnodes, int nranks, int rank,
                 abi::Logger logfn, int abi_version, int extra_mask = 0);

// startEvent for v5 descriptors (and v6 / translated v4 ones). Sets *handle (never to an
// address: an encoded value, or NULL when scout has no state at all).
void start_event(void* ctx, void** handle, const abi::DescrV5* d, int abi_version);

// startEvent of the v6 table: CeColl/CeSync/CeBatch here, everything else via start_event.
void start_event_v6(void* ctx, void** handle, const abi::DescrV6* d);

// stopEvent.
void stop_event(void* handle);

// recordEventState; `args` may be NULL (GroupApi states, docs/nccl-notes.md §2.3).
void record_state(void* handle, int state, const abi::StateArgs* args);

// Communicator finalize: unclaimed API calls of the communicator are recorded as unmatched,
// its ring is marked finalized; the last finalize tears the process state down (segment
// unmapped, the file stays). Always returns kSuccess.
abi::Result finalize(void* ctx);

}  // namespace scout::core
