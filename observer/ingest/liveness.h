// Is the process that owns a segment still running? shm::process_alive (pid + start time) plus
// one more case: a zombie (exited, not yet reaped by its parent, e.g. a launcher that waits only
// at the end) is gone for our purposes, though kill(pid, 0) still succeeds.
#pragma once

#include <cstdint>
#include <functional>

namespace scout::obs {

// True while process `pid` with start time `start_ticks` (0 = unknown) runs and is not a zombie.
bool owner_running(int pid, uint64_t start_ticks);

// The check the observer uses; tests substitute their own.
using LivenessFn = std::function<bool(int pid, uint64_t start_ticks)>;

}  // namespace scout::obs
