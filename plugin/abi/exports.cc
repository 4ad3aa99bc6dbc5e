// The plugin's ABI boundary: the three tables NCCL looks up with dlsym (docs/nccl-notes.md §1.2) and the
// entry points behind them. Thin on purpose: each entry point is noexcept, catches everything,
// reports an escaped exception once through NCCL's logger, and returns ncclSuccess (NCCL
// ignores the results of the event functions, and a failing init would not disable the plugin
// cleanly, docs/nccl-notes.md §1.3). All logic lives in plugin/core (events.h), which the tests call too.
//
// v5 (NCCL 2.28) and v6 (2.29+) share one implementation; v6 adds the copy-engine events. v4
// (NCCL 2.27) descriptors are translated by plugin/core/v4_adapter.h. scout's own handling of
// each callback (with the call recording of SCOUT_RECORD_CALLS) is in plugin/abi/scout_calls.h;
// with SCOUT_PROFILER_DELEGATE set, every callback also reaches a second profiler plugin through
// plugin/abi/forward.h.
#include "plugin/abi/forward.h"
#include "plugin/abi/scout_calls.h"
#include "plugin/core/log.h"
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
    abi_hook::fwd_init(abi_version, ctx, hash, mask, name, nnodes, nranks, rank, logfn);
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

abi::Result start_v4(void* ctx, void** handle, abi::DescrV4* d) noexcept {
  try {
    if (__builtin_expect(abi_hook::delegating(), 0)) {
      abi_hook::fwd_start_v4(ctx, handle, d);
    } else {
      abi_hook::scout_start_v4(ctx, handle, d);
    }
  } catch (...) {
    if (handle != nullptr) *handle = nullptr;
    caught(Problem::kExceptionEvent, "startEvent");
  }
  return abi::kSuccess;
}

abi::Result start_v5(void* ctx, void** handle, abi::DescrV5* d) noexcept {
  try {
    if (__builtin_expect(abi_hook::delegating(), 0)) {
      abi_hook::fwd_start(5, ctx, handle, reinterpret_cast<abi::DescrV6*>(d));  // same layout (nccl_profiler_abi.h)
    } else {
      abi_hook::scout_start_v5(ctx, handle, d);
    }
  } catch (...) {
    if (handle != nullptr) *handle = nullptr;
    caught(Problem::kExceptionEvent, "startEvent");
  }
  return abi::kSuccess;
}

abi::Result start_v6(void* ctx, void** handle, abi::DescrV6* d) noexcept {
  try {
    if (__builtin_expect(abi_hook::delegating(), 0)) {
      abi_hook::fwd_start(6, ctx, handle, d);
    } else {
      abi_hook::scout_start_v6(ctx, handle, d);
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
    if (__builtin_expect(abi_hook::delegating(), 0)) {
      abi_hook::fwd_stop(kVersion, handle);
    } else {
      abi_hook::scout_stop(kVersion, handle);
    }
  } catch (...) { caught(Problem::kExceptionEvent, "stopEvent"); }
  return abi::kSuccess;
}

template <int kVersion>
abi::Result record(void* handle, int state, abi::StateArgs* args) noexcept {
  try {
    if (__builtin_expect(abi_hook::delegating(), 0)) {
      abi_hook::fwd_record(kVersion, handle, state, args);
    } else {
      abi_hook::scout_record(kVersion, handle, state, args);
    }
  } catch (...) { caught(Problem::kExceptionEvent, "recordEventState"); }
  return abi::kSuccess;
}

template <int kVersion>
abi::Result fini(void* ctx) noexcept {
  try {
    abi_hook::fwd_finalize(kVersion, ctx);
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
