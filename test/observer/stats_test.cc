// Order statistics the detectors' self-calibrating thresholds use (observer/detect/stats.h).
#include "observer/detect/stats.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace scout::obs {
namespace {

TEST(Stats, MedianOfOddAndEvenSizesLeavesTheInputAlone) {
  const std::vector<int64_t> odd{100, 3, 1, 4, 2};
  EXPECT_DOUBLE_EQ(median(odd), 3.0);
  EXPECT_EQ(odd, (std::vector<int64_t>{100, 3, 1, 4, 2}));
  EXPECT_DOUBLE_EQ(median(std::vector<int64_t>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{}), 0.0);
}

TEST(Stats, MadIsTheScaledMedianDeviation) {
  // Deviations from the median 3: {97, 0, 2, 1, 1} -> median 1.
  EXPECT_DOUBLE_EQ(mad(std::vector<int64_t>{100, 3, 1, 4, 2}), 1.4826);
  // Median 2.5, deviations {1.5, 0.5, 0.5, 1.5} -> median 1.
  EXPECT_DOUBLE_EQ(mad(std::vector<int64_t>{4, 1, 3, 2}), 1.4826);
  EXPECT_DOUBLE_EQ(mad(std::vector<int64_t>{7, 7, 7}), 0.0);
  EXPECT_DOUBLE_EQ(mad(std::vector<int64_t>{}), 0.0);
}

TEST(Stats, NoiseThresholdIsMedianPlusKMadWithAFloor) {
  const std::vector<int64_t> v{100, 3, 1, 4, 2};
  EXPECT_DOUBLE_EQ(noise_threshold(v, 5.0, 0.0), 3.0 + 5.0 * 1.4826);
  EXPECT_DOUBLE_EQ(noise_threshold(v, 5.0, 20.0), 20.0);
  EXPECT_DOUBLE_EQ(noise_threshold(std::vector<int64_t>{}, 5.0, 20.0), 20.0);
  // The same value as its definition, on a sample the size the straggler detector keeps.
  std::vector<int64_t> big;
  for (int i = 0; i < 4096; ++i) big.push_back((int64_t(i) * 7919) % 1000003);
  EXPECT_DOUBLE_EQ(noise_threshold(big, 5.0, 0.0), median(big) + 5.0 * mad(big));
}

TEST(Stats, BeyondRateNeedsMoreThanTheBinomialExpectation) {
  // n p + z sqrt(n p (1-p)) = 2 + 6 * sqrt(1.8) = 10.05
  EXPECT_FALSE(beyond_rate(10, 20, 0.1, 6.0, 4));
  EXPECT_TRUE(beyond_rate(11, 20, 0.1, 6.0, 4));
  EXPECT_FALSE(beyond_rate(3, 20, 0.0, 0.0, 4));  // fewer than min_hits
  EXPECT_FALSE(beyond_rate(5, 0, 0.1, 6.0, 4));   // no trials
  // A quiet background is clamped to 0.05: 20 * 0.05 + 6 * sqrt(0.95) = 6.85
  EXPECT_FALSE(beyond_rate(6, 20, 0.0, 6.0, 4));
  EXPECT_TRUE(beyond_rate(7, 20, 0.0, 6.0, 4));
}

}  // namespace
}  // namespace scout::obs
