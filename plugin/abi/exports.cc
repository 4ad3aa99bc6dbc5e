// The plugin's ABI boundary: the three tables NCCL looks up with dlsym (digest 1.2) and the
// entry points behind them. Thin on purpose: each entry point is noexcept, catches everything,
// reports an escaped exception once through NCCL's logger, and returns ncclSuccess (NCCL
// ignores the results of the event functions, and a failing init would not disable the plugin
// cleanly, digest 1.3). All logic lives in plugin/core (events.h), which the tests call too.
//
// v5 (NCCL 2.28) and v6 (2.29+) share one implementation; v6 adds the copy-engine events. v4
// (NCCL 2.27) descriptors are translated by plugin/core/v4_adapter.h.
#include "plugin/core/events.h"
#include "plugin/core/log.h"
#include "plugin/core/v4_adapter.h"
#include "scout/nccl_profiler_abi.h"

namespace {

using namespace scout;
using core::log::Problem;

void caught(Problem p, const char* where) noexcept {
  try {
    core::log::warn_once(p, "internal error in %s (exception caught; event ignored)", where);
  } catch (...) {
  }
}

abi::Result init_v4(void** ctx, int* mask, const char* name, uint64_t hash, int nnodes,
                    int nranks, int rank, abi::Logger logfn) noexcept {
  try {
    return core::init_v4(ctx, mask, name, hash, nnodes, nranks, rank, logfn);
  } catch (...) {
    if (ctx != nullptr) *ctx = nullptr;
    caught(Problem::kExceptionInit, "init");
    return abi::kSuccess;
  }
}

template <int kVersion>
abi::Result init_v5v6(void** ctx, uint64_t hash, int* mask, const char* name, int nnodes,
                      int nranks, int rank, abi::Logger logfn) noexcept {
  try {
    return core::init(ctx, hash, mask, name, nnodes, nranks, rank, logfn, kVersion);
  } catch (...) {
    if (ctx != nullptr) *ctx = nullptr;
    caught(Problem::kExceptionInit, "init");
    return abi::kSuccess;
  }
}

abi::Result start_v4(void* ctx, void** handle, abi::DescrV4* d) noexcept {
  try {
    core::start_event_v4(ctx, handle, d);
  } catch (...) {
    if (handle != nullptr) *handle = nullptr;
    caught(Problem::kExceptionEvent, "startEvent");
  }
  return abi::kSuccess;
}

abi::Result start_v5(void* ctx, void** handle, abi::DescrV5* d) noexcept {
  try {
    core::start_event(ctx, handle, d, 5);
  } catch (...) {
    if (handle != nullptr) *handle = nullptr;
    caught(Problem::kExceptionEvent, "startEvent");
  }
  return abi::kSuccess;
}

abi::Result start_v6(void* ctx, void** handle, abi::DescrV6* d) noexcept {
  try {
    core::start_event_v6(ctx, handle, d);
  } catch (...) {
    if (handle != nullptr) *handle = nullptr;
    caught(Problem::kExceptionEvent, "startEvent");
  }
  return abi::kSuccess;
}

abi::Result stop(void* handle) noexcept {
  try {
    core::stop_event(handle);
  } catch (...) {
    caught(Problem::kExceptionEvent, "stopEvent");
  }
  return abi::kSuccess;
}

abi::Result record(void* handle, int state, abi::StateArgs* args) noexcept {
  try {
    core::record_state(handle, state, args);
  } catch (...) {
    caught(Problem::kExceptionEvent, "recordEventState");
  }
  return abi::kSuccess;
}

abi::Result fini(void* ctx) noexcept {
  try {
    return core::finalize(ctx);
  } catch (...) {
    caught(Problem::kExceptionFinalize, "finalize");
    return abi::kSuccess;
  }
}

}  // namespace

// Non-const globals with default visibility: a namespace-scope const object would have internal
// linkage in C++ and dlsym would not find it (digest 1.2).
extern "C" {
__attribute__((visibility("default"))) scout::abi::ProfilerV4 ncclProfiler_v4 = {
    "scout", init_v4, start_v4, stop, record, fini};
__attribute__((visibility("default"))) scout::abi::ProfilerV5 ncclProfiler_v5 = {
    "scout", init_v5v6<5>, start_v5, stop, record, fini};
__attribute__((visibility("default"))) scout::abi::ProfilerV6 ncclProfiler_v6 = {
    "scout", init_v5v6<6>, start_v6, stop, record, fini};
}
