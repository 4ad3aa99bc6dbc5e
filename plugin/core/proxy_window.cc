// ProxyStep windows (proxy_window.h).
#include "plugin/core/proxy_window.h"

#include <sched.h>

namespace scout::core {

void ProxyWindows::configure(shm::LinkTableHeader* hdr, int64_t window_ns, double budget, uint64_t max_steps) {
  if (hdr == nullptr) return;
  hdr_ = hdr;
  window_ns_ = window_ns > 0 ? window_ns : 1;
  period_ns_ = budget > 0 && budget < 1 ? int64_t(double(window_ns_) / budget) : window_ns_;
  max_steps_ = max_steps > 0 ? max_steps : 1;
  hdr_->proxy_state.store(shm::kProxyWaiting, std::memory_order_relaxed);
  next_ns_.store(0, std::memory_order_relaxed);  // the first API call opens the first window
}

int ProxyWindows::attach_mask(int* mask) {
  if (hdr_ == nullptr || mask == nullptr) return 0;
  while (switching_.exchange(true, std::memory_order_acquire)) sched_yield();
  if (mask_ == nullptr) mask_ = mask;
  int added = mask == mask_ && is_open(cur_.load(std::memory_order_relaxed)) ? added_ : 0;
  switching_.store(false, std::memory_order_release);
  return added;
}

void ProxyWindows::open_window(int64_t now_ns) {
  int before = __atomic_fetch_or(mask_, kProxyMaskBits, __ATOMIC_RELAXED);
  added_ = kProxyMaskBits & ~before;
  steps_at_open_.store(hdr_->proxy_steps.load(std::memory_order_relaxed), std::memory_order_relaxed);
  hdr_->proxy_windows.fetch_add(1, std::memory_order_relaxed);
  hdr_->proxy_window_start_ns.store(now_ns, std::memory_order_relaxed);
  hdr_->proxy_window_end_ns.store(0, std::memory_order_relaxed);
  hdr_->proxy_state.store(shm::kProxyOpen, std::memory_order_relaxed);
  cur_.store((cur_.load(std::memory_order_relaxed) | 1u) + 2u, std::memory_order_release);
  next_ns_.store(now_ns + window_ns_, std::memory_order_relaxed);
}

void ProxyWindows::close_window(int64_t now_ns) {
  if (added_ != 0) __atomic_fetch_and(mask_, ~added_, __ATOMIC_RELAXED);
  added_ = 0;
  cur_.store(cur_.load(std::memory_order_relaxed) & ~1u, std::memory_order_release);
  int64_t start = hdr_->proxy_window_start_ns.load(std::memory_order_relaxed);
  if (now_ns > start) hdr_->proxy_window_ns.fetch_add(uint64_t(now_ns - start), std::memory_order_relaxed);
  hdr_->proxy_window_end_ns.store(now_ns, std::memory_order_relaxed);
  hdr_->proxy_state.store(shm::kProxyWaiting, std::memory_order_relaxed);
  next_ns_.store(start + period_ns_, std::memory_order_relaxed);
}

void ProxyWindows::tick_slow(int64_t now_ns) {
  if (hdr_ == nullptr || mask_ == nullptr) return;
  if (switching_.exchange(true, std::memory_order_acquire)) return;  // another thread switches
  if (now_ns >= next_ns_.load(std::memory_order_relaxed)) {
    if (is_open(cur_.load(std::memory_order_relaxed))) {
      close_window(now_ns);
    } else {
      open_window(now_ns);
    }
  }
  switching_.store(false, std::memory_order_release);
}

void ProxyWindows::step_timed(uint32_t cur, int64_t now_ns) {
  uint64_t n = hdr_->proxy_steps.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n - steps_at_open_.load(std::memory_order_relaxed) < max_steps_) return;
  // The window is full: close it now unless a switch is under way (which then closes it).
  if (switching_.exchange(true, std::memory_order_acquire)) return;
  if (cur_.load(std::memory_order_relaxed) == cur && is_open(cur)) close_window(now_ns);
  switching_.store(false, std::memory_order_release);
}

void ProxyWindows::stop(int64_t now_ns) {
  if (hdr_ == nullptr) return;
  while (switching_.exchange(true, std::memory_order_acquire)) sched_yield();
  if (is_open(cur_.load(std::memory_order_relaxed))) close_window(now_ns);
  next_ns_.store(INT64_MAX, std::memory_order_relaxed);
  switching_.store(false, std::memory_order_release);
}

}  // namespace scout::core
