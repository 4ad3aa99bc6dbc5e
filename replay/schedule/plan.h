// The coverage-based replay scheduler for GEMM shapes (docs/replay-schedule.md).
//
// Input: the GEMM shape classes a job ran (from the plugin's capture, docs/record-format.md "GEMM
// shape table"), with their counts and the ranks that ran them. Output: a ReplayPlan, the list of
// GEMM recipes a replay backend executes (shapes, datatypes, layouts, compute type, algorithm,
// participating ranks) and the check cycles they are spread over.
//
// Rules (docs/replay-schedule.md gives the reasons):
//  * Regime: the shapes that share element types, compute and scale type, layouts, algorithm and
//    tile, and pressure class (output tiles against the GPU's SM count: underfilled < SMs,
//    one-repeat <= 2 x SMs, else multi-repeat).
//  * Within a regime a shape covers every shape it dominates: at least as large in m, n, k and
//    batch. The weight of a shape is its estimated GPU time: count x time of one call.
//  * Recipes: greedily the shape covering the most uncovered weight, until the regime is covered
//    (this is a minimum cover: exactly the regime's Pareto-maximal shapes), or until
//    max_recipes recipes are chosen job-wide (then the greedy maximizes covered weight).
//  * Check cycles: each cycle replays recipes whose estimated replay time fits budget_ms, taken
//    round-robin over the regimes (heaviest regime first), so every regime is replayed within
//    ceil(regimes / recipes per cycle) cycles and every recipe within one cycle of cycles.
//  * Participants: the ranks that ran a covered shape, plus their peers (peer_groups: the
//    smallest group with at least min_voters ranks that holds the rank).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/gemm_key.h"

namespace scout::replay {

// The GPU model the estimates use. Defaults: an H100/H200 SXM (132 SMs; dense tensor-core peak
// per datatype from NVIDIA's datasheet, in TFLOP/s).
struct GpuModel {
  int sm_count = 132;
  double tflops_fp8 = 1979;
  double tflops_16bit = 989;  // FP16, BF16 (and FP32 with COMPUTE_32F_FAST_16F/16BF)
  double tflops_tf32 = 494;
  double tflops_fp32 = 67;
  double tflops_fp64 = 67;
  double launch_us = 5;         // per call, added to every estimate
  uint16_t default_tile = 128;  // tile edge used when the log names none
};

// One observed shape class.
struct ObservedShape {
  shm::GemmKey key;
  uint64_t count = 0;      // calls seen in capture windows (all ranks)
  std::vector<int> ranks;  // global ranks that ran it (sorted, unique)
};

enum class Pressure : uint8_t { kUnderfilled = 0, kOneRepeat = 1, kMultiRepeat = 2 };
const char* pressure_name(Pressure p);  // "underfilled", "one-repeat", "multi-repeat"

struct Regime {
  int id = 0;
  Pressure pressure = Pressure::kUnderfilled;
  shm::GemmKey sample;          // types, layouts, compute, algo and tile of the regime
  std::vector<size_t> members;  // indices into ReplayPlan::shapes
  double observed_ms = 0;       // total estimated GPU time of its members
  std::vector<size_t> recipes;  // indices into ReplayPlan::recipes
};

// What a replay backend executes: one GEMM, D(m x n) = op(A)(m x k) op(B)(k x n), batch times,
// with these element types, layouts, compute type and (when logged) algorithm and tile, on the
// listed ranks, whose outputs are then compared.
struct GemmRecipe {
  shm::GemmKey shape;
  int regime = 0;
  std::vector<size_t> covers;     // shapes it covers (indices into ReplayPlan::shapes), itself first
  double covered_ms = 0;          // estimated GPU time of the covered shapes not covered before
  double replay_ms = 0;           // estimated time of one replay call
  std::vector<int> ranks;         // ranks that ran a covered shape
  std::vector<int> participants;  // ranks plus their peers: where the recipe is replayed
  int cycle = 0;                  // check cycle (0-based) of the cycle of cycles it is replayed in
};

struct PlanOptions {
  GpuModel gpu;
  double budget_ms = 50;                      // replay time per check cycle
  int max_recipes = 0;                        // 0: cover every shape; else at most this many recipes job-wide
  std::vector<std::vector<int>> peer_groups;  // e.g. the communicators' global ranks
  int min_voters = 3;
};

struct ReplayPlan {
  std::vector<ObservedShape> shapes;
  std::vector<Regime> regimes;              // heaviest first
  std::vector<GemmRecipe> recipes;          // in replay order (cycle by cycle)
  std::vector<std::vector<size_t>> cycles;  // recipe indices per check cycle
  double observed_ms = 0;                   // estimated GPU time of every observed shape
  double covered_ms = 0;                    // ... of the shapes a recipe covers
  double coverage = 0;                      // covered_ms / observed_ms (1 when nothing observed)
  double cycle_ms = 0;                      // longest check cycle's estimated replay time
  double budget_ms = 0;
  int over_budget = 0;  // recipes longer than the budget (alone in a cycle)
};

// Estimated time of one call of `k` on `gpu`, milliseconds.
double gemm_ms(const shm::GemmKey& k, const GpuModel& gpu);
// Output tiles of one call (ceil(m/tile_m) * ceil(n/tile_n) * batch) and its pressure class.
uint64_t output_tiles(const shm::GemmKey& k, const GpuModel& gpu);
Pressure pressure_of(const shm::GemmKey& k, const GpuModel& gpu);
// True if a and b are in one regime (same types, layouts, compute, algo, tile and pressure).
bool same_regime(const shm::GemmKey& a, const shm::GemmKey& b, const GpuModel& gpu);
// True if a covers b: same regime and a is at least as large in m, n, k and batch.
bool covers(const shm::GemmKey& a, const shm::GemmKey& b, const GpuModel& gpu);

// Merges shape classes of several ranks: equal keys add their counts and join their ranks.
std::vector<ObservedShape> merge_shapes(const std::vector<ObservedShape>& in);

// Greedy budgeted cover over candidate sets: picks at most `limit` (0: no limit) of `sets`
// (each a list of element indices) maximizing the total weight of the covered elements, each
// time the set adding the most uncovered weight (ties: the lower index); stops when nothing is
// added. Returns the chosen set indices in pick order.
std::vector<size_t> greedy_cover(const std::vector<std::vector<size_t>>& sets, const std::vector<double>& weight,
                                 size_t limit);

// The plan for `shapes` (merged or not; merged here).
ReplayPlan make_plan(const std::vector<ObservedShape>& shapes, const PlanOptions& opt);

}  // namespace scout::replay
