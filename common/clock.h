// The wall clock every scout record and finding uses: CLOCK_REALTIME in ns since the epoch.
// (The plugin's hot path reads a TSC-based equivalent, plugin/core/wall_clock.h.) And the
// monotonic clock deadlines and timeouts are measured on.
#pragma once

#include <time.h>

#include <cstdint>

namespace scout::shm {

// CLOCK_REALTIME in ns.
inline int64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// CLOCK_MONOTONIC in ns (deadlines: immune to clock steps).
inline int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace scout::shm
