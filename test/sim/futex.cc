#include "test/sim/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace scout::sim {

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  // FUTEX_WAIT without FUTEX_PRIVATE_FLAG: the word lives in memory shared between processes.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void publish(std::atomic<uint32_t>* epoch) {
  epoch->fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(epoch);
}

void sleep_until_ns(int64_t deadline_ns) {
  if (deadline_ns <= 0) return;
  timespec ts;
  ts.tv_sec = deadline_ns / 1000000000;
  ts.tv_nsec = deadline_ns % 1000000000;
  while (::clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr) == EINTR) {}
}

void sleep_ms(int64_t ms) {
  if (ms <= 0) return;
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  sleep_until_ns(int64_t(now.tv_sec) * 1000000000 + now.tv_nsec + ms * 1000000);
}

}  // namespace scout::sim
