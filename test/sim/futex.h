// Blocking waits between processes on a shared-memory word (Linux futex, not process-private),
// so scout-sim ranks block instead of spinning: 64 ranks must run on 2 cores.
#pragma once

#include <atomic>
#include <cstdint>

namespace scout::sim {

// Blocks while *word == expected (returns early on a wake, a signal or a spurious wake-up).
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected);

// Wakes every waiter blocked on `word`, in any process that maps it.
void futex_wake_all(std::atomic<uint32_t>* word);

// Announces a state change guarded by `epoch`: bumps it (release) and wakes all waiters.
void publish(std::atomic<uint32_t>* epoch);

// Waits until pred() is true. The state pred() reads must be published with publish(epoch)
// after it changes. Never spins: one futex wait per observed epoch.
template <class Pred>
void wait_for(std::atomic<uint32_t>* epoch, Pred pred) {
  for (;;) {
    uint32_t e = epoch->load(std::memory_order_acquire);
    if (pred()) return;
    futex_wait(epoch, e);
  }
}

// Sleeps until CLOCK_REALTIME reaches `deadline_ns` (returns at once if it has).
void sleep_until_ns(int64_t deadline_ns);

// Sleeps `ms` milliseconds (nothing for ms <= 0), resuming after signals.
void sleep_ms(int64_t ms);

}  // namespace scout::sim
