// scout's own handling of each callback (scout_calls.h).
#include "plugin/abi/scout_calls.h"

#include <mutex>

#include "plugin/abi/recording.h"
#include "plugin/core/events.h"
#include "plugin/core/v4_adapter.h"
#include "plugin/record/recorder.h"

namespace scout::abi_hook {
namespace {

void* out_of(void** handle) { return handle != nullptr ? *handle : nullptr; }

// The recording variants: the callback and its append under the recorder's lock. Out of line, so
// that the usual path (not recording) is a load, a test and a call.
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

}  // namespace

void scout_init(int version, void** ctx, uint64_t hash, int* mask, const char* name, int nnodes, int nranks, int rank,
                abi::Logger logfn, int extra_mask) {
  recording_on_init();
  int mask_in = mask != nullptr ? __atomic_load_n(mask, __ATOMIC_RELAXED) : 0;  // written by other inits
  rec::Recorder* r = recorder();
  std::unique_lock<std::mutex> lk;
  if (r != nullptr) lk = std::unique_lock<std::mutex>(r->mutex());
  core::init(ctx, hash, mask, name, nnodes, nranks, rank, logfn, version, extra_mask);
  if (r != nullptr) {
    r->init(version, ctx != nullptr ? *ctx : nullptr, hash, name, nnodes, nranks, rank, mask_in,
            mask != nullptr ? __atomic_load_n(mask, __ATOMIC_RELAXED) : 0, abi::kSuccess);
    r->flush();
  }
}

void scout_start_v4(void* ctx, void** handle, abi::DescrV4* d) {
  if (rec::Recorder* r = recorder(); __builtin_expect(r != nullptr, 0)) {
    start_v4_rec(r, ctx, handle, d);
  } else {
    core::start_event_v4(ctx, handle, d);
  }
}

void scout_start_v5(void* ctx, void** handle, abi::DescrV5* d) {
  if (rec::Recorder* r = recorder(); __builtin_expect(r != nullptr, 0)) {
    start_v5_rec(r, ctx, handle, d);
  } else {
    core::start_event(ctx, handle, d, 5);
  }
}

void scout_start_v6(void* ctx, void** handle, abi::DescrV6* d) {
  if (rec::Recorder* r = recorder(); __builtin_expect(r != nullptr, 0)) {
    start_v6_rec(r, ctx, handle, d);
  } else {
    core::start_event_v6(ctx, handle, d);
  }
}

void scout_stop(int version, void* handle) {
  if (rec::Recorder* r = recorder(); __builtin_expect(r != nullptr, 0)) {
    stop_rec(r, version, handle);
  } else {
    core::stop_event(handle);
  }
}

void scout_record(int version, void* handle, int state, abi::StateArgs* args) {
  if (rec::Recorder* r = recorder(); __builtin_expect(r != nullptr, 0)) {
    record_rec(r, version, handle, state, args);
  } else {
    core::record_state(handle, state, args);
  }
}

void scout_finalize(int version, void* ctx) {
  if (rec::Recorder* r = recorder()) {
    fini_rec(r, version, ctx);
  } else {
    core::finalize(ctx);
  }
  recording_on_finalize();
}

}  // namespace scout::abi_hook
