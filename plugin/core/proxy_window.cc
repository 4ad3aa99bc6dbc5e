// ProxyStep windows (proxy_window.h).
#include "plugin/core/proxy_window.h"

#include <sched.h>

namespace scout::core {

void ProxyWindows::configure(shm::LinkTableHeader* hdr, int64_t window_ns, double budget, uint64_t max_steps,
                             bool keep) {
  if (hdr == nullptr) return;
  hdr_ = hdr;
  keep_ = keep;
  window_ns_ = window_ns > 0 ? window_ns : 1;
  period_ns_ = budget > 0 && budget < 1 ? int64_t(double(window_ns_) / budget) : window_ns_;
  max_steps_ = max_steps > 0 ? max_steps : 1;
  hdr_->proxy_state.store(shm::kProxyWaiting, std::memory_order_relaxed);
  win_next_ns_ = 0;  // the first API call opens the first window
  next_ns_.store(0, std::memory_order_relaxed);
}

int ProxyWindows::attach_mask(int* mask) {
  if (hdr_ == nullptr || mask == nullptr) return 0;
  while (switching_.exchange(true, std::memory_order_acquire)) sched_yield();
  if (mask_ == nullptr) mask_ = mask;
  if (keep_ && mask == mask_) apply_bits(true);
  int added = mask == mask_ && bits_on_ ? added_ : 0;
  switching_.store(false, std::memory_order_release);
  return added;
}

void ProxyWindows::apply_bits(bool on) {
  if (on && !bits_on_) {
    int before = __atomic_fetch_or(mask_, kProxyMaskBits, __ATOMIC_RELAXED);
    added_ = kProxyMaskBits & ~before;
    bits_on_ = true;
  } else if (!on && bits_on_ && !keep_) {
    if (added_ != 0) __atomic_fetch_and(mask_, ~added_, __ATOMIC_RELAXED);
    added_ = 0;
    bits_on_ = false;
  }
}

void ProxyWindows::reschedule() {
  int64_t next = win_next_ns_;
  if (trace_until_ > 0 && trace_until_ < next) next = trace_until_;
  next_ns_.store(next, std::memory_order_relaxed);
}

void ProxyWindows::open_window(int64_t now_ns) {
  apply_bits(true);
  steps_at_open_.store(hdr_->proxy_steps.load(std::memory_order_relaxed), std::memory_order_relaxed);
  hdr_->proxy_windows.fetch_add(1, std::memory_order_relaxed);
  hdr_->proxy_window_start_ns.store(now_ns, std::memory_order_relaxed);
  hdr_->proxy_window_end_ns.store(0, std::memory_order_relaxed);
  hdr_->proxy_state.store(shm::kProxyOpen, std::memory_order_relaxed);
  cur_.store((cur_.load(std::memory_order_relaxed) | 1u) + 2u, std::memory_order_release);
  win_next_ns_ = now_ns + window_ns_;
  reschedule();
}

void ProxyWindows::close_window(int64_t now_ns) {
  apply_bits(trace_until_ > now_ns);  // a trace keeps the bits
  cur_.store(cur_.load(std::memory_order_relaxed) & ~1u, std::memory_order_release);
  int64_t start = hdr_->proxy_window_start_ns.load(std::memory_order_relaxed);
  if (now_ns > start) hdr_->proxy_window_ns.fetch_add(uint64_t(now_ns - start), std::memory_order_relaxed);
  hdr_->proxy_window_end_ns.store(now_ns, std::memory_order_relaxed);
  hdr_->proxy_state.store(shm::kProxyWaiting, std::memory_order_relaxed);
  win_next_ns_ = start + period_ns_;
  reschedule();
}

void ProxyWindows::end_trace() {
  trace_until_ = 0;
  if (trace_flag_ != nullptr) trace_flag_->store(0, std::memory_order_relaxed);
  trace_flag_ = nullptr;
  if (trace_hdr_ != nullptr) trace_hdr_->trace_state.store(shm::kTraceExpired, std::memory_order_relaxed);
  trace_hdr_ = nullptr;
  apply_bits(is_open(cur_.load(std::memory_order_relaxed)));
}

void ProxyWindows::tick_slow(int64_t now_ns) {
  if (hdr_ == nullptr || mask_ == nullptr) return;
  if (switching_.exchange(true, std::memory_order_acquire)) return;  // another thread switches
  if (trace_until_ > 0 && now_ns >= trace_until_) end_trace();
  if (now_ns >= win_next_ns_) {
    if (is_open(cur_.load(std::memory_order_relaxed))) {
      close_window(now_ns);
    } else {
      open_window(now_ns);
    }
  }
  reschedule();
  switching_.store(false, std::memory_order_release);
}

bool ProxyWindows::trace(int64_t now_ns, int64_t until_ns, std::atomic<uint8_t>* flag, shm::ProgressTableHeader* hdr) {
  if (hdr_ == nullptr || mask_ == nullptr) return false;
  if (switching_.exchange(true, std::memory_order_acquire)) return false;
  if (trace_flag_ != nullptr && trace_flag_ != flag) trace_flag_->store(0, std::memory_order_relaxed);
  trace_flag_ = flag;
  trace_hdr_ = hdr;
  if (until_ns > now_ns) {
    trace_until_ = until_ns;
    if (flag != nullptr) flag->store(1, std::memory_order_relaxed);
    if (hdr != nullptr) hdr->trace_state.store(shm::kTraceActive, std::memory_order_relaxed);
    apply_bits(true);
  } else {
    end_trace();
  }
  reschedule();
  switching_.store(false, std::memory_order_release);
  return true;
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
  trace_until_ = 0;
  keep_ = false;
  if (is_open(cur_.load(std::memory_order_relaxed))) close_window(now_ns);
  if (mask_ != nullptr) apply_bits(false);
  win_next_ns_ = INT64_MAX;
  next_ns_.store(INT64_MAX, std::memory_order_relaxed);
  switching_.store(false, std::memory_order_release);
}

}  // namespace scout::core
