// Thread ids and the GPU clock offset estimator (clock.h).
#include "plugin/core/clock.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace scout::core {
namespace {
thread_local uint32_t t_tid = 0;  // trivially destructible (the .so may be dlclosed)
}  // namespace

uint32_t current_tid() {
  uint32_t t = t_tid;
  if (t == 0) {
    t = uint32_t(::syscall(SYS_gettid));
    t_tid = t;
  }
  return t;
}

int64_t ClockOffset::sample(int64_t cpu_now_ns, uint64_t gpu_ns) {
  int64_t d = cpu_now_ns - int64_t(gpu_ns);
  uint32_t n = n_.fetch_add(1, std::memory_order_relaxed);
  if (n % kWindow == 0 && n != 0) {
    // Roll the window: the previous window's minimum is forgotten, the current one ages.
    prev_min_.store(cur_min_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    cur_min_.store(d, std::memory_order_relaxed);
  } else {
    int64_t cur = cur_min_.load(std::memory_order_relaxed);
    while (d < cur && !cur_min_.compare_exchange_weak(cur, d, std::memory_order_relaxed)) {
    }
  }
  int64_t a = cur_min_.load(std::memory_order_relaxed);
  int64_t b = prev_min_.load(std::memory_order_relaxed);
  int64_t e = a < b ? a : b;
  est_.store(e, std::memory_order_relaxed);
  return e;
}

int64_t ClockOffset::estimate(bool* valid) const {
  int64_t e = est_.load(std::memory_order_relaxed);
  if (valid) *valid = e != kNone;
  return e == kNone ? 0 : e;
}

int64_t ClockOffset::to_wall(uint64_t gpu_ns) const {
  int64_t e = est_.load(std::memory_order_relaxed);
  if (e == kNone || gpu_ns == 0) return 0;
  return int64_t(gpu_ns) + e;
}

void ClockOffset::reset() {
  cur_min_.store(kNone, std::memory_order_relaxed);
  prev_min_.store(kNone, std::memory_order_relaxed);
  est_.store(kNone, std::memory_order_relaxed);
  n_.store(0, std::memory_order_relaxed);
}

}  // namespace scout::core
