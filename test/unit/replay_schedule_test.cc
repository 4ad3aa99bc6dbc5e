// The coverage-based GEMM replay scheduler (replay/schedule/plan.h): regimes, dominance, the
// greedy choice against a brute-force optimum, round-robin check cycles and participants.
#include "replay/schedule/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "scout/shm_format.h"

namespace {

using namespace scout;
using replay::ObservedShape;

shm::GemmKey bf16(uint64_t m, uint64_t n, uint64_t k) {
  shm::GemmKey g;
  g.m = m, g.n = n, g.k = k;
  g.a_type = g.b_type = g.c_type = g.d_type = shm::kGemmR16BF;
  g.compute = shm::kGemmCompute32F;
  g.scale_type = shm::kGemmR32F;
  g.layout = shm::kGemmTransA;
  g.tile_m = g.tile_n = 128;
  g.algo = 66;
  return g;
}

ObservedShape obs(shm::GemmKey k, uint64_t count, std::vector<int> ranks) {
  ObservedShape s;
  s.key = k;
  s.count = count;
  s.ranks = ranks;
  return s;
}

TEST(ReplaySchedule, PressureClassesFollowTilesAgainstSms) {
  replay::GpuModel gpu;  // 132 SMs, 128x128 tiles here
  EXPECT_EQ(replay::output_tiles(bf16(128 * 10, 128 * 13, 64), gpu), 130u);
  EXPECT_EQ(replay::pressure_of(bf16(128 * 10, 128 * 13, 64), gpu), replay::Pressure::kUnderfilled);
  EXPECT_EQ(replay::output_tiles(bf16(128 * 12, 128 * 11 + 1, 64), gpu), 144u);
  EXPECT_EQ(replay::pressure_of(bf16(128 * 12, 128 * 11 + 1, 64), gpu), replay::Pressure::kOneRepeat);
  EXPECT_EQ(replay::pressure_of(bf16(128 * 12, 128 * 22, 64), gpu), replay::Pressure::kOneRepeat);  // 264
  EXPECT_EQ(replay::pressure_of(bf16(128 * 12, 128 * 22 + 1, 64), gpu), replay::Pressure::kMultiRepeat);
}

TEST(ReplaySchedule, DominanceNeedsTheSameRegime) {
  replay::GpuModel gpu;
  EXPECT_TRUE(replay::covers(bf16(100, 64, 64), bf16(90, 64, 64), gpu));
  EXPECT_TRUE(replay::covers(bf16(100, 64, 64), bf16(100, 64, 64), gpu));
  EXPECT_FALSE(replay::covers(bf16(90, 64, 64), bf16(100, 64, 64), gpu));
  EXPECT_FALSE(replay::covers(bf16(100, 64, 32), bf16(90, 64, 64), gpu));  // smaller k
  shm::GemmKey other = bf16(100, 64, 64);
  other.layout = 0;  // NN instead of TN
  EXPECT_FALSE(replay::covers(other, bf16(90, 64, 64), gpu));
  other = bf16(100, 64, 64);
  other.a_type = shm::kGemmR16F;
  EXPECT_FALSE(replay::covers(other, bf16(90, 64, 64), gpu));
  other = bf16(100, 64, 64);
  other.algo = 21;
  EXPECT_FALSE(replay::covers(other, bf16(90, 64, 64), gpu));
  // One output tile more than the SMs: another pressure class, not covered.
  EXPECT_FALSE(replay::covers(bf16(128 * 12, 128 * 11 + 1, 64), bf16(128 * 10, 128 * 13, 64), gpu));
}

TEST(ReplaySchedule, RegimesAndMinimumCover) {
  // Expert GEMMs with varying row counts in two regimes (two n,k projections share a regime
  // when their types match; pressure separates them by size).
  std::vector<ObservedShape> in;
  for (uint64_t m = 1; m <= 40; ++m) in.push_back(obs(bf16(m, 1024, 4096), 3, {int(m % 4)}));
  for (uint64_t m = 1; m <= 40; ++m) in.push_back(obs(bf16(m, 4096, 1024), 3, {int(m % 4)}));
  replay::PlanOptions opt;
  opt.budget_ms = 1000;
  replay::ReplayPlan p = replay::make_plan(in, opt);
  ASSERT_EQ(p.shapes.size(), 80u);
  // Every shape: 1..40 rows x 8 (or 32) column tiles -> underfilled, one regime for both.
  ASSERT_EQ(p.regimes.size(), 1u);
  EXPECT_EQ(p.regimes[0].members.size(), 80u);
  // Neither (40,1024,4096) nor (40,4096,1024) covers the other: two recipes, the Pareto frontier.
  ASSERT_EQ(p.recipes.size(), 2u);
  std::set<std::pair<uint64_t, uint64_t>> got;
  for (const auto& r : p.recipes) {
    EXPECT_EQ(r.shape.m, 40u);
    got.insert({r.shape.n, r.shape.k});
    EXPECT_EQ(r.covers.size(), 40u);
    EXPECT_EQ(r.ranks, (std::vector<int>{0, 1, 2, 3}));
  }
  EXPECT_EQ(got, (std::set<std::pair<uint64_t, uint64_t>>{{1024, 4096}, {4096, 1024}}));
  EXPECT_DOUBLE_EQ(p.coverage, 1.0);
}

// Brute force: the largest weight any `limit` of the sets cover.
double best_cover(const std::vector<std::vector<size_t>>& sets, const std::vector<double>& w, size_t limit) {
  double best = 0;
  size_t n = sets.size();
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (size_t(__builtin_popcount(mask)) > limit) continue;
    std::vector<bool> c(w.size(), false);
    for (size_t i = 0; i < n; ++i) {
      if (mask & (1u << i)) {
        for (size_t e : sets[i]) c[e] = true;
      }
    }
    double t = 0;
    for (size_t e = 0; e < w.size(); ++e) t += c[e] ? w[e] : 0;
    best = std::max(best, t);
  }
  return best;
}

