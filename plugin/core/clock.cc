// Thread ids and the GPU clock offset estimator (clock.h).
#include "plugin/core/clock.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "plugin/core/thread_cache.h"

namespace scout::core {

__thread ThreadCache t_cache = {0, 0, 0, nullptr};

uint32_t current_tid_slow() {
  uint32_t t = uint32_t(::syscall(SYS_gettid));
  t_cache.tid = t;
  return t;
}

int64_t ClockOffset::sample(int64_t cpu_now_ns, uint64_t gpu_ns) {
  int64_t d = cpu_now_ns - int64_t(gpu_ns);
  // Samples of one communicator come from its proxy thread: a plain increment (a rare lost
  // count under concurrency only shifts a window boundary).
  uint32_t n = n_.load(std::memory_order_relaxed);
  n_.store(n + 1, std::memory_order_relaxed);
  if (n % kWindow == 0 && n != 0) {
    // Roll the window: the previous window's minimum is forgotten, the current one ages.
    prev_min_.store(cur_min_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    cur_min_.store(d, std::memory_order_relaxed);
  } else {
    int64_t cur = cur_min_.load(std::memory_order_relaxed);
    while (d < cur && !cur_min_.compare_exchange_weak(cur, d, std::memory_order_relaxed)) {}
  }
  int64_t a = cur_min_.load(std::memory_order_relaxed);
  int64_t b = prev_min_.load(std::memory_order_relaxed);
  int64_t e = a < b ? a : b;
  if (est_.load(std::memory_order_relaxed) != e) est_.store(e, std::memory_order_relaxed);
  return e;
}

void ClockOffset::reset() {
  cur_min_.store(kNone, std::memory_order_relaxed);
  prev_min_.store(kNone, std::memory_order_relaxed);
  est_.store(kNone, std::memory_order_relaxed);
  n_.store(0, std::memory_order_relaxed);
}

}  // namespace scout::core
