// `scout replay plan`: the GEMM replay plan for the shapes the job's plugins captured
// (replay/schedule/plan.h; docs/cli.md "scout replay plan", docs/replay-schedule.md).
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/gemm_names.h"
#include "observer/cli/common.h"
#include "observer/export/json.h"
#include "replay/schedule/plan.h"

namespace scout::cli {
namespace {

std::string types_of(const shm::GemmKey& k) {
  return fmt::format("{}/{}/{}/{}", shm::gemm_type_name(k.a_type), shm::gemm_type_name(k.b_type),
                     shm::gemm_type_name(k.c_type), shm::gemm_type_name(k.d_type));
}

std::string layout_of(const shm::GemmKey& k) {
  char ops[3];
  shm::gemm_layout_ops(k.layout, ops);
  std::string s = ops;
  if (k.layout & (shm::kGemmRowA | shm::kGemmRowB | shm::kGemmRowD)) s += "+row";
  return s;
}

std::string tile_of(const shm::GemmKey& k) {
  return k.tile_m ? fmt::format("{}x{}", k.tile_m, k.tile_n) : std::string("-");
}

std::string ranks_text(const std::vector<int>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += j > i ? fmt::format("{}-{}", r[i], r[j]) : std::to_string(r[i]);
    i = j;
  }
  return s.empty() ? "-" : s;
}

// The plan as `scout replay plan --json` prints it (docs/cli.md, "scout replay plan"): shapes,
// regimes, recipes, the recipes of each check cycle, the estimated GPU time observed and covered
// (ms) and their ratio, budget and each process's capture counters; shares of `total` ms.
nlohmann::json plan_json(const replay::ReplayPlan& p, const replay::PlanOptions& po,
                         const std::vector<obs::GemmCaptureInfo>& cap, double total) {
  nlohmann::json j;
  j["shapes"] = nlohmann::json::array();
  for (const auto& s : p.shapes) {
    nlohmann::json e = exporter::gemm_key_json(s.key);
    e["count"] = s.count;
    e["ranks"] = s.ranks;
    e["time_share"] = double(s.count) * replay::gemm_ms(s.key, po.gpu) / total;
    j["shapes"].push_back(e);
  }
  j["regimes"] = nlohmann::json::array();
  for (const auto& r : p.regimes) {
    nlohmann::json e = exporter::gemm_key_json(r.sample);
    for (const char* dim : {"m", "n", "k", "batch"}) e.erase(dim);
    e["id"] = r.id;
    e["pressure"] = replay::pressure_name(r.pressure);
    e["shapes"] = r.members.size();
    e["time_share"] = r.observed_ms / total;
    e["recipes"] = r.recipes;
    j["regimes"].push_back(e);
  }
  j["recipes"] = nlohmann::json::array();
  for (const auto& r : p.recipes) {
    nlohmann::json e = exporter::gemm_key_json(r.shape);
    e["regime"] = r.regime;
    e["cycle"] = r.cycle;
    e["covers"] = r.covers.size();
    e["covered_share"] = r.covered_ms / total;
    e["replay_ms"] = r.replay_ms;
    e["ranks"] = r.ranks;
    e["participants"] = r.participants;
    j["recipes"].push_back(e);
  }
  j["cycles"] = p.cycles;
  j["observed_ms"] = p.observed_ms;
  j["covered_ms"] = p.covered_ms;
  j["coverage"] = p.coverage;
  j["cycle_ms"] = p.cycle_ms;
  j["budget"] = {{"ms", p.budget_ms},
                 {"sm_count", po.gpu.sm_count},
                 {"max_recipes", po.max_recipes},
                 {"cycles", p.cycles.size()},
                 {"over_budget", p.over_budget}};
  j["capture"] = nlohmann::json::array();
  for (const auto& c : cap) { j["capture"].push_back(exporter::gemm_capture_json(c)); }
  return j;
}

}  // namespace