double weight_of(const std::vector<std::vector<size_t>>& sets, const std::vector<double>& w,
                 const std::vector<size_t>& pick) {
  std::vector<bool> c(w.size(), false);
  for (size_t i : pick) {
    for (size_t e : sets[i]) c[e] = true;
  }
  double t = 0;
  for (size_t e = 0; e < w.size(); ++e) t += c[e] ? w[e] : 0;
  return t;
}

TEST(ReplaySchedule, GreedyAgainstBruteForce) {
  std::mt19937 rng(12345);
  int equal = 0;
  for (int trial = 0; trial < 300; ++trial) {
    size_t n_sets = 3 + rng() % 8, n_elem = 4 + rng() % 10, limit = 1 + rng() % 3;
    std::vector<std::vector<size_t>> sets(n_sets);
    for (auto& s : sets) {
      for (size_t e = 0; e < n_elem; ++e) {
        if (rng() % 3 == 0) s.push_back(e);
      }
    }
    std::vector<double> w(n_elem);
    for (double& x : w) x = 1 + rng() % 20;
    double opt = best_cover(sets, w, limit);
    auto pick = replay::greedy_cover(sets, w, limit);
    ASSERT_LE(pick.size(), limit);
    double got = weight_of(sets, w, pick);
    // The greedy's guarantee for budgeted maximum coverage: at least (1 - 1/e) of the optimum.
    EXPECT_GE(got, (1 - 1 / 2.718281828459045) * opt - 1e-9) << "trial " << trial;
    EXPECT_LE(got, opt + 1e-9);
    equal += got == opt;
  }
  EXPECT_GT(equal, 200);  // and usually the optimum itself on small cases
}

TEST(ReplaySchedule, GreedyWithoutLimitIsAMinimumDominanceCover) {
  // Random small sets of shapes in one regime: the recipe count equals the smallest number of
  // shapes covering all of them (found by brute force).
  std::mt19937 rng(7);
  replay::GpuModel gpu;
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<ObservedShape> in;
    size_t n = 2 + rng() % 9;
    std::set<std::tuple<uint64_t, uint64_t, uint64_t>> seen;
    while (in.size() < n) {
      uint64_t m = 1 + rng() % 8, nn = 8 * (1 + rng() % 4), k = 8 * (1 + rng() % 4);
      if (!seen.insert({m, nn, k}).second) continue;
      in.push_back(obs(bf16(m, nn, k), 1 + rng() % 5, {0}));
    }
    replay::PlanOptions opt;
    opt.budget_ms = 1e9;
    replay::ReplayPlan p = replay::make_plan(in, opt);
    ASSERT_EQ(p.regimes.size(), 1u);
    size_t best = n;
    for (uint32_t mask = 1; mask < (1u << n); ++mask) {
      bool all = true;
      for (size_t b = 0; b < n && all; ++b) {
        bool c = false;
        for (size_t a = 0; a < n && !c; ++a)
          c = (mask & (1u << a)) && replay::covers(p.shapes[a].key, p.shapes[b].key, gpu);
        all = c;
      }
      if (all) best = std::min(best, size_t(__builtin_popcount(mask)));
    }
    EXPECT_EQ(p.recipes.size(), best) << "trial " << trial;
    EXPECT_DOUBLE_EQ(p.coverage, 1.0);
  }
}

