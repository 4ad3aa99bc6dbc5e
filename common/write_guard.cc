#include "common/write_guard.h"

#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <mutex>

namespace scout::shm {

namespace {

struct Slot {
  std::atomic<uintptr_t> base{0};
  std::atomic<size_t> bytes{0};
  std::atomic<bool> lost{false};
};

Slot g_slots[kMaxGuarded];
std::atomic<uint64_t> g_lost{0};
struct sigaction g_previous;
std::once_flag g_installed;

void chain(int sig, siginfo_t* info, void* ctx) {
  const struct sigaction& p = g_previous;
  if (p.sa_flags & SA_SIGINFO) {
    if (p.sa_sigaction != nullptr) {
      p.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN && p.sa_handler != nullptr) {
    p.sa_handler(sig);
    return;
  }
  // No handler before ours: the default action. Restored here, the faulting instruction runs
  // again on return and the process dies as it would have without scout.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGBUS, &dfl, nullptr);
  if (info == nullptr || info->si_code <= 0) ::raise(SIGBUS);  // sent, not a fault: deliver it
}

void on_sigbus(int sig, siginfo_t* info, void* ctx) {
  if (info != nullptr && info->si_code == BUS_ADRERR) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
    for (Slot& s : g_slots) {
      const uintptr_t b = s.base.load(std::memory_order_acquire);
      const size_t n = s.bytes.load(std::memory_order_acquire);
      if (b == 0 || a < b || a >= b + n) continue;
      void* m = ::mmap(reinterpret_cast<void*>(b), n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                       -1, 0);
      if (m == MAP_FAILED) break;  // cannot recover: as if unguarded
      if (!s.lost.exchange(true)) g_lost.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  chain(sig, info, ctx);
}

void install() {
  struct sigaction sa = {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace

void guard_mapping(void* base, size_t bytes) {
  std::call_once(g_installed, install);
  for (Slot& s : g_slots) {
    uintptr_t expected = 0;
    if (s.base.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(base), std::memory_order_acq_rel)) {
      s.lost.store(false, std::memory_order_release);
      s.bytes.store(bytes, std::memory_order_release);  // the handler matches it from here on
      return;
    }
  }
}

void unguard_mapping(void* base) {
  for (Slot& s : g_slots) {
    if (s.base.load(std::memory_order_acquire) != reinterpret_cast<uintptr_t>(base)) continue;
    s.bytes.store(0, std::memory_order_release);  // the handler no longer matches it
    s.base.store(0, std::memory_order_release);
    return;
  }
}

bool mapping_lost(const void* base) {
  for (const Slot& s : g_slots)
    if (s.base.load(std::memory_order_acquire) == reinterpret_cast<uintptr_t>(base))
      return s.lost.load(std::memory_order_acquire);
  return false;
}

uint64_t mappings_lost() { return g_lost.load(std::memory_order_relaxed); }

}  // namespace scout::shm
