// Protection against SIGBUS while reading a mapped segment that shrinks under us.
//
// A segment is a file mapped read-only; if something truncates it (a hostile or broken writer,
// an operator's `truncate`), touching the vanished pages raises SIGBUS. The plugin sizes the
// file once with posix_fallocate and never shrinks it, so this only happens by accident or
// malice; the observer must not die of it. Usage:
//
//   SigbusGuard g;                       // installs the process-wide handler once
//   if (SIGBUS_GUARD_ENTER(g)) { ...fault happened: drop the segment... } else { ...reads... }
//   g.leave();
//
// Only plain memory copies may run inside the guarded region: a fault jumps out of it without
// running destructors (a temporary string being copied when the fault hits is leaked; nothing
// is left half-updated as long as results are assigned after the reads).
// A SIGBUS outside a guarded region keeps its default action (the process dies with a core).
#pragma once

#include <setjmp.h>

namespace scout::obs {

class SigbusGuard {
 public:
  SigbusGuard();  // installs the handler (idempotent, thread-safe)
  ~SigbusGuard() { leave(); }
  SigbusGuard(const SigbusGuard&) = delete;
  SigbusGuard& operator=(const SigbusGuard&) = delete;
  // Arms this thread's jump target; use through SIGBUS_GUARD_ENTER.
  sigjmp_buf* arm();
  // Disarms; a later SIGBUS on this thread is fatal again.
  void leave();
  // Number of SIGBUS faults caught in this process so far.
  static unsigned long faults();
};

}  // namespace scout::obs

// Evaluates to nonzero when a SIGBUS was caught inside the guarded region (control returns here).
#define SIGBUS_GUARD_ENTER(g) (sigsetjmp(*(g).arm(), 1) != 0)
