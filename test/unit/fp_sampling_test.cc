// Sampling decisions and the adaptive budget (docs/fingerprint.md, "Sampling", "Budget").
#include <gtest/gtest.h>

#include <cmath>

#include "scout/fingerprint.h"
#include "scout/shm_format.h"
#include "test/support/reference_sampling.h"

namespace {

using scout::fp::Budget;
using scout::fp::op_selector;
using scout::fp::sampled;

// The selector is the documented XXH64 of commHash, key and func (test/support/reference_sampling.h),
// over inputs that differ in every field, and each field changes it.
TEST(Sampling, SelectorIsTheDocumentedHashOfCommKeyAndFunc) {
  // libxxhash itself: XXH64 of no bytes with seed 0 is 0xef46db3751d8e999 (its published value).
  EXPECT_EQ(XXH64("", 0, 0), 0xef46db3751d8e999ull);
  EXPECT_EQ(scout::testing::reference_selector_seed(), 0x73636f757473656cull);
  uint64_t comm = 0x9e3779b97f4a7c15ull, key = 0;
  for (int i = 0; i < 500; ++i) {
    comm = comm * 6364136223846793005ull + 1442695040888963407ull;
    key = key * 3 + uint64_t(i) * 0x10001;
    const uint8_t func = static_cast<uint8_t>(i % 8);
    ASSERT_EQ(op_selector(comm, func, key), scout::testing::reference_selector(comm, func, key))
        << std::hex << "comm 0x" << comm << " func " << int(func) << " key 0x" << key;
  }
  const uint64_t a = op_selector(0x1234, scout::shm::kFuncAllReduce, 99);
  EXPECT_NE(a, op_selector(0x1235, scout::shm::kFuncAllReduce, 99));
  EXPECT_NE(a, op_selector(0x1234, scout::shm::kFuncAllGather, 99));
  EXPECT_NE(a, op_selector(0x1234, scout::shm::kFuncAllReduce, 100));
  // Pinned: a change means ranks running different scout versions would sample differently.
  EXPECT_EQ(op_selector(0, 0, 0), 0x75feb9a7ec12e803ull);
}

TEST(Sampling, LevelZeroPeriodOneSamplesEverything) {
  for (uint64_t k = 0; k < 100; ++k) EXPECT_TRUE(sampled(7, 4, k, 0, 0));
}

TEST(Sampling, NestedLevelsAndRates) {
  const uint64_t comm = 0xfeedface;
  const uint64_t n = 1 << 16;
  uint64_t count[6] = {};
  for (uint64_t k = 0; k < n; ++k) {
    for (uint32_t level = 0; level < 6; ++level) {
      bool s = sampled(comm, scout::shm::kFuncAllReduce, k, 2, level);
      count[level] += s;
      // Nested: sampled at a higher level implies sampled at every lower level.
      if (s && level > 0) { EXPECT_TRUE(sampled(comm, scout::shm::kFuncAllReduce, k, 2, level - 1)); }
    }
  }
  for (uint32_t level = 0; level < 6; ++level) {
    const double expect = double(n) / double(1u << (2 + level));
    EXPECT_NEAR(double(count[level]), expect, 6 * std::sqrt(expect)) << "level " << level;
  }
}

// The decision is the documented rule on the selector's low bits, for every period and level a
// rank can be at: what another rank computes from the same (commHash, func, key) alone.
TEST(Sampling, DecisionIsTheDocumentedRuleForEveryPeriodAndLevel) {
  int yes = 0;
  for (uint64_t k = 0; k < 2000; ++k)
    for (uint32_t p = 0; p < 4; ++p)
      for (uint32_t level = 0; level < 4; ++level) {
        const bool want = scout::testing::reference_sampled(0x42, scout::shm::kFuncReduceScatter, k, p, level);
        ASSERT_EQ(sampled(0x42, scout::shm::kFuncReduceScatter, k, p, level), want)
            << "key " << k << " period 2^" << p << " level " << level;
        yes += want;
      }
  EXPECT_GT(yes, 2000);  // level 0, period 1 alone samples all 2000
}

TEST(Budget, RaisesTheLevelToTheOneThatFits) {
  Budget b(0.01);
  // 64 ops, each fingerprinted for 10% of its kernel time: 10x over budget -> +4 levels.
  for (uint32_t i = 0; i < Budget::kWindowOps - 1; ++i) EXPECT_EQ(b.add(1000, 10000), 0u);
  EXPECT_EQ(b.add(1000, 10000), 4u);
  // Now 1/16 of ops are sampled: 0.6% of kernel time, under budget but not under budget/4.
  for (uint32_t i = 0; i < Budget::kWindowOps; ++i) b.add(i % 16 == 0 ? 1000 : 0, 10000);
  EXPECT_EQ(b.level(), 4u);
  // Far under budget (0.1%): one level down per window.
  for (uint32_t i = 0; i < Budget::kWindowOps; ++i) b.add(i % 64 == 0 ? 640 : 0, 10000);
  EXPECT_EQ(b.level(), 3u);
}

TEST(Budget, LongKernelsCloseTheWindowEarlyAndLevelIsCapped) {
  Budget b(0.01, 5);
  // One op whose kernel time alone fills the window, 1000x over budget: capped at 5.
  EXPECT_EQ(b.add(Budget::kWindowKernelNs * 10, Budget::kWindowKernelNs), 5u);
}

TEST(Budget, ZeroBudgetTurnsAdaptationOff) {
  Budget b(0.0);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(b.add(1'000'000, 1), 0u);
}

}  // namespace
