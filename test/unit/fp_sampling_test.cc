// Sampling decisions and the adaptive budget (docs/fingerprint.md, "Sampling", "Budget").
#include <gtest/gtest.h>

#include <cmath>

#include "scout/fingerprint.h"
#include "scout/shm_format.h"

namespace {

using scout::fp::Budget;
using scout::fp::op_selector;
using scout::fp::sampled;

TEST(Sampling, SelectorIsAPureFunctionOfItsInputs) {
  const uint64_t a = op_selector(0x1234, scout::shm::kFuncAllReduce, 99);
  EXPECT_EQ(a, op_selector(0x1234, scout::shm::kFuncAllReduce, 99));
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

TEST(Sampling, SimulatedRanksDecideIdentically) {
  // Each "rank" evaluates the decision on its own; the inputs are what every rank knows.
  for (uint64_t k = 0; k < 2000; ++k) {
    bool first = sampled(0x42, scout::shm::kFuncReduceScatter, k, 3, 1);
    for (int rank = 1; rank < 8; ++rank) EXPECT_EQ(sampled(0x42, scout::shm::kFuncReduceScatter, k, 3, 1), first);
  }
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
