// The coverage-based GEMM replay scheduler (plan.h).
#include "replay/schedule/plan.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "scout/shm_format.h"

namespace scout::replay {
namespace {

double tflops_of(const shm::GemmKey& k, const GpuModel& g) {
  switch (k.compute) {
    case shm::kGemmCompute64F:
    case shm::kGemmCompute64FPedantic: return g.tflops_fp64;
    case shm::kGemmCompute32FFastTF32: return g.tflops_tf32;
    case shm::kGemmCompute32FFast16F:
    case shm::kGemmCompute32FFast16BF:
    case shm::kGemmCompute16F:
    case shm::kGemmCompute16FPedantic: return g.tflops_16bit;
    default: break;
  }
  switch (k.a_type) {
    case shm::kGemmR8FE4M3:
    case shm::kGemmR8FE5M2:
    case shm::kGemmR4FE2M1:
    case shm::kGemmR8I:
    case shm::kGemmR8U: return g.tflops_fp8;
    case shm::kGemmR16F:
    case shm::kGemmR16BF: return g.tflops_16bit;
    case shm::kGemmR64F:
    case shm::kGemmC64F: return g.tflops_fp64;
    default: return g.tflops_fp32;
  }
}

// Everything of a key but its dimensions: what a regime shares.
auto regime_tie(const shm::GemmKey& k) {
  return std::make_tuple(k.a_type, k.b_type, k.c_type, k.d_type, k.compute, k.scale_type, k.layout, k.algo, k.tile_m,
                         k.tile_n);
}

void add_unique(std::vector<int>* to, const std::vector<int>& from) {
  to->insert(to->end(), from.begin(), from.end());
  std::sort(to->begin(), to->end());
  to->erase(std::unique(to->begin(), to->end()), to->end());
}

}  // namespace

const char* pressure_name(Pressure p) {
  switch (p) {
    case Pressure::kUnderfilled: return "underfilled";
    case Pressure::kOneRepeat: return "one-repeat";
    case Pressure::kMultiRepeat: return "multi-repeat";
  }
  return "unknown";
}

double gemm_ms(const shm::GemmKey& k, const GpuModel& gpu) {
  double tf = std::max(tflops_of(k, gpu), 1e-3);
  return k.flops() / (tf * 1e9) + gpu.launch_us / 1000.0;
}

uint64_t output_tiles(const shm::GemmKey& k, const GpuModel& gpu) {
  uint64_t tm = k.tile_m ? k.tile_m : gpu.default_tile;
  uint64_t tn = k.tile_n ? k.tile_n : gpu.default_tile;
  if (tm == 0) tm = 1;
  if (tn == 0) tn = 1;
  return ((k.m + tm - 1) / tm) * ((k.n + tn - 1) / tn) * uint64_t(std::max<uint32_t>(k.batch, 1));
}

Pressure pressure_of(const shm::GemmKey& k, const GpuModel& gpu) {
  uint64_t t = output_tiles(k, gpu);
  uint64_t sms = uint64_t(std::max(gpu.sm_count, 1));
  if (t < sms) return Pressure::kUnderfilled;
  if (t <= 2 * sms) return Pressure::kOneRepeat;
  return Pressure::kMultiRepeat;
}

bool same_regime(const shm::GemmKey& a, const shm::GemmKey& b, const GpuModel& gpu) {
  return regime_tie(a) == regime_tie(b) && pressure_of(a, gpu) == pressure_of(b, gpu);
}

bool covers(const shm::GemmKey& a, const shm::GemmKey& b, const GpuModel& gpu) {
  return same_regime(a, b, gpu) && a.m >= b.m && a.n >= b.n && a.k >= b.k && a.batch >= b.batch;
}

std::vector<ObservedShape> merge_shapes(const std::vector<ObservedShape>& in) {
  std::map<shm::GemmKey, ObservedShape> by;
  for (const ObservedShape& s : in) {
    auto [it, fresh] = by.try_emplace(s.key, s);
    if (fresh) {
      std::vector<int> r;
      add_unique(&r, s.ranks);
      it->second.ranks = r;
      continue;
    }
    it->second.count += s.count;
    add_unique(&it->second.ranks, s.ranks);
  }
  std::vector<ObservedShape> out;
  out.reserve(by.size());
  for (auto& [k, s] : by) out.push_back(std::move(s));
  return out;
}

std::vector<size_t> greedy_cover(const std::vector<std::vector<size_t>>& sets, const std::vector<double>& weight,
                                 size_t limit) {
  std::vector<bool> covered(weight.size(), false);
  std::vector<bool> used(sets.size(), false);
  std::vector<size_t> picked;
  while (limit == 0 || picked.size() < limit) {
    double best = 0;
    size_t best_i = sets.size();
    for (size_t i = 0; i < sets.size(); ++i) {
      if (used[i]) continue;
      double gain = 0;
      for (size_t e : sets[i]) {
        if (e < covered.size() && !covered[e]) gain += weight[e];
      }
      if (gain > best) {
        best = gain;
        best_i = i;
      }
    }
    if (best_i == sets.size()) break;
    used[best_i] = true;
    picked.push_back(best_i);
    for (size_t e : sets[best_i]) {
      if (e < covered.size()) covered[e] = true;
    }
  }
  return picked;
}

namespace {

// The regimes of the plan's shapes (the same tile class and memory pressure on `gpu`), heaviest
// first by observed time (`weight` per shape), each with its members.
void group_regimes(const std::vector<double>& weight, const GpuModel& gpu, ReplayPlan* plan) {
  std::map<std::tuple<decltype(regime_tie(shm::GemmKey{})), int>, size_t> regime_of;
  for (size_t i = 0; i < plan->shapes.size(); ++i) {
    const shm::GemmKey& k = plan->shapes[i].key;
    auto key = std::make_tuple(regime_tie(k), int(pressure_of(k, gpu)));
    auto [it, fresh] = regime_of.try_emplace(key, plan->regimes.size());
    if (fresh) {
      Regime r;
      r.pressure = pressure_of(k, gpu);
      r.sample = k;
      plan->regimes.push_back(r);
    }
    Regime& r = plan->regimes[it->second];
    r.members.push_back(i);
    r.observed_ms += weight[i];
  }
  std::stable_sort(plan->regimes.begin(), plan->regimes.end(),
                   [](const Regime& a, const Regime& b) { return a.observed_ms > b.observed_ms; });
  for (size_t r = 0; r < plan->regimes.size(); ++r) plan->regimes[r].id = int(r);
}

// The check cycles: round-robin over the regimes (heaviest first), within the budget; the recipes
// into plan->recipes in cycle order.
void schedule_cycles(std::vector<GemmRecipe> chosen, const PlanOptions& opt, ReplayPlan* plan) {
  std::vector<std::deque<size_t>> queue(plan->regimes.size());
  for (size_t i = 0; i < chosen.size(); ++i) queue[size_t(chosen[i].regime)].push_back(i);
  size_t left = chosen.size(), start = 0;
  const size_t nr = plan->regimes.size();
  std::vector<size_t> order;  // chosen index per final position
  while (left > 0) {
    std::vector<size_t> cycle;
    double used = 0;
    bool full = false;
    size_t last = start;
    while (!full) {
      bool added = false;
      for (size_t j = 0; j < nr && !full; ++j) {
        size_t r = (start + j) % nr;
        if (queue[r].empty()) continue;
        const GemmRecipe& rc = chosen[queue[r].front()];
        if (cycle.empty() && rc.replay_ms > opt.budget_ms) {
          plan->over_budget++;
          cycle.push_back(queue[r].front());
          used += rc.replay_ms;
          queue[r].pop_front();
          last = r;
          full = true;
          break;
        }
        if (used + rc.replay_ms > opt.budget_ms) {
          full = true;
          break;
        }
        cycle.push_back(queue[r].front());
        used += rc.replay_ms;
        queue[r].pop_front();
        last = r;
        added = true;
      }
      if (!added) break;
      start = (last + 1) % nr;
    }
    start = (last + 1) % nr;
    left -= cycle.size();
    plan->cycle_ms = std::max(plan->cycle_ms, used);
    std::vector<size_t> ids;
    for (size_t c : cycle) {
      chosen[c].cycle = int(plan->cycles.size());
      ids.push_back(order.size());
      order.push_back(c);
    }
    plan->cycles.push_back(ids);
  }
  for (size_t c : order) {
    plan->regimes[size_t(chosen[c].regime)].recipes.push_back(plan->recipes.size());
    plan->recipes.push_back(std::move(chosen[c]));
  }
}

}  // namespace

ReplayPlan make_plan(const std::vector<ObservedShape>& input, const PlanOptions& opt) {
  ReplayPlan plan;
  plan.budget_ms = opt.budget_ms;
  plan.shapes = merge_shapes(input);
  const GpuModel& gpu = opt.gpu;
  const size_t n = plan.shapes.size();
  std::vector<double> weight(n);
  for (size_t i = 0; i < n; ++i) {
    weight[i] = double(plan.shapes[i].count) * gemm_ms(plan.shapes[i].key, gpu);
    plan.observed_ms += weight[i];
  }

  group_regimes(weight, gpu, &plan);

  // Candidate recipes: every shape, with the shapes of its regime it covers.
  std::vector<std::vector<size_t>> sets(n);
  std::vector<int> regime_idx(n);
  for (const Regime& r : plan.regimes) {
    for (size_t a : r.members) {
      regime_idx[a] = r.id;
      sets[a].push_back(a);
      for (size_t b : r.members) {
        if (a != b && covers(plan.shapes[a].key, plan.shapes[b].key, gpu)) sets[a].push_back(b);
      }
    }
  }
  std::vector<size_t> picked = greedy_cover(sets, weight, size_t(std::max(opt.max_recipes, 0)));

  // Recipes in pick order, each with the shapes it newly covers.
  std::vector<bool> covered(n, false);
  std::vector<GemmRecipe> chosen;
  for (size_t a : picked) {
    GemmRecipe rc;
    rc.shape = plan.shapes[a].key;
    rc.regime = regime_idx[a];
    rc.replay_ms = gemm_ms(rc.shape, gpu);
    for (size_t b : sets[a]) {
      rc.covers.push_back(b);
      add_unique(&rc.ranks, plan.shapes[b].ranks);
      if (!covered[b]) {
        covered[b] = true;
        rc.covered_ms += weight[b];
      }
    }
    rc.participants = rc.ranks;
    for (int rank : rc.ranks) {
      const std::vector<int>* best = nullptr;
      for (const auto& g : opt.peer_groups) {
        if (int(g.size()) < opt.min_voters || std::find(g.begin(), g.end(), rank) == g.end()) continue;
        if (best == nullptr || g.size() < best->size()) best = &g;
      }
      if (best != nullptr) add_unique(&rc.participants, *best);
    }
    plan.covered_ms += rc.covered_ms;
    chosen.push_back(std::move(rc));
  }
  // Every shape covered: the same time, summed in another order (not 0.9999999999999999).
  if (std::all_of(covered.begin(), covered.end(), [](bool c) { return c; })) plan.covered_ms = plan.observed_ms;
  plan.coverage = plan.observed_ms > 0 ? plan.covered_ms / plan.observed_ms : 1.0;

  schedule_cycles(std::move(chosen), opt, &plan);
  return plan;
}

}  // namespace scout::replay
