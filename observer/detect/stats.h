// Order statistics for detector windows.
#pragma once

#include <algorithm>
#include <cmath>
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

// Median absolute deviation of `v` from its median, scaled by 1.4826 so that it estimates the
// standard deviation of normal noise; 0 for an empty vector.
template <typename T>
double mad(const std::vector<T>& v) {
  if (v.empty()) return 0;
  double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (const T& x : v) dev.push_back(std::fabs(double(x) - m));
  return 1.4826 * median(dev);
}

// Noise threshold of a sample: median + k * MAD, but never below `floor` (same units as `v`).
template <typename T>
double noise_threshold(const std::vector<T>& v, double k, double floor) {
  return std::max(floor, median(v) + k * mad(v));
}

// True when `hits` out of `n` trials is beyond what a background rate `p` explains: at least
// `min_hits`, and more than the binomial expectation n*p plus `z` standard deviations. The rate
// is clamped to [0.05, 0.99]: a quiet background still needs a handful of hits, because noise on
// a busy host comes in bursts that a binomial model underrates.
inline bool beyond_rate(int hits, int n, double p, double z, int min_hits) {
  if (hits < min_hits || n <= 0) return false;
  p = std::clamp(p, 0.05, 0.99);
  double expect = double(n) * p;
  return double(hits) > expect + z * std::sqrt(double(n) * p * (1 - p));
}

}  // namespace scout::obs
