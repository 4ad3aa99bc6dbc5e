#include "observer/ingest/sigbus_guard.h"

#include <signal.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace scout::obs {

namespace {
thread_local sigjmp_buf t_jump;
thread_local volatile sig_atomic_t t_armed = 0;
std::atomic<unsigned long> g_faults{0};
std::once_flag g_once;

void on_sigbus(int sig, siginfo_t*, void*) {
  if (t_armed) {
    t_armed = 0;
    g_faults.fetch_add(1, std::memory_order_relaxed);
    siglongjmp(t_jump, 1);
  }
  // Not ours: default action.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  raise(sig);
}
}  // namespace

SigbusGuard::SigbusGuard() {
  std::call_once(g_once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, nullptr);
  });
}

sigjmp_buf* SigbusGuard::arm() {
  t_armed = 1;
  return &t_jump;
}

void SigbusGuard::leave() { t_armed = 0; }

unsigned long SigbusGuard::faults() { return g_faults.load(std::memory_order_relaxed); }

}  // namespace scout::obs
