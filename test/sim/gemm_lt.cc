// scout-sim's cuBLASLt logger stand-in and MoE expert GEMMs (gemm_lt.h).
#include "test/sim/gemm_lt.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

namespace {

using LoggerCallback = void (*)(int, const char*, const char*);
std::atomic<LoggerCallback> g_callback{nullptr};
std::atomic<int> g_level{0};

constexpr int kStatusSuccess = 0;       // CUBLAS_STATUS_SUCCESS
constexpr int kStatusInvalidValue = 7;  // CUBLAS_STATUS_INVALID_VALUE

}  // namespace

// The two logger entry points, with cuBLASLt's names and C signatures (cublasLt.h), exported
// from the scout-sim executable (Makefile: --export-dynamic-symbol).
extern "C" __attribute__((visibility("default"))) int cublasLtLoggerSetCallback(LoggerCallback cb) {
  g_callback.store(cb, std::memory_order_release);
  return kStatusSuccess;
}
extern "C" __attribute__((visibility("default"))) int cublasLtLoggerSetFile(FILE*) {
  return kStatusSuccess;  // the stand-in never writes a log file
}
extern "C" __attribute__((visibility("default"))) int cublasLtLoggerSetLevel(int level) {
  if (level < 0 || level > 5) return kStatusInvalidValue;
  g_level.store(level, std::memory_order_release);
  return kStatusSuccess;
}

namespace scout::sim {
namespace {

constexpr uint64_t kHidden = 2048;  // model width
constexpr uint64_t kFfn = 2816;     // expert FFN width (split over TP)
constexpr uint64_t kTokens = 4096;  // tokens per DP rank per step
constexpr uint64_t kTopK = 2;
constexpr double kZipf = 1.2;

}  // namespace

void lt_matmul(uint64_t m, uint64_t n, uint64_t k, bool trans_a, bool trans_b, int algo) {
  LoggerCallback cb = g_callback.load(std::memory_order_acquire);
  if (cb == nullptr || g_level.load(std::memory_order_acquire) < 2) return;
  // Stored shapes: A is m x k (k x m if transposed), B is k x n (n x k if transposed).
  uint64_t ar = trans_a ? k : m, ac = trans_a ? m : k;
  uint64_t br = trans_b ? n : k, bc = trans_b ? k : n;
  char line[640];
  std::snprintf(line, sizeof(line),
                "A=0X7F5A00000000 Adesc=[type=R_16BF rows=%llu cols=%llu ld=%llu] B=0X7F5B00000000 "
                "Bdesc=[type=R_16BF rows=%llu cols=%llu ld=%llu] C=0X0 Cdesc=[type=R_16BF rows=%llu cols=%llu "
                "ld=%llu] D=0X7F5C00000000 Ddesc=[type=R_16BF rows=%llu cols=%llu ld=%llu] "
                "computeDesc=[computeType=COMPUTE_32F scaleType=R_32F%s%s] algo=[algoId=%d "
                "tile=MATMUL_TILE_128x128 stages=MATMUL_STAGES_64x3] workSpace=0X0 workSpaceSizeInBytes=0 "
                "beta=0 outOfPlace=1 stream=0X0",
                (unsigned long long)ar, (unsigned long long)ac, (unsigned long long)ar, (unsigned long long)br,
                (unsigned long long)bc, (unsigned long long)br, (unsigned long long)m, (unsigned long long)n,
                (unsigned long long)m, (unsigned long long)m, (unsigned long long)n, (unsigned long long)m,
                trans_a ? " transa=OP_T" : "", trans_b ? " transb=OP_T" : "", algo);
  cb(2, "cublasLtMatmul", line);
}

std::vector<uint64_t> expert_rows(const Layout& layout, const SimOptions& o, int g, int64_t step) {
  std::vector<uint64_t> rows;
  if (o.moe_experts <= 0) return rows;
  const int ep = std::max(o.ep, 1);
  const int per_rank = o.moe_experts / ep;
  const int ep_rank = layout.coord(g).dp % ep;
  // Routing of the step: the same on every rank (seed, step), so EP peers agree on the counts.
  std::mt19937_64 rng(o.seed * 1000003ull + uint64_t(step) * 7919ull + 17);
  std::vector<int> perm(size_t(o.moe_experts));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<double> w(size_t(o.moe_experts));
  double sum = 0;
  for (int i = 0; i < o.moe_experts; ++i) {
    w[size_t(perm[size_t(i)])] = 1.0 / std::pow(double(i + 1), kZipf) * (0.75 + 0.5 * double(rng() % 1000) / 1000.0);
    sum += w[size_t(perm[size_t(i)])];
  }
  const uint64_t routed = kTokens * kTopK * uint64_t(ep);  // tokens of the EP group, top-k
  for (int j = 0; j < per_rank; ++j) {
    int e = ep_rank * per_rank + j;
    rows.push_back(std::max<uint64_t>(1, uint64_t(double(routed) * w[size_t(e)] / sum)));
  }
  return rows;
}

void run_step_gemms(const Layout& layout, const SimOptions& o, int g, int64_t step) {
  const uint64_t t = uint64_t(std::max(o.tp, 1));
  // Dense layers (attention projections): fixed shapes every step.
  lt_matmul(kTokens, 3 * kHidden / t, kHidden, true, false, 21);
  lt_matmul(kTokens, kHidden, kHidden / t, true, false, 21);
  for (uint64_t r : expert_rows(layout, o, g, step)) {
    lt_matmul(r, kFfn / t, kHidden, true, false, 66);   // forward
    lt_matmul(r, kHidden, kFfn / t, false, false, 66);  // data gradient
    lt_matmul(kHidden, kFfn / t, r, false, true, 66);   // weight gradient
  }
}

}  // namespace scout::sim
