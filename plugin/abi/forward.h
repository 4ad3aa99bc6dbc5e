// Forwarding every profiler callback to a second profiler plugin (SCOUT_PROFILER_DELEGATE;
// docs/plugin.md "A second profiler plugin"; plugin/core/delegate.h has the parts).
//
// At the first init of a load cycle, when SCOUT_PROFILER_DELEGATE is set, the delegate is opened
// with the table NCCL would pick for the ABI version NCCL called scout with. From then on, every
// callback goes to scout (scout_calls.h) and to the delegate, each with its own context and its
// own parent handles:
//   init       the delegate's init first, into its own mask int (kept for the load cycle: it may
//              change it later); then scout's, which writes scout's mask plus the delegate's bits
//              into NCCL's mask. NCCL gets one context naming both (or the one that is not NULL).
//   startEvent scout gets the types it records (API events, KernelLaunch, Group, Coll, P2p,
//              KernelCh, CeColl; ProxyOp while a ProxyStep window is open and ProxyStep under its
//              own ProxyOp); the delegate gets its mask's types and their ancestors. An event only
//              the delegate asked for costs scout no record and no counter. NCCL gets one handle
//              naming both results.
//   stopEvent, recordEventState, finalize: the value NCCL gives back is split and each half goes
//              to its own plugin; a stale joined handle reaches neither.
// Nothing here throws on its own; the exported entry points catch whatever the delegate or scout
// might throw. Without SCOUT_PROFILER_DELEGATE the entry points call scout directly (one extra
// acquire load per callback).
#pragma once

#include <atomic>
#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::abi_hook {

struct Delegation;
// The delegation of this load cycle, or nullptr.
extern std::atomic<Delegation*> g_delegation;
inline bool delegating() { return g_delegation.load(std::memory_order_acquire) != nullptr; }

// init of ABI `version` (4, 5, 6), with or without a delegate (opens it at the first init).
void fwd_init(int version, void** ctx, uint64_t hash, int* mask, const char* name, int nnodes, int nranks, int rank,
              abi::Logger logfn);
// startEvent of the v4 table, and of the v5/v6 tables (`version` 5 or 6; a v6 descriptor has the
// v5 layout for every v5 member, docs/nccl-notes.md §2.5).
void fwd_start_v4(void* ctx, void** handle, abi::DescrV4* d);
void fwd_start(int version, void* ctx, void** handle, abi::DescrV6* d);
void fwd_stop(int version, void* handle);
void fwd_record(int version, void* handle, int state, abi::StateArgs* args);
void fwd_finalize(int version, void* ctx);

// What the delegation did so far, for tests and the bench: the ABI version of the delegate's table
// (0 when none is open) and the joined handles found stale.
int delegate_version();
uint64_t delegate_stale_handles();

}  // namespace scout::abi_hook
