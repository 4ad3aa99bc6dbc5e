// Order statistics for detector windows.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace scout::obs {

// Median of `v`, which it reorders (mean of the two middle values for even sizes); 0 for an empty
// vector.
template <typename T>
double median_in_place(std::vector<T>& v) {
  if (v.empty()) return 0;
  size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  double hi = double(v[n / 2]);
  if (n % 2) return hi;
  double lo = double(*std::max_element(v.begin(), v.begin() + n / 2));
  return (lo + hi) / 2;
}

// Median of `v` (mean of the two middle values for even sizes); 0 for an empty vector.
template <typename T>
double median(std::vector<T> v) {
  return median_in_place(v);
}

// Median absolute deviation of `v` from `m` (its median), scaled by 1.4826 so that it estimates
// the standard deviation of normal noise; 0 for an empty vector.
template <typename T>
double mad_around(const std::vector<T>& v, double m) {
  std::vector<double> dev;
  dev.reserve(v.size());
  for (const T& x : v) dev.push_back(std::fabs(double(x) - m));
  return 1.4826 * median_in_place(dev);
}

// Median absolute deviation of `v` from its median (see mad_around()); 0 for an empty vector.
template <typename T>
double mad(const std::vector<T>& v) {
  if (v.empty()) return 0;
  return mad_around(v, median(v));
}

// Noise threshold of a sample: median + k * MAD, but never below `floor` (same units as `v`).
// Takes `v` by value and reorders that copy: one order statistic pass per statistic (detectors
// recompute it over thousands of samples).
template <typename T>
double noise_threshold(std::vector<T> v, double k, double floor) {
  if (v.empty()) return std::max(floor, 0.0);
  const double m = median_in_place(v);
  return std::max(floor, m + k * mad_around(v, m));
}

// P(X >= k) for X binomial(n, p), 0 < p < 1: the exact upper tail, summed in log space.
inline double binomial_tail(int k, int n, double p) {
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  const double lp = std::log(p), lq = std::log1p(-p), ln = std::lgamma(double(n) + 1);
  double sum = 0;
  for (int i = k; i <= n; ++i)
    sum += std::exp(ln - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1) + i * lp + (n - i) * lq);
  return std::min(1.0, sum);
}

// True when `hits` out of `n` trials is beyond what a background rate `p` explains: at least
// `min_hits`, and `hits` or more at rate p are less likely than a normal excess of `z` standard
// deviations (binomial_tail(hits, n, p) < Phi(-z); 1e-9 at z = 6). The tail is exact: a detector's
// windows are short and n*p is often well under 1, where the normal approximation
// (n*p + z * sqrt(n*p*(1-p))) takes 4 late operations of 6 at p = 0.05 for 6 standard deviations
// when they are a 1-in-11,600 event (8.6e-5). The rate is clamped to [0.05, 0.99]: a quiet background
// still needs a handful of hits, because noise on a busy host comes in bursts that a binomial
// model underrates.
inline bool beyond_rate(int hits, int n, double p, double z, int min_hits) {
  if (hits < min_hits || n <= 0) return false;
  p = std::clamp(p, 0.05, 0.99);
  return binomial_tail(hits, n, p) < 0.5 * std::erfc(z / std::sqrt(2.0));
}

}  // namespace scout::obs