TEST(ReplaySchedule, RecipeLimitKeepsTheHeaviestCoverage) {
  std::vector<ObservedShape> in = {
      obs(bf16(64, 64, 64), 1000, {0}),  // heavy
      obs(bf16(32, 128, 64), 1, {1}),    // light, not comparable with the first
      obs(bf16(16, 16, 16), 1, {2}),     // covered by both
  };
  replay::PlanOptions opt;
  opt.max_recipes = 1;
  replay::ReplayPlan p = replay::make_plan(in, opt);
  ASSERT_EQ(p.recipes.size(), 1u);
  EXPECT_EQ(p.recipes[0].shape.m, 64u);
  EXPECT_EQ(p.recipes[0].covers.size(), 2u);
  EXPECT_EQ(p.recipes[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_LT(p.coverage, 1.0);
  EXPECT_GT(p.coverage, 0.99);
}

TEST(ReplaySchedule, RoundRobinCyclesCoverEveryRegime) {
  // Four regimes (four algorithms), three recipes each (incomparable n,k pairs), budget for
  // five replays per cycle: every regime appears within the first ceil(4/5) = 1 cycle... and
  // each cycle takes the regimes in turn.
  std::vector<ObservedShape> in;
  replay::GpuModel gpu;
  for (int algo = 0; algo < 4; ++algo) {
    for (int j = 0; j < 3; ++j) {
      shm::GemmKey k = bf16(8, 64 * (j + 1), 64 * (3 - j));
      k.algo = algo;
      in.push_back(obs(k, uint64_t(10 * (algo + 1)), {algo}));
    }
  }
  replay::PlanOptions opt;
  double one = replay::gemm_ms(bf16(8, 64, 192), gpu);
  opt.budget_ms = 5.5 * one;  // all twelve take about the same time (launch-dominated)
  replay::ReplayPlan p = replay::make_plan(in, opt);
  ASSERT_EQ(p.regimes.size(), 4u);
  ASSERT_EQ(p.recipes.size(), 12u);
  ASSERT_EQ(p.cycles.size(), 3u);  // 5 + 5 + 2
  EXPECT_EQ(p.cycles[0].size(), 5u);
  EXPECT_EQ(p.cycles[1].size(), 5u);
  EXPECT_EQ(p.cycles[2].size(), 2u);
  // Cycle 0: regimes 0,1,2,3 then 0 again; cycle 1 continues at regime 1.
  std::vector<int> regimes;
  for (const auto& c : p.cycles) {
    for (size_t r : c) regimes.push_back(p.recipes[r].regime);
  }
  EXPECT_EQ(regimes, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  // Heaviest regime first: algo 3 has the largest counts.
  EXPECT_EQ(p.regimes[0].sample.algo, 3);
  for (size_t i = 0; i < p.recipes.size(); ++i) EXPECT_EQ(p.recipes[i].cycle, i < 5 ? 0 : i < 10 ? 1 : 2);
  EXPECT_LE(p.cycle_ms, opt.budget_ms);
  EXPECT_EQ(p.over_budget, 0);
  // Every recipe appears exactly once over the cycle of cycles.
  std::set<size_t> all;
  for (const auto& c : p.cycles) all.insert(c.begin(), c.end());
  EXPECT_EQ(all.size(), 12u);
}

TEST(ReplaySchedule, RecipeLongerThanTheBudgetGetsItsOwnCycle) {
  std::vector<ObservedShape> in = {obs(bf16(8192, 8192, 8192), 1, {0}), obs(bf16(8, 8, 8), 1, {0})};
  in[1].key.algo = 1;
  replay::PlanOptions opt;
  opt.budget_ms = 0.1;
  replay::ReplayPlan p = replay::make_plan(in, opt);
  ASSERT_EQ(p.cycles.size(), 2u);
  EXPECT_EQ(p.over_budget, 1);
}

TEST(ReplaySchedule, ShapesOfSomeRanksAreReplayedWithTheirPeers) {
  std::vector<ObservedShape> in = {obs(bf16(8, 64, 64), 1, {5}), obs(bf16(8, 64, 64), 2, {1})};
  replay::PlanOptions opt;
  opt.peer_groups = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 5}, {1, 3, 5, 7}};
  replay::ReplayPlan p = replay::make_plan(in, opt);
  ASSERT_EQ(p.shapes.size(), 1u);  // merged
  EXPECT_EQ(p.shapes[0].count, 3u);
  ASSERT_EQ(p.recipes.size(), 1u);
  EXPECT_EQ(p.recipes[0].ranks, (std::vector<int>{1, 5}));
  // {1,5} has fewer than 3 voters; the smallest group with enough is {1,3,5,7}.
  EXPECT_EQ(p.recipes[0].participants, (std::vector<int>{1, 3, 5, 7}));
}

}  // namespace