int cmd_replay_plan(store::StoreReader& rd, const ReplayPlanOptions& o, std::ostream& out) {
  std::vector<replay::ObservedShape> in;
  std::set<int> ranks;
  for (const obs::GemmShapeInfo& g : rd.gemm_shapes()) {
    replay::ObservedShape s;
    s.key = g.key;
    s.count = g.count;
    s.ranks = {g.global_rank};
    ranks.insert(g.global_rank);
    in.push_back(s);
  }
  replay::PlanOptions po;
  po.budget_ms = o.budget_ms;
  po.max_recipes = o.max_recipes;
  po.gpu.sm_count = o.sm_count;
  for (const obs::CommInfo& c : rd.comms()) po.peer_groups.push_back(c.global_ranks);
  replay::ReplayPlan p = replay::make_plan(in, po);
  std::vector<obs::GemmCaptureInfo> cap = rd.gemm_capture();
  uint64_t calls = 0;
  for (const auto& s : p.shapes) calls += s.count;
  double total = p.observed_ms > 0 ? p.observed_ms : 1;

  if (o.json) {
    out << plan_json(p, po, cap, total).dump() << "\n";
    return kExitOk;
  }

  if (p.shapes.empty()) {
    out << "no GEMM shapes captured (" << cap.size()
        << " processes with a GEMM table; SCOUT_GEMM_CAPTURE=1 turns capture on, docs/replay.md)\n";
    return kExitOk;
  }
  uint64_t lines = 0, malformed = 0, dropped = 0;
  for (const auto& c : cap) {
    lines += c.lines;
    malformed += c.malformed;
    dropped += c.dropped_full + c.dropped_busy;
  }
  out << fmt::format("GEMM replay plan: {} shape classes ({} calls) on {} ranks, {} regimes, {} recipes\n",
                     p.shapes.size(), calls, ranks.size(), p.regimes.size(), p.recipes.size());
  out << fmt::format(
      "coverage {:.4f} of observed GEMM time (est. {:.3f} ms on {} SMs); {} check cycles, longest {:.3f} ms of "
      "budget {:.3f} ms{}\n",
      p.coverage, p.observed_ms, po.gpu.sm_count, p.cycles.size(), p.cycle_ms, p.budget_ms,
      p.over_budget ? fmt::format(" ({} recipes over budget, one per cycle)", p.over_budget) : "");
  out << fmt::format("capture: {} processes, {} log lines, {} malformed, {} dropped\n", cap.size(), lines, malformed,
                     dropped);
  out << "REGIMES\n";
  out << fmt::format("  {:>3}  {:<27} {:<6} {:<22} {:>5} {:>9} {:<12} {:>6} {:>6} {:>7}\n", "ID", "TYPES A/B/C/D",
                     "OPS", "COMPUTE", "ALGO", "TILE", "PRESSURE", "SHAPES", "SHARE", "RECIPES");
  for (const auto& r : p.regimes) {
    out << fmt::format("  {:>3}  {:<27} {:<6} {:<22} {:>5} {:>9} {:<12} {:>6} {:>6.3f} {:>7}\n", r.id,
                       types_of(r.sample), layout_of(r.sample), shm::gemm_compute_name(r.sample.compute), r.sample.algo,
                       tile_of(r.sample), replay::pressure_name(r.pressure), r.members.size(), r.observed_ms / total,
                       r.recipes.size());
  }
  out << "RECIPES\n";
  out << fmt::format("  {:>3} {:>5} {:>6} {:>7} {:>7} {:>7} {:>5} {:>6} {:>7} {:<12} {}\n", "#", "CYCLE", "REGIME", "M",
                     "N", "K", "BATCH", "COVERS", "SHARE", "RANKS", "REPLAY ON");
  for (size_t i = 0; i < p.recipes.size(); ++i) {
    const auto& r = p.recipes[i];
    out << fmt::format("  {:>3} {:>5} {:>6} {:>7} {:>7} {:>7} {:>5} {:>6} {:>7.4f} {:<12} {}\n", i, r.cycle, r.regime,
                       r.shape.m, r.shape.n, r.shape.k, r.shape.batch, r.covers.size(), r.covered_ms / total,
                       ranks_text(r.ranks), ranks_text(r.participants));
  }
  return kExitOk;
}

}  // namespace scout::cli
