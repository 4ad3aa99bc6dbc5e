// CPU clocks, thread ids, and the GPU-clock to wall-clock conversion of KernelCh timestamps.
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/core/wall_clock.h"  // now_ns(): CLOCK_REALTIME in ns

namespace scout::core {

// Estimates the offset between NCCL's KernelCh timestamps (pTimer: the GPU's %globaltimer in
// ns, docs/nccl-notes.md §3.5) and CLOCK_REALTIME, so that wall_ns = pTimer + offset.
//
// Method: a KernelCh callback is delivered by the proxy thread some time d >= 0 after the GPU
// wrote the timestamp it carries (the start time at KernelCh start, the stop times at the last
// channel's stop), so (cpu_now - that timestamp) = offset + d is an upper bound of the offset. The
// estimate is the minimum of these samples over the current and the previous window of
// kWindow samples (a sliding minimum, so it follows slow drift of either clock). Its error is
// the smallest proxy-callback delay seen in the window (typically the proxy polling latency,
// microseconds), always in the direction of converting GPU times slightly late. Lock-free; safe
// from several threads; one per communicator.
class ClockOffset {
 public:
  static constexpr uint32_t kWindow = 4096;

  // Adds one sample; returns the estimate in force after it.
  int64_t sample(int64_t cpu_now_ns, uint64_t gpu_ns);

  // The current estimate; `valid` false (and 0 returned) before the first sample.
  int64_t estimate(bool* valid = nullptr) const {
    int64_t e = est_.load(std::memory_order_relaxed);
    if (valid) *valid = e != kNone;
    return e == kNone ? 0 : e;
  }

  // Converts a GPU timestamp with the current estimate; 0 when no estimate or gpu_ns == 0.
  int64_t to_wall(uint64_t gpu_ns) const {
    int64_t e = est_.load(std::memory_order_relaxed);
    if (e == kNone || gpu_ns == 0) return 0;
    return int64_t(gpu_ns) + e;
  }

  void reset();

 private:
  static constexpr int64_t kNone = INT64_MAX;
  std::atomic<int64_t> cur_min_{kNone};
  std::atomic<int64_t> prev_min_{kNone};
  std::atomic<int64_t> est_{kNone};
  std::atomic<uint32_t> n_{0};
};

}  // namespace scout::core
