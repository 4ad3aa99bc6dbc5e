#include "observer/detect/stall.h"

#include <algorithm>
#include <cmath>

#include "observer/detect/finding_util.h"

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

StallClock StallClock::given(int64_t threshold_ns, size_t gaps, int64_t p99_ns) {
  StallClock c;
  c.given_ns_ = std::max<int64_t>(1, threshold_ns);
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

int64_t StallClock::threshold_ns(int64_t hard_ns, const ColdBasis& cold_basis) const {
  if (given_ns_ > 0) return std::min(hard_ns, given_ns_);
  if (!cold()) {
    int64_t t = std::max(kStallFloorNs, int64_t(std::llround(double(p99_ns()) * kStallMargin)));
    return std::min(hard_ns, t);
  }
  if (cold_basis.held_max_ns <= 0 && cold_basis.class_ns <= 0) return std::min(hard_ns, kStallColdNs);
  int64_t t = 0;
  if (cold_basis.held_max_ns > 0) {
    t = std::clamp(int64_t(std::llround(double(cold_basis.held_max_ns) * kStallMargin)), kStallFloorNs, kStallColdNs);
  }
  t = std::max(t, cold_basis.class_ns);
  return std::min(hard_ns, t);
}

const char* StallClock::basis(const ColdBasis& cold_basis) const {
  if (given_ns_ > 0) return "given";
  if (!cold()) return "gaps";
  if (cold_basis.held_max_ns <= 0 && cold_basis.class_ns <= 0) return "none";
  const int64_t own =
      cold_basis.held_max_ns > 0
          ? std::clamp(int64_t(std::llround(double(cold_basis.held_max_ns) * kStallMargin)), kStallFloorNs, kStallColdNs)
          : 0;
  return cold_basis.class_ns > own ? "class" : "own";
}

StallClass stall_class(const Comm& c) {
  StallClass k{comm_class(c), 0};
  for (int r : c.known_ranks) {
    const RankProgress& rp = c.ranks[r];
    for (int f = 0; f < int(shm::kNumNumberedFuncs) && f < 7; ++f)
      if (rp.issued[f] > 0) k.mix |= uint8_t(1u << f);
  }
  if (!c.p2p.empty()) k.mix |= 0x80;
  for (const auto& [id, op] : c.ops)
    if (id.cls == OpClass::kP2p) {
      k.mix |= 0x80;
      break;
    }
  return k;
}

std::map<CommKey, ColdBasis> cold_bases(const Model& m, const std::function<const StallClock*(const CommKey&)>& clock_of,
                                        int64_t hard_ns) {
  std::map<CommKey, ColdBasis> out;
  // Warm communicators by class: (mix, threshold).
  std::map<std::string, std::vector<std::pair<uint8_t, int64_t>>> warm;
  std::map<CommKey, StallClass> classes;
  for (const auto& [k, c] : m.comms()) {
    const StallClock* clk = clock_of(k);
    if (clk == nullptr) continue;
    StallClass sc = stall_class(c);
    if (!clk->cold()) warm[sc.cls].emplace_back(sc.mix, clk->threshold_ns(hard_ns));
    classes.emplace(k, std::move(sc));
  }
  for (const auto& [k, sc] : classes) {
    ColdBasis b;
    b.held_max_ns = m.comms().at(k).held_max_ns;
    if (auto w = warm.find(sc.cls); w != warm.end()) {
      for (const auto& [mix, t] : w->second)
        if ((sc.mix & ~mix) == 0) b.class_ns = std::max(b.class_ns, t);
    }
    out.emplace(k, b);
  }
  return out;
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
