// Keeps a process alive when the segment file it writes is truncated under it (an operator's
// `truncate -s 0`, a cleanup script): on Linux every later store to the vanished pages of the
// shared mapping raises SIGBUS (BUS_ADRERR), which would kill the training process.
//
// Mechanism (docs/plugin.md, "A segment truncated under the job"): the segment writer registers
// each mapping it writes; a SIGBUS handler, installed once, looks at the faulting address. Inside
// a registered mapping, it maps anonymous private zero pages over the whole mapping (mmap
// MAP_FIXED: same addresses, so every pointer into it stays valid) and returns; the faulting store
// is re-executed into the private page and succeeds. The segment is then detached for good: its
// records from then on reach no observer (the observer sees the file shrink and drops it,
// docs/observer.md), and mappings_lost() counts it. Any other SIGBUS goes to the handler that was
// installed before (or the default action: the process dies with a core, as without scout).
// Costs nothing on the hot path (no check per write). Async-signal-safe: the handler touches only
// a fixed table of atomics and calls mmap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace scout::shm {

// Registers [base, base + bytes) as a segment mapping of this process (at most kMaxGuarded at a
// time; beyond, the mapping is simply not guarded). Installs the handler on first use.
constexpr int kMaxGuarded = 16;
void guard_mapping(void* base, size_t bytes);
// Removes the registration (before munmap).
void unguard_mapping(void* base);
// True when the mapping at `base` was replaced after a truncation.
bool mapping_lost(const void* base);
// Mappings replaced so far in this process.
uint64_t mappings_lost();

}  // namespace scout::shm
