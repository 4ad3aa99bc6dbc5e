// The plugin's ABI boundary: the three tables NCCL looks up with dlsym (docs/nccl-notes.md §1.2) and the
// entry points behind them. Thin on purpose: each entry point is noexcept, catches everything,
// reports an escaped exception once through NCCL's logger, and returns ncclSuccess (NCCL
// ignores the results of the event functions, and a failing init would not disable the plugin
// cleanly, docs/nccl-notes.md §1.3). All logic lives in plugin/core (events.h), which the tests call too.
//
// v5 (NCCL 2.28) and v6 (2.29+) share one implementation; v6 adds the copy-engine events. v4
// (NCCL 2.27) descriptors are translated by plugin/core/v4_adapter.h. With SCOUT_RECORD_CALLS
// set, each callback and its append to the call recording run under the recorder's mutex
// (plugin/abi/recording.h).
#include <mutex>

#include "plugin/abi/recording.h"
#include "plugin/core/events.h"
#include "plugin/core/log.h"
#include "plugin/core/v4_adapter.h"
#include "plugin/record/recorder.h"
#include "scout/nccl_profiler_abi.h"

namespace {

using namespace scout;
using core::log::Problem;

void caught(Problem p, const char* where) noexcept {
  try {
    core::log::warn_once(p, "internal error in %s (exception caught; event ignored)", where);
  } catch (...) {}
}

abi::Result init_any(int abi_version, void** ctx, uint64_t hash, int* mask, const char* name, int nnodes, int nranks,
                     int rank, abi::Logger logfn) noexcept {
  try {
    core::log::set_logger(logfn);
    abi_hook::recording_on_init();
    int mask_in = mask != nullptr ? __atomic_load_n(mask, __ATOMIC_RELAXED) : 0;  // written by other inits
    rec::Recorder* r = abi_hook::recorder();
    std::unique_lock<std::mutex> lk;
    if (r != nullptr) lk = std::unique_lock<std::mutex>(r->mutex());
    core::init(ctx, hash, mask, name, nnodes, nranks, rank, logfn, abi_version);
    if (r != nullptr) {
      r->init(abi_version, ctx != nullptr ? *ctx : nullptr, hash, name, nnodes, nranks, rank, mask_in,
              mask != nullptr ? __atomic_load_n(mask, __ATOMIC_RELAXED) : 0, abi::kSuccess);
      r->flush();
    }
  } catch (...) {
    if (ctx != nullptr) *ctx = nullptr;
    caught(Problem::kExceptionInit, "init");
  }
  return abi::kSuccess;
}

abi::Result init_v4(void** ctx, int* mask, const char* name, uint64_t hash, int nnodes, int nranks, int rank,
                    abi::Logger logfn) noexcept {
  return init_any(4, ctx, hash, mask, name, nnodes, nranks, rank, logfn);
}

template <int kVersion>
abi::Result init_v5v6(void** ctx, uint64_t hash, int* mask, const char* name, int nnodes, int nranks, int rank,
                      abi::Logger logfn) noexcept {
  return init_any(kVersion, ctx, hash, mask, name, nnodes, nranks, rank, logfn);
}

void* out_of(void** handle) { return handle != nullptr ? *handle : nullptr; }

// The recording variants of the event entry points: the callback and its append under the
// recorder's lock. Out of line, so that the entry points' usual path (not recording) is a load,
// a test and a call.
__attribute__((noinline)) void start_v4_rec(rec::Recorder* r, void* ctx, void** h, abi::DescrV4* d) {
  std::lock_guard<std::mutex> lk(r->mutex());
  core::start_event_v4(ctx, h, d);
  r->start_v4(ctx, out_of(h), d, abi::kSuccess);
}
__attribute__((noinline)) void start_v5_rec(rec::Recorder* r, void* ctx, void** h, abi::DescrV5* d) {
  std::lock_guard<std::mutex> lk(r->mutex());
  core::start_event(ctx, h, d, 5);
  r->start_v5(5, ctx, out_of(h), d, abi::kSuccess);
}
__attribute__((noinline)) void start_v6_rec(rec::Recorder* r, void* ctx, void** h, abi::DescrV6* d) {
  std::lock_guard<std::mutex> lk(r->mutex());
  core::start_event_v6(ctx, h, d);
  r->start_v6(ctx, out_of(h), d, abi::kSuccess);
}
__attribute__((noinline)) void stop_rec(rec::Recorder* r, int v, void* h) {
  std::lock_guard<std::mutex> lk(r->mutex());
  core::stop_event(h);
  r->stop(v, h, abi::kSuccess);
}
__attribute__((noinline)) void record_rec(rec::Recorder* r, int v, void* h, int st, abi::StateArgs* a) {
  std::lock_guard<std::mutex> lk(r->mutex());
  core::record_state(h, st, a);
  r->state(v, h, st, a, abi::kSuccess);
}
__attribute__((noinline)) void fini_rec(rec::Recorder* r, int v, void* ctx) {
  std::lock_guard<std::mutex> lk(r->mutex());
  core::finalize(ctx);
  r->finalize(v, ctx, abi::kSuccess);
}

abi::Result start_v4(void* ctx, void** handle, abi::DescrV4* d) noexcept {
  try {
    if (rec::Recorder* r = abi_hook::recorder(); __builtin_expect(r != nullptr, 0)) {
      start_v4_rec(r, ctx, handle, d);
    } else {
      core::start_event_v4(ctx, handle, d);
    }
  } catch (...) {
    if (handle != nullptr) *handle = nullptr;
    caught(Problem::kExceptionEvent, "startEvent");
  }
  return abi::kSuccess;
}

abi::Result start_v5(void* ctx, void** handle, abi::DescrV5* d) noexcept {
  try {
    if (rec::Recorder* r = abi_hook::recorder(); __builtin_expect(r != nullptr, 0)) {
      start_v5_rec(r, ctx, handle, d);
    } else {
      core::start_event(ctx, handle, d, 5);
    }
  } catch (...) {
    if (handle != nullptr) *handle = nullptr;
    caught(Problem::kExceptionEvent, "startEvent");
  }
  return abi::kSuccess;
}

abi::Result start_v6(void* ctx, void** handle, abi::DescrV6* d) noexcept {
  try {
    if (rec::Recorder* r = abi_hook::recorder(); __builtin_expect(r != nullptr, 0)) {
      start_v6_rec(r, ctx, handle, d);
    } else {
      core::start_event_v6(ctx, handle, d);
    }
  } catch (...) {
    if (handle != nullptr) *handle = nullptr;
    caught(Problem::kExceptionEvent, "startEvent");
  }
  return abi::kSuccess;
}

template <int kVersion>
abi::Result stop(void* handle) noexcept {
  try {
    if (rec::Recorder* r = abi_hook::recorder(); __builtin_expect(r != nullptr, 0)) {
      stop_rec(r, kVersion, handle);
    } else {
      core::stop_event(handle);
    }
  } catch (...) { caught(Problem::kExceptionEvent, "stopEvent"); }
  return abi::kSuccess;
}

template <int kVersion>
abi::Result record(void* handle, int state, abi::StateArgs* args) noexcept {
  try {
    if (rec::Recorder* r = abi_hook::recorder(); __builtin_expect(r != nullptr, 0)) {
      record_rec(r, kVersion, handle, state, args);
    } else {
      core::record_state(handle, state, args);
    }
  } catch (...) { caught(Problem::kExceptionEvent, "recordEventState"); }
  return abi::kSuccess;
}

template <int kVersion>
abi::Result fini(void* ctx) noexcept {
  try {
    if (rec::Recorder* r = abi_hook::recorder()) {
      fini_rec(r, kVersion, ctx);
    } else {
      core::finalize(ctx);
    }
    abi_hook::recording_on_finalize();
  } catch (...) { caught(Problem::kExceptionFinalize, "finalize"); }
  return abi::kSuccess;
}

}  // namespace

// Non-const globals with default visibility: a namespace-scope const object would have internal
// linkage in C++ and dlsym would not find it (docs/nccl-notes.md §1.2).
extern "C" {
__attribute__((visibility("default")))
scout::abi::ProfilerV4 ncclProfiler_v4 = {"scout", init_v4, start_v4, stop<4>, record<4>, fini<4>};
__attribute__((visibility("default")))
scout::abi::ProfilerV5 ncclProfiler_v5 = {"scout", init_v5v6<5>, start_v5, stop<5>, record<5>, fini<5>};
__attribute__((visibility("default")))
scout::abi::ProfilerV6 ncclProfiler_v6 = {"scout", init_v5v6<6>, start_v6, stop<6>, record<6>, fini<6>};
}
