// CPU clocks, thread ids, and the GPU-clock to wall-clock conversion of KernelCh timestamps.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace scout::core {

// CLOCK_REALTIME in ns (vDSO, no system call).
inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Linux tid of the calling thread, cached per thread after the first call.
uint32_t current_tid();

// Estimates the offset between NCCL's KernelCh timestamps (pTimer: the GPU's %globaltimer in
// ns, digest 3.5) and CLOCK_REALTIME, so that wall_ns = pTimer + offset.
//
// Method: every KernelCh start callback is delivered by the proxy thread some time d >= 0 after
// the GPU wrote pTimer, so (cpu_now - pTimer) = offset + d is an upper bound of the offset. The
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
  int64_t estimate(bool* valid = nullptr) const;

  // Converts a GPU timestamp with the current estimate; 0 when no estimate or gpu_ns == 0.
  int64_t to_wall(uint64_t gpu_ns) const;

  void reset();

 private:
  static constexpr int64_t kNone = INT64_MAX;
  std::atomic<int64_t> cur_min_{kNone};
  std::atomic<int64_t> prev_min_{kNone};
  std::atomic<int64_t> est_{kNone};
  std::atomic<uint32_t> n_{0};
};

}  // namespace scout::core
