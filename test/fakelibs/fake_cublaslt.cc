// A stand-in libcublasLt.so.13 for the GEMM capture tests (test/plugin/gemm_capture_silent_test.cc):
// the six logger entry points of cuBLASLt (cublasLt.h, "Experimental: Logger") behaving as the
// real library does with them, and one traced matmul to call.
//
// As in cuBLASLt: a logged line goes to the log file, stdout unless cublasLtLoggerSetFile or
// cublasLtLoggerOpenFile chose another, and also to the callback when one is set (installing a
// callback does not stop the printing); the level (0-5, cublasLtLoggerSetLevel) or the mask
// (cublasLtLoggerSetMask; level n = the mask of levels 1..n) selects what is logged, a matmul's
// parameters at level 2 ("trace"); cublasLtLoggerForceDisable turns logging off for good. The
// line is "[date time][cublasLt][pid][Trace][cublasLtMatmul] <message>", the message in
// cuBLASLt's format (the GPU check's real lines, docs/replay.md "GEMM capture").
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace {

using Callback = void (*)(int, const char*, const char*);
std::mutex g_mu;
Callback g_callback = nullptr;
int g_mask = 0;
FILE* g_file = nullptr;  // nullptr: stdout
bool g_disabled = false;

constexpr int kSuccess = 0;       // CUBLAS_STATUS_SUCCESS
constexpr int kInvalidValue = 7;  // CUBLAS_STATUS_INVALID_VALUE
constexpr int kTraceBit = 2;      // mask bit of level 2

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cublasLtLoggerSetCallback(Callback cb) {
  std::lock_guard<std::mutex> l(g_mu);
  g_callback = cb;
  return kSuccess;
}
__attribute__((visibility("default"))) int cublasLtLoggerSetFile(FILE* f) {
  std::lock_guard<std::mutex> l(g_mu);
  g_file = f;
  return kSuccess;
}
__attribute__((visibility("default"))) int cublasLtLoggerOpenFile(const char* path) {
  FILE* f = path != nullptr ? std::fopen(path, "w") : nullptr;
  if (f == nullptr) return kInvalidValue;
  std::lock_guard<std::mutex> l(g_mu);
  g_file = f;
  return kSuccess;
}
__attribute__((visibility("default"))) int cublasLtLoggerSetLevel(int level) {
  if (level < 0 || level > 5) return kInvalidValue;
  std::lock_guard<std::mutex> l(g_mu);
  g_mask = level == 0 ? 0 : (1 << level) - 1;
  return kSuccess;
}
__attribute__((visibility("default"))) int cublasLtLoggerSetMask(int mask) {
  std::lock_guard<std::mutex> l(g_mu);
  g_mask = mask;
  return kSuccess;
}
__attribute__((visibility("default"))) int cublasLtLoggerForceDisable() {
  std::lock_guard<std::mutex> l(g_mu);
  g_disabled = true;
  return kSuccess;
}

// One BF16 matmul D (m x n) = A^T (m x k) B (k x n): logs its trace line as cuBLASLt would.
__attribute__((visibility("default"))) void fake_cublaslt_matmul(uint64_t m, uint64_t n, uint64_t k) {
  char msg[640];
  std::snprintf(msg, sizeof(msg),
                "A=0X7F36B2A24200 Adesc=[type=R_16BF rows=%llu cols=%llu ld=%llu] B=0X7F36B2A64200 "
                "Bdesc=[type=R_16BF rows=%llu cols=%llu ld=%llu] C=0X7F36B2B24200 Cdesc=[type=R_16BF rows=%llu "
                "cols=%llu ld=%llu] D=0X7F36B2B24200 Ddesc=[type=R_16BF rows=%llu cols=%llu ld=%llu] "
                "computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T] algo=[algoId=20 "
                "tile=MATMUL_TILE_256x128 stages=MATMUL_STAGES_64x3] workSpace=0X7F3700000000 "
                "workSpaceSizeInBytes=33554432 beta=0 outOfPlace=0 stream=0X5581C0A0",
                (unsigned long long)k, (unsigned long long)m, (unsigned long long)k, (unsigned long long)k,
                (unsigned long long)n, (unsigned long long)k, (unsigned long long)m, (unsigned long long)n,
                (unsigned long long)m, (unsigned long long)m, (unsigned long long)n, (unsigned long long)m);
  std::lock_guard<std::mutex> l(g_mu);
  if (g_disabled || (g_mask & kTraceBit) == 0) return;
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
  FILE* f = g_file != nullptr ? g_file : stdout;
  std::fprintf(f, "[%s][cublasLt][%d][Trace][cublasLtMatmul] %s\n", when, int(::getpid()), msg);
  std::fflush(f);
  if (g_callback != nullptr) g_callback(2, "cublasLtMatmul", msg);
}

}  // extern "C"
