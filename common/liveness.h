// Is a process still the one that created a segment? The pid plus the start time from
// /proc/<pid>/stat (pid reuse changes the start time). Used by the segment writer (stamps its
// owner), the observer (reclaims segments of dead owners) and the tools.
#pragma once

#include <cstdint>

namespace scout::shm {

// Start time of process `pid` in clock ticks since boot (/proc/<pid>/stat field 22); 0 if the
// process does not exist or /proc is unreadable. Pairs with the pid to detect pid reuse.
uint64_t process_start_ticks(int pid);

// True when the process that created a segment still runs: `pid` exists and its start time
// equals `start_ticks` (0 = unknown, then existence alone decides). `state`, when given, receives
// the /proc state letter ('R', 'S', 'Z', ...; 0 if unreadable) from the same read.
bool process_alive(int pid, uint64_t start_ticks, char* state = nullptr);

}  // namespace scout::shm
