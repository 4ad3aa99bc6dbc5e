// Logging of the plugin through NCCL's logger (subsystem PROFILE, or NET for the net plugin
// half; docs/nccl-notes.md §2.1).
//
// The logger NCCL hands to init is kept process-wide. Each distinct problem is reported once per
// load of the plugin (Problem ids below), so nothing on the hot path can flood NCCL's log; the
// loss itself is counted in the segment (docs/plugin.md). Messages are formatted into a
// stack buffer and passed to NCCL as "%s". Without a logger, nothing is printed.
#pragma once

#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::core::log {

// Problems reported at most once per load (one flag each).
enum class Problem : int {
  kSegmentCreate,      // segment could not be created: every context disabled
  kCommsExhausted,     // more communicators than SCOUT_MAX_COMMS
  kBadHandle,          // a NULL, stale, foreign or garbage handle was passed to us
  kUnknownEvent,       // an event type or state we do not know
  kForeignProxy,       // a PXN ProxyOp of another process
  kThreadBlocks,       // no per-thread API state left (too many threads issuing NCCL calls)
  kKernelChOrphan,     // KernelCh for an operation whose record was already overwritten
  kKernelChExtra,      // duplicate or extra KernelCh channel events
  kLateMatch,          // Coll/P2p for an API call already recorded as unmatched
  kNoMemory,           // an allocation at init failed: that communicator is disabled
  kExceptionInit,      // an exception escaped into the ABI layer (init)
  kExceptionEvent,     // ... (startEvent / stopEvent / recordEventState)
  kExceptionFinalize,  // ... (finalize)
  kNetRefused,         // the net half refused init (no delegate, delegate failed, SCOUT_ENABLE=0)
  kNetFaultSpec,       // SCOUT_NET_FAULT does not parse: drills off
  kNetTruth,           // the ground-truth file (SCOUT_TRUTH) cannot be written
  kNetHandleFull,      // a delegate's listen handle leaves no room for scout's identity
  kNetVProps,          // a v12 delegate's virtual device has more than 4 devices (v11 NCCL)
  kNetBadObject,       // NCCL passed the net half an object that is not one of ours
  kNetException,       // an exception escaped into the net ABI layer
  kProxyUntimed,       // ProxyStep events that could not be timed
  kSegmentTruncated,   // the segment file was truncated under this process (common/write_guard.h)
  kCount
};

// Installs NCCL's logger (the last one wins; NCCL passes the same function to every init).
void set_logger(abi::Logger logger);
abi::Logger logger();

// Re-arms every once-flag (a new load cycle: first init after the last finalize).
void reset_once();

// True the first time it is called for `p` since the last reset_once().
bool first_time(Problem p);

// printf-style messages through NCCL's logger with subsystem PROFILE; prefixed "scout: ".
void warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// The same through subsystem NET (0x10): the net plugin half's messages ("scout net: ...").
void net_warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void net_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void net_warn_once(Problem p, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// warn()/info() only the first time `p` happens.
void warn_once(Problem p, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void info_once(Problem p, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace scout::core::log
