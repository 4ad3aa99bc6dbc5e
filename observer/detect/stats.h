// Order statistics for detector windows.
#pragma once

#include <algorithm>
#include <vector>

namespace scout::obs {

// Median of `v` (mean of the two middle values for even sizes); 0 for an empty vector.
template <typename T>
double median(std::vector<T> v) {
  if (v.empty()) return 0;
  size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  double hi = double(v[n / 2]);
  if (n % 2) return hi;
  double lo = double(*std::max_element(v.begin(), v.begin() + n / 2));
  return (lo + hi) / 2;
}

}  // namespace scout::obs
