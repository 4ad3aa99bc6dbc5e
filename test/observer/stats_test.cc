// Order statistics the detectors' self-calibrating thresholds use (observer/detect/stats.h).
#include "observer/detect/stats.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "observer/detect/straggler.h"

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

// Tail values computed by hand from the binomial sum (sum over i >= k of C(n, i) p^i (1-p)^(n-i)).
TEST(Stats, BinomialTailIsTheExactUpperTail) {
  EXPECT_DOUBLE_EQ(binomial_tail(0, 6, 0.05), 1.0);
  EXPECT_EQ(binomial_tail(7, 6, 0.05), 0.0);
  // 15 p^4 q^2 + 6 p^5 q + p^6 at p = 0.05
  EXPECT_NEAR(binomial_tail(4, 6, 0.05), 8.640625e-05, 1e-15);
  EXPECT_NEAR(binomial_tail(6, 6, 0.05), 1.5625e-08, 1e-20);
  EXPECT_NEAR(binomial_tail(14, 20, 0.1), 2.1546783532e-10, 1e-19);
  EXPECT_NEAR(binomial_tail(19, 64, 0.05), 1.8737830227e-10, 1e-19);
}

// Phi(-6) = 9.87e-10: hits beyond the background when their tail is smaller.
TEST(Stats, BeyondRateNeedsATailAsUnlikelyAsZStandardDeviations) {
  // n = 20, p = 0.1: P(X >= 13) = 3.9e-9, P(X >= 14) = 2.2e-10.
  EXPECT_FALSE(beyond_rate(13, 20, 0.1, 6.0, 4));
  EXPECT_TRUE(beyond_rate(14, 20, 0.1, 6.0, 4));
  EXPECT_FALSE(beyond_rate(3, 20, 0.0, 0.0, 4));  // fewer than min_hits
  EXPECT_FALSE(beyond_rate(5, 0, 0.1, 6.0, 4));   // no trials
  // A quiet background is clamped to 0.05: P(X >= 10) = 1.1e-8, P(X >= 11) = 5.4e-10.
  EXPECT_FALSE(beyond_rate(10, 20, 0.0, 6.0, 4));
  EXPECT_TRUE(beyond_rate(11, 20, 0.0, 6.0, 4));
  // A full window of 64: P(X >= 18) = 1.5e-9, P(X >= 19) = 1.9e-10.
  EXPECT_FALSE(beyond_rate(18, 64, 0.0, 6.0, 4));
  EXPECT_TRUE(beyond_rate(19, 64, 0.0, 6.0, 4));
}

// The false straggler of a loaded machine (multinode_e2e_test, a world communicator called once a
// step): one rank late in 4 of the 6 collectives scored so far, nobody else. The normal
// approximation put 4 beyond 0.3 + 6 * 0.53 = 3.5; the tail is 8.6e-5, about 3.8 standard
// deviations: not a straggler at z = 6. Even 6 of 6 (1.6e-8) is not: a window that short cannot
// reach 1e-9.
TEST(Stats, FourLateOfSixAtAQuietBackgroundAreNotSixStandardDeviations) {
  EXPECT_FALSE(beyond_rate(4, 6, 0.0, 6.0, 4));
  EXPECT_FALSE(beyond_rate(6, 6, 0.0, 6.0, 4));
  EXPECT_TRUE(beyond_rate(4, 6, 0.0, 3.7, 4));  // Phi(-3.7) = 1.1e-4 > 8.6e-5
}

// The default z = 4.5 (Phi(-4.5) = 3.4e-6, docs/observer.md "Stragglers"): a full window of 64
// at the quiet background needs 14 late operations, as the normal approximation at z = 6 did
// (P(X >= 13) = 1.4e-5, P(X >= 14) = 2.7e-6); a short one needs more: 5 of 6 (1.8e-6), 8 of 16
// (P(X >= 7) = 6.0e-6, P(X >= 8) = 3.5e-7).
TEST(Stats, DefaultZKeepsTheFullWindowsBarAndRaisesTheShortOnes) {
  const double z = StragglerConfig{}.z;
  EXPECT_EQ(z, 4.5);
  EXPECT_FALSE(beyond_rate(13, 64, 0.0, z, 4));
  EXPECT_TRUE(beyond_rate(14, 64, 0.0, z, 4));
  EXPECT_FALSE(beyond_rate(4, 6, 0.0, z, 4));
  EXPECT_TRUE(beyond_rate(5, 6, 0.0, z, 4));
  EXPECT_FALSE(beyond_rate(7, 16, 0.0, z, 4));
  EXPECT_TRUE(beyond_rate(8, 16, 0.0, z, 4));
}

}  // namespace
}  // namespace scout::obs
