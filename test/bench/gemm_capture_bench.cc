// Costs of the GEMM shape capture (docs/replay.md, "GEMM capture"), all in one run:
//  1. the plugin's CPU cost per collective (every callback of one collective, as in
//     plugin_cost_bench) with SCOUT_GEMM_CAPTURE=0 and with capture on and a window open,
//     each against the do-nothing table in the same rounds (alternating collective by
//     collective; off and on in alternating load cycles of the plugin);
//  2. the cost per matmul log line: scout-sim's cuBLASLt stand-in logging one trace line to the
//     plugin's callback (parse + count in the segment table) against the same line logged to an
//     empty callback.
// Medians over each round, the round with the quietest baseline reported (shared machines).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "test/bench/bench_plugin.h"
#include "test/sim/gemm_lt.h"
#include "test/sim/nccl_plugin_loader.h"
#include "test/support/collective_events.h"
#include "test/support/tmpdir.h"

extern "C" int cublasLtLoggerSetCallback(void (*)(int, const char*, const char*));
extern "C" int cublasLtLoggerSetLevel(int);

namespace {

using namespace scout;
using namespace scout::bench;
using Clock = std::chrono::steady_clock;

double median(std::vector<double>& v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v[v.size() / 2];
}

double ns_since(Clock::time_point t0) {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

// One load cycle of the plugin: `steps` collectives through scout's table and the do-nothing
// table alternately; returns the median differences (scout - baseline) and the baseline median.
struct Round {
  double base = 0, diff = 0;
};
Round collectives(const abi::ProfilerV5* t, int steps, uint64_t hash) {
  CommDescr sc, nc;
  build(sc);
  build(nc);
  t->init(&sc.ctx, hash, &g_nccl_mask, "bench", 1, 8, 0, nullptr);
  g_nop.init(&nc.ctx, 0, &g_nccl_mask, nullptr, 1, 8, 0, nullptr);
  for (int k = 0; k < 4096; ++k) one_collective(t, sc, fake_gpu_ns());
  const abi::ProfilerV5* volatile nop_vt = &g_nop;
  std::vector<double> b, s;
  for (int k = 0; k < steps; ++k) {
    auto t0 = Clock::now();
    one_collective(nop_vt, nc, fake_gpu_ns());
    b.push_back(ns_since(t0));
    t0 = Clock::now();
    one_collective(t, sc, fake_gpu_ns());
    s.push_back(ns_since(t0));
  }
  t->finalize(sc.ctx);
  Round r;
  r.base = median(b);
  r.diff = median(s) - r.base;
  return r;
}

void empty_callback(int, const char*, const char*) {}

}  // namespace

int main(int argc, char** argv) {
  int steps = 20000, rounds = 5, lines = 20000;
  if (argc > 1 && std::string(argv[1]) == "--quick") {
    steps = 4000;
    rounds = 3;
    lines = 4000;
  }
  testing::TempDir dir;
  setenv("SCOUT_GEMM_WINDOW_MS", "3600000", 1);
  unsetenv("CUBLASLT_LOG_LEVEL");
  sim::LoadedPlugin lp;
  const abi::ProfilerV5* t = load_bench_plugin(dir.path(), &lp);
  if (t == nullptr) return 1;
  std::printf(
      "gemm_capture_bench: CPU cost of GEMM shape capture (%d rounds; %d collectives and %d log lines "
      "per round)\n\n",
      rounds, steps, lines);
  Round best_off{1e18, 0}, best_on{1e18, 0};
  double best_line_base = 1e18, line_diff = 0;
  uint64_t hash = 1;
  for (int round = 0; round < rounds; ++round) {
    setenv("SCOUT_GEMM_CAPTURE", "0", 1);
    Round off = collectives(t, steps, hash++);
    setenv("SCOUT_GEMM_CAPTURE", "1", 1);
    Round on = collectives(t, steps, hash++);
    if (off.base < best_off.base) best_off = off;
    if (on.base < best_on.base) best_on = on;

    // Log lines: a plugin load cycle with capture on keeps its window open while a
    // communicator lives; the first collective opens it.
    CommDescr sc;
    build(sc);
    t->init(&sc.ctx, hash++, &g_nccl_mask, "bench", 1, 8, 0, nullptr);
    one_collective(t, sc, fake_gpu_ns());  // opens the window: scout's callback, level 2
    std::vector<double> cap, base;
    for (int i = 0; i < lines; ++i) {
      uint64_t rows = 1 + uint64_t(i % 512);  // 512 classes, then counts
      auto t0 = Clock::now();
      sim::lt_matmul(rows, 1408, 2048, true, false, 66);
      cap.push_back(ns_since(t0));
    }
    t->finalize(sc.ctx);  // restores the logger (no callback, level 0)
    cublasLtLoggerSetCallback(&empty_callback);
    cublasLtLoggerSetLevel(2);
    for (int i = 0; i < lines; ++i) {
      uint64_t rows = 1 + uint64_t(i % 512);
      auto t0 = Clock::now();
      sim::lt_matmul(rows, 1408, 2048, true, false, 66);
      base.push_back(ns_since(t0));
    }
    cublasLtLoggerSetLevel(0);
    cublasLtLoggerSetCallback(nullptr);
    double b = median(base), c = median(cap);
    if (b < best_line_base) {
      best_line_base = b;
      line_diff = c - b;
    }
  }
  std::printf("%-44s %12s %14s\n", "", "baseline ns", "scout extra ns");
  std::printf("%-44s %12.0f %14.0f\n", "per collective, SCOUT_GEMM_CAPTURE=0", best_off.base, best_off.diff);
  std::printf("%-44s %12.0f %14.0f\n", "per collective, capture on, window open", best_on.base, best_on.diff);
  std::printf("%-44s %12s %14.0f\n", "  capture on minus off", "", best_on.diff - best_off.diff);
  std::printf("%-44s %12.0f %14.0f\n", "per matmul log line parsed and counted", best_line_base, line_diff);
  std::printf("\n(baseline of a log line: the stand-in formatting the line for an empty callback)\n");
  sim::unload_profiler_plugin(&lp);
  return 0;
}
