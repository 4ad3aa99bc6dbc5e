#include "replay/outlier.h"

#include <algorithm>
#include <cstdlib>

namespace scout::replay {

int64_t median_of(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

int64_t mad_of(const std::vector<int64_t>& v, int64_t med) {
  std::vector<int64_t> d;
  d.reserve(v.size());
  for (int64_t x : v) d.push_back(std::llabs(x - med));
  return median_of(std::move(d));
}

std::vector<int> slow_outliers(const std::vector<int64_t>& ns, const OutlierRule& rule) {
  std::vector<int64_t> valid;
  for (int64_t x : ns)
    if (x >= 0) valid.push_back(x);
  std::vector<int> out;
  if (valid.size() < 3) return out;
  const int64_t med = median_of(valid);
  const int64_t mad = mad_of(valid, med);
  const double floor_ns = std::max(rule.min_ratio * double(med), double(med + rule.min_ns));
  for (size_t i = 0; i < ns.size(); ++i) {
    if (ns[i] < 0) continue;
    const bool beyond_mad = mad == 0 ? ns[i] > med : double(ns[i] - med) > rule.mad_k * double(mad);
    if (beyond_mad && double(ns[i]) > floor_ns) out.push_back(int(i));
  }
  return out;
}

std::vector<int> confirmed_outliers(const std::vector<std::vector<int64_t>>& rounds, const OutlierRule& rule) {
  size_t n = 0;
  for (const auto& r : rounds) n = std::max(n, r.size());
  std::vector<int> hits(n, 0);
  for (const auto& r : rounds)
    for (int i : slow_outliers(r, rule)) hits[i]++;
  std::vector<int> out;
  for (size_t i = 0; i < n; ++i)
    if (hits[i] >= rule.confirm_rounds) out.push_back(int(i));
  return out;
}

}  // namespace scout::replay
