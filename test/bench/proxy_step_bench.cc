// CPU cost of the plugin per collective with the ProxyStep window on and off, in the same run
// (docs/net-plugin.md, "ProxyStep timing"). Off: NCCL's callbacks of one collective outside a
// group with 4 channels (what plugin_cost_bench measures). On: the same plus what NCCL adds while
// the mask has ProxyOp | ProxyStep (docs/nccl-notes.md §3.4): per channel a send and a receive
// ProxyOp of STEPS steps, each step with every state NCCL records, timed by scout into the link
// table. The window is held open for the whole run (SCOUT_PROXY_BUDGET=1, a one-hour window, no
// step limit), so both kinds of collective run in the same process, alternating, each next to a
// do-nothing plugin fed the same callbacks. Median over a round; of several rounds the one with
// the quietest do-nothing baseline is reported (shared, noisy machines).
//
// --counted: the same collectives with the window closed (one 1 ms window at the start, the next
// 10 s later) while SCOUT_PROXY_PROGRESS=1 keeps ProxyOp | ProxyStep in the mask: what every
// collective costs at the defaults outside windows, its steps only counted in the progress table
// (docs/plugin.md, "Tracing a stuck collective"). Rows off / counted.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "test/bench/bench_plugin.h"
#include "test/sim/nccl_plugin_loader.h"
#include "test/support/collective_events.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout;
using namespace scout::bench;

double median(std::vector<uint32_t>& v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

uint32_t timed(const abi::ProfilerV5* t, CommDescr& c, int steps) {
  uint64_t g = fake_gpu_ns();
  auto t0 = std::chrono::steady_clock::now();
  one_collective(t, c, g, steps);
  auto t1 = std::chrono::steady_clock::now();
  return uint32_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
}

}  // namespace

int main(int argc, char** argv) {
  int n = 20000, rounds = 7;
  bool counted = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") {
      n = 4000;
      rounds = 3;
    } else if (std::string(argv[i]) == "--counted") {
      counted = true;
    }
  }
  const int steps = 2;  // steps per ProxyOp: 4 channels x (send + receive) x 2 = 16 per collective
  scout::testing::TempDir dir;
  setenv("SCOUT_PROXY_TIMING", "1", 1);
  setenv("SCOUT_PROXY_PROGRESS", "1", 1);
  setenv("SCOUT_PROXY_BUDGET", counted ? "0.0001" : "1", 1);
  setenv("SCOUT_PROXY_WINDOW_MS", counted ? "1" : "3600000", 1);
  setenv("SCOUT_PROXY_MAX_STEPS", "100000000", 1);
  scout::sim::LoadedPlugin lp;
  const abi::ProfilerV5* scout_t = scout::bench::load_bench_plugin(dir.path(), &lp);
  if (scout_t == nullptr) return 1;
  CommDescr sc, nc;
  build(sc);
  build(nc);
  int& mask = g_nccl_mask;
  int nop_mask = 0;
  scout_t->init(&sc.ctx, 0xB5, &mask, "bench", 2, 8, 0, nullptr);
  g_nop.init(&nc.ctx, 0, &nop_mask, nullptr, 2, 8, 0, nullptr);
  for (int k = 0; k < 4096; ++k) one_collective(scout_t, sc, fake_gpu_ns(), k & 1 ? steps : 0);  // warm-up
  if (counted) {  // the first window closes at the next API call after its 1 ms
    struct timespec ts{0, 5000000};
    nanosleep(&ts, nullptr);
    one_collective(scout_t, sc, fake_gpu_ns(), 0);
  }
  const int want = int(abi::kEvProxyOp | abi::kEvProxyStep);
  if ((mask & want) != want) {
    std::fprintf(stderr, "ProxyOp | ProxyStep are not in the mask (0x%x)\n", mask);
    return 1;
  }
  std::printf(
      "proxy_step_bench: CPU ns per collective (4 channels), no proxy events vs %s (%d steps "
      "per collective)\n(scout: %s via its v5 table; baseline: do-nothing table fed the same "
      "callbacks; %d rounds of %d collectives of each kind, alternating; SCOUT_FP=0)\n\n",
      counted ? "steps counted outside a window" : "steps timed in an open window", kChannels * 2 * steps,
      scout::testing::build_path("lib/libnccl-profiler-scout.so").c_str(), rounds, n);
  const abi::ProfilerV5* volatile nop_vt = &g_nop;
  const abi::ProfilerV5* nop_t = nop_vt;
  double best = 1e18, off_b = 0, off_s = 0, on_b = 0, on_s = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<uint32_t> ob, os, nb, ns;  // off/on x baseline/scout
    for (auto* v : {&ob, &os, &nb, &ns}) v->reserve(size_t(n));
    for (int k = 0; k < n; ++k) {
      ob.push_back(timed(nop_t, nc, 0));
      os.push_back(timed(scout_t, sc, 0));
      nb.push_back(timed(nop_t, nc, steps));
      ns.push_back(timed(scout_t, sc, steps));
    }
    double b = median(ob);
    if (b < best) {
      best = b;
      off_b = b;
      off_s = median(os);
      on_b = median(nb);
      on_s = median(ns);
    }
  }
  double off = off_s - off_b, on = on_s - on_b;
  std::printf("%-10s | %10s %10s | %10s\n", "steps", "base p50", "scout p50", "scout cost");
  std::printf("%-10s | %10.0f %10.0f | %10.0f\n", "none", off_b, off_s, off);
  std::printf("%-10s | %10.0f %10.0f | %10.0f\n", counted ? "counted" : "timed", on_b, on_s, on);
  std::printf("\n%s/none cost ratio: %.2f (%.0f ns per %s step, %.0f ns per ProxyOp and its steps)\n",
              counted ? "counted" : "timed", off > 0 ? on / off : 0, (on - off) / double(kChannels * 2 * steps),
              counted ? "counted" : "timed", (on - off) / double(kChannels * 2));
  scout_t->finalize(sc.ctx);
  scout::sim::unload_profiler_plugin(&lp);
  return 0;
}
