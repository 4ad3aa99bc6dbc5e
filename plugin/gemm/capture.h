// GEMM shape capture inside the training process, with no change to its code (docs/replay.md,
// "GEMM capture"). cuBLASLt is found already loaded (dlopen with RTLD_NOLOAD; scout never loads
// it). For a window of SCOUT_GEMM_WINDOW_MS every SCOUT_GEMM_PERIOD_S, scout installs its own
// logger callback at level 2 (cublasLtLoggerSetCallback / cublasLtLoggerSetLevel, declared in
// cuBLASLt's header cublasLt.h, "Experimental: Logger"), parses each matmul line
// (log_parse.h) into the segment's GEMM shape table (shape_table.h), and at the window's end
// puts the logger back the way it found it: level 0, no callback, log file stdout.
//
// Silent: cuBLASLt writes every line it logs to its log file (stdout unless set) even while a
// callback is installed, so a window first points the log file at a stream that discards what
// it is given (cublasLtLoggerSetFile, a fopencookie FILE without a file descriptor), and only
// then raises the level: no log byte reaches stdout, stderr or any file. A cuBLASLt without
// cublasLtLoggerSetFile is not captured (it would print).
//
// The windows are driven from the NCCL API calls the plugin already sees (tick()), so no thread
// is started. The callback calls no CUDA API, allocates nothing and never blocks.
//
// A user who logs cuBLAS or cuBLASLt themselves is left alone: CUBLASLT_LOG_LEVEL,
// CUBLASLT_LOG_MASK, CUBLASLT_LOG_FILE, CUBLAS_LOGINFO_DBG or CUBLAS_LOGDEST_DBG set (not "0"),
// or a callback returned by cuBLAS's cublasGetLoggerCallback, means no capture in this process
// (one log line, table state kGemmUserLogger). cuBLASLt has no getter for its callback, so one a
// program installed with cublasLtLoggerSetCallback is not detected (docs/replay.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "plugin/gemm/shape_table.h"

namespace scout::gemm {

// The logger entry points scout uses, as cuBLASLt and cuBLAS declare them (int = cublasStatus_t,
// 0 = CUBLAS_STATUS_SUCCESS).
using LtCallback = void (*)(int level, const char* function, const char* message);
struct LoggerApi {
  int (*lt_set_callback)(LtCallback) = nullptr;                  // cublasLtLoggerSetCallback
  int (*lt_set_level)(int) = nullptr;                            // cublasLtLoggerSetLevel
  int (*lt_set_file)(FILE*) = nullptr;                           // cublasLtLoggerSetFile
  int (*cublas_get_callback)(void (**)(const char*)) = nullptr;  // cublasGetLoggerCallback (optional)
  void* lt_handle = nullptr;  // dlopen handles to release (nullptr for a test's table)
  void* cublas_handle = nullptr;
};

// Finds the libraries in the process; false if cuBLASLt is not loaded. The default looks for
// libcublasLt.so.13/.12/.11/libcublasLt.so and libcublas.so.13/... with RTLD_NOLOAD, then for the
// logger entry points in the global scope (cuBLASLt linked statically; scout-sim's stand-in).
using LoggerFinder = std::function<bool(LoggerApi*)>;
bool find_loaded_logger(LoggerApi* api);

struct CaptureOptions {
  int64_t window_ns = 2000000000;                  // SCOUT_GEMM_WINDOW_MS
  int64_t period_ns = 600000000000;                // SCOUT_GEMM_PERIOD_S (window start to window start)
  LoggerFinder finder;                             // default find_loaded_logger
  std::function<const char*(const char*)> getenv;  // default ::getenv
  std::function<void(const std::string&)> log;     // one line per notable event
};

class Capture {
 public:
  // A capture writing into `table` (kept by the caller, outliving the Capture). Only one
  // Capture can be installed in a process at a time (the logger callback is process-wide).
  static std::unique_ptr<Capture> create(ShapeTable* table, CaptureOptions opt);
  ~Capture();  // closes an open window (restores the logger) and releases the libraries

  // Hot path, at each NCCL API call: one relaxed load and a compare unless a window opens or
  // closes now (then the logger calls happen on this thread; one thread at a time).
  void tick(int64_t now_ns) {
    if (now_ns >= next_ns_.load(std::memory_order_relaxed)) tick_slow(now_ns);
  }

  // Closes an open window now (restores the logger). Safe to call more than once.
  void stop(int64_t now_ns);

  // The callback installed into cuBLASLt (public for tests that act as cuBLASLt).
  static void on_log(int level, const char* function, const char* message);

 private:
  Capture() = default;
  void tick_slow(int64_t now_ns);
  bool open_window(int64_t now_ns);
  void close_window(int64_t now_ns);
  bool user_logs(std::string* why);

  ShapeTable* table_ = nullptr;
  shm::GemmTableHeader* hdr_ = nullptr;
  CaptureOptions opt_;
  LoggerApi api_;
  bool have_api_ = false;
  bool open_ = false;
  std::atomic<int64_t> next_ns_{0};
  std::atomic<bool> switching_{false};
};

}  // namespace scout::gemm
