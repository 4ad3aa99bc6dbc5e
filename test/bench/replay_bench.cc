// Replay cost: (1) one emulated periodic replay cycle of an 8-GPU node (default GEMMs, 4
// collective classes, the 56 directed pairs of 8 ranks) through the scout-replay protocol and the
// judgement, and the fraction of wall time it uses at the default budget (periodic cycles wait
// max(1 s, cost / SCOUT_REPLAY_BUDGET)); (2) scout-sim's step time under scout-observer with
// replay on against replay off (SCOUT_REPLAY=0), measured in the same run.
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "observer/store/reader.h"
#include "replay/emu_backend.h"
#include "replay/judge.h"
#include "replay/server.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::replay;
using nlohmann::json;

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

double one_cycle(const std::string& dir, uint64_t cycle) {
  EmuBackend backend(dir, "bench");
  ReplayServer server(&backend);
  RecipePlan plan;
  plan.gemms = default_gemms();
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  plan.colls = {{"AllReduce", "bfloat16", 2, 131072, "RING", "SIMPLE", {0, 1}},
                {"AllReduce", "bfloat16", 2, 131072, "RING", "SIMPLE", {2, 3}},
                {"AllGather", "float32", 4, 65536, "RING", "SIMPLE", {0, 2}},
                {"Broadcast", "float32", 4, 65536, "RING", "SIMPLE", all}};
  plan.links = pairs_of({all});
  plan.seed = cycle;
  const double t0 = now_s();
  std::vector<Recipe> rs = build_recipes(plan);
  Contract c{cycle, {}, all};
  json recipes = json::array(), parts = json::array();
  for (const Recipe& r : rs) {
    c.recipes.push_back(r.id);
    recipes.push_back(to_json(r));
  }
  for (int g : all) parts.push_back(to_json(Participant{g, "GPU-sim-node0-" + std::to_string(g), g}));
  bool quit = false;
  json ready = json::parse(server.handle(
      json{{"op", "prepare"}, {"contract", to_json(c)}, {"participants", parts}, {"recipes", recipes}}.dump(), &quit));
  std::vector<GpuInfo> gpus;
  for (const auto& a : ready["answers"]) {
    GpuInfo g;
    std::string e;
    from_json(a["gpu"], &g, &e);
    gpus.push_back(g);
  }
  json res = json::parse(server.handle(
      json{{"op", "run"}, {"cycle", cycle}, {"admitted", c.recipes}, {"deadline_ms", 30000}}.dump(), &quit));
  std::vector<Sample> samples;
  for (const auto& s : res["samples"]) {
    Sample x;
    std::string e;
    from_json(s, &x, &e);
    samples.push_back(x);
  }
  CycleVerdict v = judge(rs, gpus, samples, {}, OutlierRule{});
  const double dt = now_s() - t0;
  if (v.outcome != Outcome::kPass) std::fprintf(stderr, "unexpected outcome %s\n", to_string(v.outcome));
  return dt;
}

struct SimRun {
  double seconds = 0;
  size_t cycles = 0;
  int exit_code = 0;
};

SimRun run_sim(const std::string& replay, const std::string& job) {
  scout::testing::TempDir dir;
  std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", dir.path()}, {"SCOUT_STATE_DIR", dir.path() + "/state"}, {"SCOUT_REPLAY", replay}};
  scout::testing::Subprocess observer(
      {scout::testing::build_path("bin/scout-observer"), "--job", job, "--interval", "50", "--quiet"}, env);
  auto r = scout::testing::run_process({scout::testing::build_path("bin/scout-sim"), "--job", job, "--ranks", "8",
                                        "--tp", "2", "--pp", "2", "--steps", "150", "--step-ms", "40"},
                                       env, 600);
  observer.signal(SIGTERM);
  observer.wait(30);
  SimRun out{r.seconds, 0, r.exit_code};
  try {
    out.cycles = scout::store::StoreReader::open(dir.path() + "/state/" + job + "/node-0.db")->replay_cycles().size();
  } catch (const std::exception&) {}
  return out;
}

}  // namespace

int main() {
  scout::testing::TempDir dir;
  std::vector<double> t;
  for (uint64_t i = 1; i <= 7; ++i) t.push_back(one_cycle(dir.path(), i));
  std::sort(t.begin(), t.end());
  const double cost = t[t.size() / 2];
  const double budget = 0.01;
  const double period = std::max(1.0, cost / budget);
  std::printf("replay bench: emulated periodic cycle, 8 GPUs, 2 GEMM + 4 collective + 56 link recipes, 2 rounds\n");
  std::printf("  cycle cost (median of 7): %.1f ms (min %.1f, max %.1f)\n", cost * 1e3, t.front() * 1e3,
              t.back() * 1e3);
  std::printf("  at budget %.2f: a periodic cycle every %.2f s, %.3f%% of wall time\n", budget, period,
              100.0 * cost / period);
  std::fflush(stdout);
  SimRun off = run_sim("0", "bench-replay-off");
  SimRun on = run_sim("1", "bench-replay-on");
  if (off.exit_code != 0 || on.exit_code != 0) {
    std::fprintf(stderr, "scout-sim failed (exit %d / %d)\n", off.exit_code, on.exit_code);
    return 1;
  }
  std::printf("  scout-sim 8 ranks (tp 2, pp 2), 150 steps of 40 ms under scout-observer:\n");
  std::printf("    replay off (baseline): %.2f s, %.1f ms/step\n", off.seconds, off.seconds / 150 * 1e3);
  std::printf("    replay on:             %.2f s, %.1f ms/step (%.3fx baseline), %zu replay cycles\n", on.seconds,
              on.seconds / 150 * 1e3, off.seconds > 0 ? on.seconds / off.seconds : 0.0, on.cycles);
  return 0;
}
