// TSC-based CLOCK_REALTIME (wall_clock.h).
#include "plugin/core/wall_clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "common/fence.h"

namespace scout::core {

WallClock g_wall_clock;

namespace {

constexpr int64_t kFirstIntervalNs = 10000000;  // first rate measurement after 10 ms
constexpr int64_t kIntervalNs = 100000000;      // then a new anchor every 100 ms

bool invariant_tsc() {
#if !defined(__x86_64__)
  return false;
#else
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
#endif
}

bool kernel_uses_tsc() {
  int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[32] = {};
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  return n >= 3 && std::strncmp(buf, "tsc", 3) == 0 && (buf[3] == '\n' || buf[3] == '\0');
}

// One (tsc, ns) pair read as close together as possible: the TSC value is the midpoint of two
// reads around clock_gettime; the tightest of a few tries.
void anchor_pair(uint64_t* tsc, int64_t* ns) {
  uint64_t best = ~0ull;
  for (int i = 0; i < 3; ++i) {
    uint64_t a = __rdtsc();
    int64_t t = realtime_ns();
    uint64_t b = __rdtsc();
    if (b - a < best) {
      best = b - a;
      *tsc = a + (b - a) / 2;
      *ns = t;
    }
  }
}

}  // namespace

void wall_clock_init() {
  WallClock& c = g_wall_clock;
  if (c.usable.load(std::memory_order_acquire) != 0) return;
  if (!invariant_tsc() || !kernel_uses_tsc()) return;
  uint64_t tsc;
  int64_t ns;
  anchor_pair(&tsc, &ns);
  c.anchor_tsc.store(tsc, std::memory_order_relaxed);
  c.anchor_ns.store(ns, std::memory_order_relaxed);
  c.usable.store(1, std::memory_order_release);
}

int64_t now_ns_slow(uint64_t tsc) {
  WallClock& c = g_wall_clock;
  int64_t now = realtime_ns();
  if (c.usable.load(std::memory_order_acquire) == 0) return now;
  uint64_t m_old = c.mult.load(std::memory_order_relaxed);
  if (m_old != 0 && tsc < c.next_tsc.load(std::memory_order_relaxed) &&
      (c.seq.load(std::memory_order_relaxed) & 1) != 0) {
    return now;  // someone is re-anchoring right now
  }
  if (now - c.anchor_ns.load(std::memory_order_relaxed) < kFirstIntervalNs) return now;
  uint32_t expect = 0;
  if (!c.updating.compare_exchange_strong(expect, 1, std::memory_order_acquire)) return now;
  uint64_t t1;
  int64_t n1;
  anchor_pair(&t1, &n1);
  uint64_t t0 = c.anchor_tsc.load(std::memory_order_relaxed);
  int64_t n0 = c.anchor_ns.load(std::memory_order_relaxed);
  if (t1 > t0 && n1 > n0) {
    uint64_t m = uint64_t((static_cast<unsigned __int128>(uint64_t(n1 - n0)) << 32) / (t1 - t0));
    // A rate far from the previous one means the wall clock was stepped: re-base only.
    if (m_old != 0 && (m > m_old + m_old / 1000 || m + m_old / 1000 < m_old)) m = m_old;
    uint64_t interval_ticks = m != 0 ? uint64_t((static_cast<unsigned __int128>(kIntervalNs) << 32) / m) : 0;
    uint32_t s = c.seq.load(std::memory_order_relaxed);
    c.seq.store(s + 1, std::memory_order_relaxed);
    scout::release_fence();
    c.base_tsc.store(t1, std::memory_order_relaxed);
    c.base_ns.store(n1, std::memory_order_relaxed);
    c.mult.store(m, std::memory_order_relaxed);
    c.next_tsc.store(t1 + interval_ticks, std::memory_order_relaxed);
    c.seq.store(s + 2, std::memory_order_release);
  }
  c.anchor_tsc.store(t1, std::memory_order_relaxed);
  c.anchor_ns.store(n1, std::memory_order_relaxed);
  c.updating.store(0, std::memory_order_release);
  return now;
}

}  // namespace scout::core
