// Adaptive sampling level (docs/fingerprint.md, "Budget").
#include <cmath>

#include "scout/fingerprint.h"

namespace scout::fp {

uint32_t Budget::add(uint64_t fingerprint_ns, uint64_t kernel_ns) {
  if (!(budget_ > 0)) return level_;  // adaptation off
  fp_ns_ += fingerprint_ns;
  kernel_ns_ += kernel_ns;
  ++samples_;
  if (samples_ < kWindowOps && kernel_ns_ < kWindowKernelNs) return level_;
  // One window: the fraction of kernel time spent fingerprinting at the current level.
  const double ratio = kernel_ns_ > 0 ? double(fp_ns_) / double(kernel_ns_) : (fp_ns_ > 0 ? 1e9 : 0);
  if (ratio > budget_) {
    // Each level halves the sampled operations: jump straight to the level that fits.
    uint32_t up = uint32_t(std::ceil(std::log2(ratio / budget_)));
    if (up < 1) up = 1;
    level_ = (level_ + up > max_level_) ? max_level_ : level_ + up;
  } else if (ratio < budget_ / 4 && level_ > 0) {
    // One level down doubles the cost: stays under budget / 2 (hysteresis against flapping).
    --level_;
  }
  fp_ns_ = kernel_ns_ = 0;
  samples_ = 0;
  return level_;
}

}  // namespace scout::fp
