// GEMM shape capture through cuBLASLt's logger (capture.h).
#include "plugin/gemm/capture.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/types.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "plugin/gemm/log_parse.h"

namespace scout::gemm {
namespace {

// The installed capture (the logger callback has no user pointer).
std::atomic<Capture*> g_capture{nullptr};
std::atomic<ShapeTable*> g_table{nullptr};
// Callbacks inside on_log now: closing a window waits for them before the table can go.
std::atomic<int> g_inflight{0};

constexpr int kLevelOff = 0;
constexpr int kLevelTrace = 2;  // "Performance Trace": kernel-launching calls log their parameters
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// A stream that accepts and drops everything written to it (no file descriptor, no file): the
// log file cuBLASLt writes to during a window. Created once, never closed (cuBLASLt may hold the
// pointer), so it is valid for the life of the process.
ssize_t discard_write(void*, const char*, size_t size) { return ssize_t(size); }
FILE* discard_stream() {
  static FILE* const f = [] {
    cookie_io_functions_t io{};
    io.write = discard_write;
    return ::fopencookie(nullptr, "w", io);
  }();
  return f;
}

void* open_loaded(const char* const* names) {
  for (const char* const* n = names; *n != nullptr; ++n) {
    if (void* h = ::dlopen(*n, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

}  // namespace

bool find_loaded_logger(LoggerApi* api) {
  static const char* const kLt[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so",
                                    nullptr};
  static const char* const kBlas[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so", nullptr};
  void* lt = open_loaded(kLt);
  // Not loaded under these names: cuBLASLt linked statically into the program (or a library of
  // the global scope) still exports its logger entry points there.
  void* scope = lt != nullptr ? lt : RTLD_DEFAULT;
  LoggerApi a;
  a.lt_handle = lt;
  a.lt_set_callback = reinterpret_cast<int (*)(LtCallback)>(::dlsym(scope, "cublasLtLoggerSetCallback"));
  a.lt_set_level = reinterpret_cast<int (*)(int)>(::dlsym(scope, "cublasLtLoggerSetLevel"));
  a.lt_set_file = reinterpret_cast<int (*)(FILE*)>(::dlsym(scope, "cublasLtLoggerSetFile"));
  if (a.lt_set_callback == nullptr || a.lt_set_level == nullptr) {
    if (lt != nullptr) ::dlclose(lt);
    return false;
  }
  if (void* blas = open_loaded(kBlas)) {
    a.cublas_handle = blas;
    a.cublas_get_callback = reinterpret_cast<int (*)(void (**)(const char*))>(::dlsym(blas, "cublasGetLoggerCallback"));
  }
  *api = a;
  return true;
}

std::unique_ptr<Capture> Capture::create(ShapeTable* table, CaptureOptions opt) {
  if (table == nullptr) return nullptr;
  std::unique_ptr<Capture> c(new (std::nothrow) Capture());
  if (!c) return nullptr;
  if (!opt.finder) opt.finder = find_loaded_logger;
  if (!opt.getenv) opt.getenv = [](const char* n) -> const char* { return ::getenv(n); };
  if (opt.window_ns <= 0) opt.window_ns = 1;
  if (opt.period_ns < opt.window_ns) opt.period_ns = opt.window_ns;
  c->table_ = table;
  c->hdr_ = table->header();
  c->opt_ = std::move(opt);
  c->hdr_->state.store(shm::kGemmWaiting, std::memory_order_relaxed);
  c->next_ns_.store(0, std::memory_order_relaxed);  // the first API call opens the first window
  return c;
}

Capture::~Capture() {
  stop(0);
  if (api_.lt_handle) ::dlclose(api_.lt_handle);
  if (api_.cublas_handle) ::dlclose(api_.cublas_handle);
}

void Capture::on_log(int level, const char* function, const char* message) {
  struct Inflight {
    Inflight() { g_inflight.fetch_add(1); }
    ~Inflight() { g_inflight.fetch_sub(1); }
  } in;
  ShapeTable* t = g_table.load();
  if (t == nullptr || function == nullptr || message == nullptr) return;
  shm::GemmTableHeader* h = t->header();
  h->lines.fetch_add(1, std::memory_order_relaxed);
  shm::GemmKey key;
  switch (parse_matmul(function, message, &key)) {
    case ParseResult::kOk: t->record(key); break;
    case ParseResult::kNotMatmul: h->ignored.fetch_add(1, std::memory_order_relaxed); break;
    case ParseResult::kMalformed: h->malformed.fetch_add(1, std::memory_order_relaxed); break;
  }
}

bool Capture::user_logs(std::string* why) {
  static const char* const kVars[] = {"CUBLASLT_LOG_LEVEL", "CUBLASLT_LOG_MASK", "CUBLASLT_LOG_FILE",
                                      "CUBLAS_LOGINFO_DBG", "CUBLAS_LOGDEST_DBG"};
  for (const char* v : kVars) {
    const char* s = opt_.getenv(v);
    if (s != nullptr && s[0] != '\0' && std::strcmp(s, "0") != 0) {
      *why = std::string(v) + "=" + s + " is set";
      return true;
    }
  }
  if (api_.cublas_get_callback != nullptr) {
    void (*cb)(const char*) = nullptr;
    if (api_.cublas_get_callback(&cb) == 0 && cb != nullptr) {
      *why = "cuBLAS has a logger callback (cublasGetLoggerCallback)";
      return true;
    }
  }
  return false;
}

bool Capture::open_window(int64_t now_ns) {
  if (!have_api_) {
    LoggerApi a;
    if (!opt_.finder(&a)) {
      hdr_->state.store(shm::kGemmNoLibrary, std::memory_order_relaxed);
      return false;
    }
    api_ = a;
    have_api_ = true;
  }
  std::string why;
  if (user_logs(&why)) {
    hdr_->state.store(shm::kGemmUserLogger, std::memory_order_relaxed);
    if (opt_.log) opt_.log("GEMM capture off in this process: " + why + " (the user's logging is left alone)");
    next_ns_.store(kNever, std::memory_order_relaxed);
    return false;
  }
  Capture* expect = nullptr;
  if (!g_capture.compare_exchange_strong(expect, this, std::memory_order_acq_rel)) {
    if (expect != this) {
      if (opt_.log) opt_.log("GEMM capture: another capture owns cuBLASLt's logger; skipping this window");
      return false;
    }
  }
  FILE* sink = discard_stream();
  if (api_.lt_set_file == nullptr || sink == nullptr) {
    g_capture.store(nullptr, std::memory_order_release);
    hdr_->state.store(shm::kGemmFailed, std::memory_order_relaxed);
    if (opt_.log)
      opt_.log(api_.lt_set_file == nullptr
                   ? "GEMM capture off: this cuBLASLt has no cublasLtLoggerSetFile, so its trace would be printed"
                   : "GEMM capture off: cannot create the stream that discards cuBLASLt's log");
    next_ns_.store(kNever, std::memory_order_relaxed);
    return false;
  }
  g_table.store(table_, std::memory_order_release);
  // The log file first: from the moment the level rises, every line goes to the discard stream.
  if (api_.lt_set_file(sink) != 0 || api_.lt_set_callback(&Capture::on_log) != 0 ||
      api_.lt_set_level(kLevelTrace) != 0) {
    api_.lt_set_level(kLevelOff);
    api_.lt_set_callback(nullptr);
    api_.lt_set_file(stdout);
    g_table.store(nullptr, std::memory_order_release);
    g_capture.store(nullptr, std::memory_order_release);
    hdr_->state.store(shm::kGemmFailed, std::memory_order_relaxed);
    if (opt_.log) opt_.log("GEMM capture: cuBLASLt refused the logger settings; capture stopped");
    next_ns_.store(kNever, std::memory_order_relaxed);
    return false;
  }
  open_ = true;
  hdr_->windows.fetch_add(1, std::memory_order_relaxed);
  hdr_->window_start_ns.store(now_ns, std::memory_order_relaxed);
  hdr_->window_end_ns.store(0, std::memory_order_relaxed);
  hdr_->state.store(shm::kGemmCapturing, std::memory_order_release);
  return true;
}

void Capture::close_window(int64_t now_ns) {
  if (!open_) return;
  api_.lt_set_level(kLevelOff);  // nothing is logged from here on, then the defaults come back
  api_.lt_set_callback(nullptr);
  api_.lt_set_file(stdout);
  g_table.store(nullptr);
  // A callback that saw the table before the store is counted in g_inflight (both sequentially
  // consistent): wait for it (microseconds: one parse), so the table can be released after.
  for (int spins = 0; g_inflight.load() != 0 && spins < 1000000; ++spins) sched_yield();
  g_capture.store(nullptr, std::memory_order_release);
  open_ = false;
  int64_t start = hdr_->window_start_ns.load(std::memory_order_relaxed);
  if (now_ns > start) hdr_->window_ns.fetch_add(uint64_t(now_ns - start), std::memory_order_relaxed);
  hdr_->window_end_ns.store(now_ns, std::memory_order_relaxed);
  hdr_->state.store(shm::kGemmWaiting, std::memory_order_release);
}

void Capture::tick_slow(int64_t now_ns) {
  if (switching_.exchange(true, std::memory_order_acquire)) return;  // another thread switches
  if (now_ns >= next_ns_.load(std::memory_order_relaxed)) {
    if (open_) {
      close_window(now_ns);
      int64_t start = hdr_->window_start_ns.load(std::memory_order_relaxed);
      next_ns_.store(start + opt_.period_ns, std::memory_order_relaxed);
    } else if (open_window(now_ns)) {
      next_ns_.store(now_ns + opt_.window_ns, std::memory_order_relaxed);
    } else if (next_ns_.load(std::memory_order_relaxed) != kNever) {
      next_ns_.store(now_ns + opt_.period_ns, std::memory_order_relaxed);  // retry next period
    }
  }
  switching_.store(false, std::memory_order_release);
}

void Capture::stop(int64_t now_ns) {
  while (switching_.exchange(true, std::memory_order_acquire)) {}
  if (open_) close_window(now_ns > 0 ? now_ns : hdr_->window_start_ns.load(std::memory_order_relaxed));
  next_ns_.store(kNever, std::memory_order_relaxed);
  switching_.store(false, std::memory_order_release);
}

}  // namespace scout::gemm
