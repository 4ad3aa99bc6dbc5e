// The event layer's entry points (events.h).
#include "plugin/core/events.h"

#include "common/names.h"
#include "plugin/core/api_state.h"
#include "plugin/core/clock.h"
#include "plugin/core/handle.h"
#include "plugin/core/kernel_ch.h"
#include "plugin/core/log.h"
#include "plugin/core/process.h"
#include "plugin/core/proxy_steps.h"
#include "plugin/core/records.h"
#include "plugin/core/thread_cache.h"
#include "plugin/fingerprint/engine.h"
#include "plugin/gemm/capture.h"

namespace scout::core {
namespace {

// Inert handle payloads.
constexpr uint64_t kInertIgnore = 0;     // untracked event: its children and stop are ignored
constexpr uint64_t kInertUntracked = 1;  // API event without state: children recorded, no API

inline void* handle_of(Process* p, HandleType t, uint64_t payload) { return to_ptr(encode(p->salt, t, payload)); }

// The API parent of a Coll/P2p/CeColl: fills *api and returns true if it is usable; sets the
// flags and counters for the other cases.
bool resolve_api(Process* p, CommState* c, void* parent, int abi_version, ApiCopy* api, uint32_t* flags) {
  Decoded par = decode(parent, p->salt);
  if (par.type == HandleType::kApi) {
    switch (api_take(p, par.payload, c->ring_index, api)) {
      case ClaimResult::kFirst:
      case ClaimResult::kReplay: return true;
      case ClaimResult::kLate:
        c->hdr->late_matches.fetch_add(1, std::memory_order_relaxed);
        log::info_once(log::Problem::kLateMatch,
                       "an operation arrived after its API call was recorded as unmatched; "
                       "both records kept, counted in late_matches");
        return true;
      case ClaimResult::kStale:
      case ClaimResult::kGone: break;
    }
    *flags |= shm::kFlagNoApi;
    count_bad_handle(p, c);  // stale (docs/nccl-notes.md §3.10), reused, or another communicator's
    return false;
  }
  *flags |= shm::kFlagNoApi;
  if (par.type == HandleType::kInert && par.payload == kInertUntracked) return false;
  if (abi_version == 4 && (par.type == HandleType::kGroup || parent == nullptr)) return false;
  count_bad_handle(p, c);  // NULL, garbage, or a handle of the wrong kind
  return false;
}

__attribute__((noinline)) void start_op(Process* p, void* ctx, void** out, const abi::DescrV5& d, int abi_version) {
  CommState* c = comm_from_context(p, ctx);
  if (c == nullptr || (d.type == abi::kEvP2p && !p->p2p)) {
    *out = handle_of(p, HandleType::kInert, kInertIgnore);
    return;
  }
  OpContext oc;
  ApiCopy api;
  oc.now = now_ns();
  if (resolve_api(p, c, d.parentObj, abi_version, &api, &oc.flags)) oc.api = &api;
  uint64_t index = 0;
  bool ok = false;
  if (d.type == abi::kEvColl) {
    ok = write_coll(p, c, d.coll, oc, &index);
  } else {
    ok = write_p2p(p, c, d.p2p, oc, &index);
  }
  if (oc.api != nullptr) c->enqueue_group.store(api.group, std::memory_order_release);
  touch(p, oc.now);
  if (abi_version == 4) {  // v4 has no API events (docs/nccl-notes.md §2.5)
    p->proxy.tick(oc.now);
    if (p->progress.pending()) trace_request(p, oc.now);  // the observer's trace request (progress.h)
  }
  *out = ok ? handle_of(p, HandleType::kOp, op_payload(c->ring_index, index))
            : handle_of(p, HandleType::kInert, kInertIgnore);
}

__attribute__((noinline)) void start_api(Process* p, void* ctx, void** out, const abi::DescrV5& d) {
  CommState* c = comm_from_context(p, ctx);
  if (c == nullptr) {
    *out = handle_of(p, HandleType::kInert, kInertIgnore);
    return;
  }
  bool is_p2p = d.type == abi::kEvP2pApi;
  int64_t now = now_ns();
  // NCCL calls on one communicator are not concurrent (NCCL requires it): plain increments.
  c->hdr->api_calls.store(c->hdr->api_calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  c->hdr->last_api_ns.store(now, std::memory_order_relaxed);
  touch(p, now);
  if (p->gemm != nullptr) p->gemm->tick(now);        // GEMM capture windows (plugin/gemm/capture.h)
  p->proxy.tick(now);                                // ProxyStep windows (proxy_window.h)
  if (p->progress.pending()) trace_request(p, now);  // the observer's trace request (progress.h)
  if (is_p2p && !p->p2p) {
    *out = handle_of(p, HandleType::kInert, kInertIgnore);
    return;
  }
  // The thread's block, from the GroupApi parent (no thread-local lookup), else looked up.
  Decoded g = decode(d.parentObj, p->salt);
  ThreadBlock* tb = g.type == HandleType::kGroupApi ? group_block_of(p, g.payload) : nullptr;
  if (tb == nullptr) tb = my_block(p);
  if (tb == nullptr) {
    *out = handle_of(p, HandleType::kInert, kInertUntracked);
    return;
  }
  uint64_t payload;
  if (is_p2p) {
    payload = api_begin(p, tb, c, true, c->api_func.map(d.p2pApi.func, shm::func_id),
                        c->api_dtype.map(d.p2pApi.datatype, shm::datatype_id), d.p2pApi.count, -1,
                        uintptr_t(d.p2pApi.stream), d.p2pApi.graphCaptured, now);
  } else {
    payload = api_begin(p, tb, c, false, c->api_func.map(d.collApi.func, shm::func_id),
                        c->api_dtype.map(d.collApi.datatype, shm::datatype_id), d.collApi.count, d.collApi.root,
                        uintptr_t(d.collApi.stream), d.collApi.graphCaptured, now);
  }
  *out = handle_of(p, HandleType::kApi, payload);
}

__attribute__((noinline)) void start_launch(Process* p, void* ctx, void** out, const abi::DescrV5& d) {
  CommState* c = comm_from_context(p, ctx);
  if (c == nullptr) {
    *out = handle_of(p, HandleType::kInert, kInertIgnore);
    return;
  }
  Decoded g = decode(d.parentObj, p->salt);
  uint64_t gid = g.type == HandleType::kGroupApi ? group_id(g.payload) : 0;
  int64_t now = now_ns();
  c->launch_ns.store(now, std::memory_order_relaxed);
  c->launch_stream.store(uintptr_t(d.kernelLaunch.stream), std::memory_order_relaxed);
  if (c->fp != nullptr) c->launch_tid.store(current_tid(), std::memory_order_relaxed);
  c->launch_group.store(gid, std::memory_order_release);
  uint64_t hint = c->send_hint.load(std::memory_order_relaxed);
  if (hint != 0) c->send_hint.store(0, std::memory_order_relaxed);
  if (p->engine != nullptr && c->fp != nullptr) { p->engine->on_launch_start(c->fp, d.kernelLaunch.stream, hint); }
  *out = handle_of(p, HandleType::kKernelLaunch, ring_payload(c->ring_index));
}

// GroupApi start: per thread, not per communicator (opened even when ctx is a disabled one).
__attribute__((noinline)) void start_group_api(Process* p, void** out, const abi::DescrV5& d) {
  ThreadBlock* tb = my_block(p);
  if (tb == nullptr) {
    *out = handle_of(p, HandleType::kInert, kInertUntracked);
    return;
  }
  bool captured = d.groupApi.graphCaptured;
  uint64_t gid = group_begin(p, tb, captured, d.groupApi.groupDepth);
  *out = handle_of(p, HandleType::kGroupApi, group_payload(tb->index, gid, captured, d.groupApi.groupDepth > 1));
}

// Known events scout does not record (ProxyCtrl, NetPlugin: only if another party enabled
// them), and unknown types.
__attribute__((noinline)) void start_other(Process* p, void* ctx, void** out, uint64_t type) {
  CommState* c = comm_from_context(p, ctx);
  if (type == abi::kEvProxyCtrl || type == abi::kEvNetPlugin) {
    if (c != nullptr) c->hdr->ignored_events.fetch_add(1, std::memory_order_relaxed);
  } else {
    count_unknown(p, type);
  }
  *out = handle_of(p, HandleType::kInert, kInertIgnore);
}

// ProxyOp: under PXN, context and parentObj belong to another process (docs/nccl-notes.md §3.9): they are
// neither dereferenced nor decoded. Ours: timed in a ProxyStep window (proxy_steps.h).
__attribute__((noinline)) void start_proxy_op(Process* p, void* ctx, void** out, const abi::DescrV5& d) {
  if (d.proxyOp.pid != p->pid) {
    // Attributed to the communicator whose KernelCh events this (proxy) thread delivered last.
    CommState* c = nullptr;
    if (t_cache.salt == p->salt && t_cache.last_ring != 0) c = comm_at(p, t_cache.last_ring - 1u);
    if (c != nullptr) {
      c->hdr->foreign_proxy.fetch_add(1, std::memory_order_relaxed);
    } else {
      p->seg_hdr->events_bad_handle.fetch_add(1, std::memory_order_relaxed);
    }
    log::info_once(log::Problem::kForeignProxy,
                   "ignoring ProxyOp events of another process (PXN); counted in foreign_proxy");
  } else if (CommState* c = comm_from_context(p, ctx)) {
    *out = proxy_op_start(p, c, d.proxyOp, d.parentObj);
    return;
  }
  *out = handle_of(p, HandleType::kInert, kInertIgnore);
}

}  // namespace

abi::Result init(void** ctx, uint64_t comm_hash, int* mask, const char* comm_name, int nnodes, int nranks, int rank,
                 abi::Logger logfn, int abi_version, int extra_mask) {
  if (ctx == nullptr) return abi::kSuccess;
  *ctx = nullptr;
  log::set_logger(logfn);
  lock_init();
  Process* p = process_acquire(abi_version);
  if (p == nullptr) {
    unlock_init();
    return abi::kSuccess;
  }
  shm::RingWriter* ring = p->seg->open_ring(comm_hash, nranks, rank, nnodes, comm_name, -1);
  CommState* c = ring != nullptr ? comm_create(ring, comm_hash, nranks, rank, nnodes) : nullptr;
  if (c == nullptr) {
    if (ring == nullptr) {
      log::warn_once(log::Problem::kCommsExhausted,
                     "more than SCOUT_MAX_COMMS=%u communicators: communicator 0x%llx and later "
                     "ones are not recorded (counted in comms_dropped)",
                     p->max_comms, static_cast<unsigned long long>(comm_hash));
    } else {
      p->seg->close_ring(ring);
      log::warn_once(log::Problem::kNoMemory, "out of memory at init: communicator not recorded");
    }
    if (p->live_contexts == 0) process_release(p);
    unlock_init();
    return abi::kSuccess;
  }
  if (p->engine != nullptr) {
    // NCCL does not pass the device: -1 = the init thread's current CUDA device, which NCCL set
    // to the communicator's (docs/nccl-notes.md §1.3). The GPU identity comes from the driver unless
    // SCOUT_GPU gave one.
    c->fp = p->engine->comm_init(comm_hash, nranks, -1, c->hdr);
    if (c->fp != nullptr) p->fp_any.store(true, std::memory_order_relaxed);
    if (p->seg_hdr->gpu[0] == '\0') {
      char uuid[64];
      if (p->engine->gpu_uuid(-1, uuid, sizeof(uuid))) set_gpu_identity(uuid, -1);
    }
  }
  c->live.store(kCommLiveActive, std::memory_order_release);
  p->comms[c->ring_index].store(c, std::memory_order_release);
  p->live_contexts++;
  if (p->proxy.enabled()) {
    c->proxy = proxy_comm_create(nranks);
    if (c->proxy == nullptr) log::warn_once(log::Problem::kNoMemory, "out of memory at init: no ProxyStep timing");
  }
  *ctx = handle_of(p, HandleType::kContext, ring_payload(c->ring_index));
  // A window open now keeps its bits (proxy_window.h).
  // NCCL reads the mask on other threads, and ProxyStep windows change it from any API call: atomic.
  if (mask != nullptr) {
    __atomic_store_n(mask, kActivationMask | extra_mask | p->proxy.attach_mask(mask), __ATOMIC_RELAXED);
  }
  unlock_init();
  return abi::kSuccess;
}

void start_event(void* ctx, void** out, const abi::DescrV5* d, int abi_version) {
  if (out == nullptr) return;
  *out = nullptr;
  Process* p = process();
  if (p == nullptr || d == nullptr) return;
  // A thin dispatcher: each kind of event has its own out-of-line function, so the frequent
  // small ones do not pay for the large ones' register saves.
  // Types are single bits (docs/nccl-notes.md §2.2): switch on the bit's position (a jump table).
  uint64_t type = d->type;
  int bit = type != 0 && (type & (type - 1)) == 0 ? __builtin_ctzll(type) : -1;
  switch (bit) {
    case 8: return start_group_api(p, out, *d);     // GroupApi
    case 9:                                         // CollApi
    case 10: return start_api(p, ctx, out, *d);     // P2pApi
    case 11: return start_launch(p, ctx, out, *d);  // KernelLaunch
    case 0:                                         // Group
      // Nothing is recorded for the legacy Group event; a non-null handle keeps NCCL's rule for
      // graph-captured seqNumbers working (docs/nccl-notes.md §3.6) and marks v4 Coll/P2p parents.
      *out = handle_of(p, HandleType::kGroup, 0);
      return;
    case 1:                                                 // Coll
    case 2: return start_op(p, ctx, out, *d, abi_version);  // P2p
    case 6:                                                 // KernelCh
      // The parent names the record and its communicator; the context is only decoded to count
      // a bad parent against it.
      *out = kernelch_start(p, ctx, *d);
      return;
    case 3: return start_proxy_op(p, ctx, out, *d);                 // ProxyOp
    case 4: *out = proxy_step_start(p, ctx, d->parentObj); return;  // ProxyStep
    default: return start_other(p, ctx, out, type);
  }
}

void start_event_v6(void* ctx, void** out, const abi::DescrV6* d) {
  if (out == nullptr) return;
  *out = nullptr;
  if (d == nullptr) return;
  uint64_t type = d->type;
  if (type != abi::kEvCeColl && type != abi::kEvCeSync && type != abi::kEvCeBatch) {
    // Every v5 member has the same offsets in v6 (docs/nccl-notes.md §2.5).
    start_event(ctx, out, reinterpret_cast<const abi::DescrV5*>(d), 6);
    return;
  }
  Process* p = process();
  if (p == nullptr) return;
  CommState* c = comm_from_context(p, ctx);
  if (c == nullptr) {
    *out = handle_of(p, HandleType::kInert, kInertIgnore);
    return;
  }
  if (type != abi::kEvCeColl) {
    c->hdr->ignored_events.fetch_add(1, std::memory_order_relaxed);
    *out = handle_of(p, HandleType::kInert, kInertIgnore);
    return;
  }
  OpContext oc;
  ApiCopy api;
  oc.now = now_ns();
  if (resolve_api(p, c, d->parentObj, 6, &api, &oc.flags)) oc.api = &api;
  uint64_t index = 0;
  write_ce_coll(p, c, d->ceColl, oc, &index);
  touch(p, oc.now);
  *out = handle_of(p, HandleType::kOp, op_payload(c->ring_index, index));
}

void stop_event(void* handle) {
  Process* p = process();
  if (p == nullptr) return;
  Decoded h = decode(handle, p->salt);
  switch (h.type) {
    case HandleType::kGroupApi: {
      ThreadBlock* tb = group_block_of(p, h.payload);
      if (tb != nullptr) {
        group_end(p, tb);
      } else {
        count_bad_handle(p, nullptr);  // not this thread's open group
      }
      return;
    }
    case HandleType::kKernelCh: kernelch_stop(p, h.payload); return;
    case HandleType::kProxyStep: proxy_step_stop(p, h.payload); return;
    case HandleType::kProxyCount: proxy_count_stop(p, h.payload); return;
    case HandleType::kProxyOp: proxy_op_stop(p, h.payload); return;  // its steps were handled on their own
    case HandleType::kKernelLaunch:  // the launch returned; the fingerprint work was queued at its start
    case HandleType::kApi:           // CollApi/P2pApi stop: the call returned (nothing to record)
    case HandleType::kGroup:         // legacy Group stop
    case HandleType::kOp:            // Coll/P2p stop = enqueued, not completed (docs/nccl-notes.md §3.3)
    case HandleType::kInert: return;
    case HandleType::kContext:
    case HandleType::kInvalid: count_bad_handle(p, nullptr); return;
  }
}

void record_state(void* handle, int state, const abi::StateArgs* args) {
  Process* p = process();
  if (p == nullptr) return;
  Decoded h = decode(handle, p->salt);
  switch (h.type) {
    case HandleType::kGroupApi:
      if (state == abi::kStateGroupStartApiStop || state == abi::kStateGroupEndApiStart) return;
      count_unknown(p, uint64_t(state));
      return;
    case HandleType::kKernelCh:
      if (state == abi::kStateKernelChStop) {
        kernelch_stop_state(p, h.payload, args);
      } else {
        count_unknown(p, uint64_t(state));
      }
      return;
    case HandleType::kProxyStep: proxy_step_state(p, h.payload, state, args); return;
    case HandleType::kProxyCount: proxy_count_state(p, h.payload, state); return;
    case HandleType::kProxyOp:
      if (state == abi::kStateProxyOpInProgress) return;
      count_unknown(p, uint64_t(state));
      return;
    case HandleType::kInert: return;
    case HandleType::kContext:
    case HandleType::kInvalid: count_bad_handle(p, nullptr); return;
    default: count_unknown(p, uint64_t(state)); return;
  }
}

abi::Result finalize(void* ctx) {
  lock_init();
  Process* p = process();
  if (p == nullptr) {
    unlock_init();
    return abi::kSuccess;
  }
  Decoded d = decode(ctx, p->salt);
  CommState* c = d.type == HandleType::kContext ? comm_at(p, payload_ring(d.payload)) : nullptr;
  if (c == nullptr || c->live.load(std::memory_order_acquire) != kCommLiveActive) {
    if (ctx != nullptr) count_bad_handle(p, nullptr);
    unlock_init();
    return abi::kSuccess;
  }
  sweep_comm(p, c);
  if (p->engine != nullptr && c->fp != nullptr) p->engine->comm_fini(c->fp);
  c->fp = nullptr;
  c->live.store(kCommLiveFinalized, std::memory_order_release);
  p->seg->close_ring(c->ring);
  if (--p->live_contexts == 0) process_release(p);
  unlock_init();
  return abi::kSuccess;
}

}  // namespace scout::core
