// CLOCK_REALTIME in ns, cheaply: the CPU's time-stamp counter scaled to CLOCK_REALTIME.
//
// Every record carries several CPU times; on virtual machines a vDSO clock_gettime costs
// 40-80 ns (it serializes the pipeline around rdtsc), which alone would exceed the plugin's
// per-collective budget. So, when the TSC is trustworthy (the CPU reports an invariant TSC and
// the kernel itself uses the TSC as its clocksource), now_ns() reads rdtsc and converts:
//
//     ns = base_ns + (tsc - base_tsc) * mult / 2^32
//
// with (base_tsc, base_ns) an anchor taken from clock_gettime and mult measured between the
// last two anchors. Anchors are refreshed every 100 ms (the first after 10 ms) by whichever
// thread notices first (a try-lock; the others keep using the previous anchor, never wait), so
// the result follows CLOCK_REALTIME including NTP slewing and steps within 100 ms. Error against
// clock_gettime: the anchor's read jitter (tens of ns) plus the rate error over at most 100 ms
// (< 1 us with a 100 ms baseline). Without a trustworthy TSC, or while no rate is known yet,
// now_ns() is clock_gettime(CLOCK_REALTIME).
#pragma once

#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <atomic>
#include <cstdint>

#include "common/fence.h"

namespace scout::core {

struct WallClock {
  alignas(64) std::atomic<uint32_t> seq{0};  // odd while the parameters are being changed
  std::atomic<uint64_t> mult{0};             // ns per tick << 32; 0: use clock_gettime
  std::atomic<uint64_t> base_tsc{0};
  std::atomic<int64_t> base_ns{0};
  std::atomic<uint64_t> next_tsc{0};    // re-anchor when the TSC passes this
  std::atomic<uint32_t> updating{0};    // try-lock of the re-anchoring thread
  std::atomic<uint32_t> usable{0};      // TSC checked and trustworthy
  std::atomic<uint64_t> anchor_tsc{0};  // the anchor the next rate is measured from
  std::atomic<int64_t> anchor_ns{0};
};

extern WallClock g_wall_clock;

inline int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Slow path: clock_gettime, and a new anchor when one is due (wall_clock.cc).
int64_t now_ns_slow(uint64_t tsc);

#if !defined(__x86_64__)
inline uint64_t __rdtsc() { return 0; }  // no TSC path: wall_clock_init() never enables it
#endif

// CLOCK_REALTIME in ns (see above). Lock-free, never blocks; safe from any thread.
inline int64_t now_ns() {
  WallClock& c = g_wall_clock;
  uint32_t s = c.seq.load(std::memory_order_acquire);
  uint64_t m = c.mult.load(std::memory_order_relaxed);
  uint64_t bt = c.base_tsc.load(std::memory_order_relaxed);
  int64_t bn = c.base_ns.load(std::memory_order_relaxed);
  uint64_t next = c.next_tsc.load(std::memory_order_relaxed);
  scout::acquire_fence();
  uint64_t tsc = __rdtsc();
  if (m == 0 || (s & 1) != 0 || tsc >= next || tsc < bt || c.seq.load(std::memory_order_relaxed) != s) {
    return now_ns_slow(tsc);
  }
  return bn + int64_t((static_cast<unsigned __int128>(tsc - bt) * m) >> 32);
}

// Checks whether the TSC can be used (CPUID invariant TSC, kernel clocksource "tsc") and takes
// the first anchor. Called at process-state creation; cheap to call again.
void wall_clock_init();

}  // namespace scout::core
