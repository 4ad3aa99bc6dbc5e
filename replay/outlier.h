// The replay timing rule (docs/replay.md, "Timing"): a GPU is slow when its time is an outlier
// among the GPUs that ran the same recipe, by median and MAD, and slower than
// max(min_ratio x median, median + min_ns); it is confirmed when that holds in at least
// `confirm_rounds` rounds. The numbers are those of nvbench-style measurement and of the SCOUT
// reference replay (straggler_min_slowdown_ratio 1.1, _ms 2.0, confirmation rounds 2).
#pragma once

#include <cstdint>
#include <vector>

namespace scout::replay {

struct OutlierRule {
  double min_ratio = 1.1;      // slower than min_ratio x median ...
  int64_t min_ns = 2'000'000;  // ... and than median + min_ns
  double mad_k = 3.0;          // and more than mad_k x MAD above the median (MAD > 0)
  int confirm_rounds = 2;      // rounds in which a GPU must be an outlier
};

// Median as sorted[n/2] (the upper median for even n; 0 for an empty list).
int64_t median_of(std::vector<int64_t> v);
// Median absolute deviation from `med`.
int64_t mad_of(const std::vector<int64_t>& v, int64_t med);

// Indices (into `ns`) of the slow outliers of one round. Fewer than 3 samples give none: with
// two GPUs nobody can be called slower than "the others".
std::vector<int> slow_outliers(const std::vector<int64_t>& ns, const OutlierRule& rule);

// Indices that are slow outliers in at least rule.confirm_rounds of `rounds` (each round: one
// time per index, same length; a negative time means "no sample" and never counts).
std::vector<int> confirmed_outliers(const std::vector<std::vector<int64_t>>& rounds, const OutlierRule& rule);

}  // namespace scout::replay
