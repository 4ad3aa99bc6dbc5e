#include "observer/detect/stall.h"

#include <algorithm>
#include <cmath>

namespace scout::obs {

void StallClock::observe(int64_t last_progress_ns, bool inflight) {
  const bool progressed = mark_ > 0 && last_progress_ns > mark_;
  if (progressed && (inflight_ || progressed_)) add_gap(last_progress_ns - mark_);
  mark_ = std::max(mark_, last_progress_ns);
  inflight_ = inflight;
  progressed_ = progressed;
}

void StallClock::add_gap(int64_t gap_ns) {
  gaps_.push_back(gap_ns);
  while (gaps_.size() > kStallWindow) gaps_.pop_front();
}

StallClock StallClock::summary(size_t gaps, int64_t p99_ns) {
  StallClock c;
  c.gaps_.assign(std::min(gaps, kStallWindow), std::max<int64_t>(0, p99_ns));
  return c;
}

int64_t StallClock::p99_ns() const {
  if (gaps_.empty()) return 0;
  std::vector<int64_t> v(gaps_.begin(), gaps_.end());
  size_t rank = size_t(std::ceil(kStallPercentile * double(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  std::nth_element(v.begin(), v.begin() + long(rank - 1), v.end());
  return v[rank - 1];
}

int64_t StallClock::threshold_ns(int64_t hard_ns) const {
  if (cold()) return std::min(hard_ns, kStallColdNs);
  int64_t t = std::max(kStallFloorNs, int64_t(std::llround(double(p99_ns()) * kStallMargin)));
  return std::min(hard_ns, t);
}

void StallMemory::remember(const StallSignature& sig, int64_t length_ns) {
  episodes_.emplace_back(sig, length_ns);
  while (episodes_.size() > kStallMemory) episodes_.pop_front();
}

int64_t StallMemory::longest_ns(const StallSignature& sig) const {
  int64_t l = 0;
  for (const auto& [s, len] : episodes_) {
    if (s == sig) l = std::max(l, len);
  }
  return l;
}

bool StallMemory::is_repeat(const StallSignature& sig, int64_t stalled_ns) const {
  int64_t l = longest_ns(sig);
  return l > 0 && double(stalled_ns) <= kRepeatSlack * double(l);
}

}  // namespace scout::obs
