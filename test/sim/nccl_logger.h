// The logger scout-sim hands to the plugin's init, behaving like NCCL's ncclDebugLog: silent
// unless NCCL_DEBUG is set; NCCL_DEBUG=WARN prints warnings, INFO also info messages of the
// subsystems selected by NCCL_DEBUG_SUBSYS (comma list of INIT, COLL, P2P, ..., PROFILE, ALL; a
// leading ^ inverts; default INIT,BOOTSTRAP,ENV as in NCCL). Lines go to stderr as
//   <host>:<pid>:<tid> [<cudaDev>] NCCL INFO <message>
// and warnings as "... [<cudaDev>] <file>:<line> NCCL WARN <message>".
#pragma once

#include <string>

namespace scout::sim {

// ncclDebugLogger_t-compatible function (docs/nccl-notes.md §2.1). Thread-safe; reads the environment once.
void nccl_debug_log(int level, unsigned long flags, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Host name and device number printed in the prefix (default: gethostname(), device 0).
void set_log_identity(const std::string& host, int cuda_dev);

// Subsystem mask for a NCCL_DEBUG_SUBSYS value (nullptr: NCCL's default).
unsigned long parse_debug_subsys(const char* value);

}  // namespace scout::sim
