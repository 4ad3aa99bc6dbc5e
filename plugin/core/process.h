// Process-wide state of the plugin: configuration, identity, the segment, the fingerprint
// engine, the communicator table and the per-thread API blocks.
//
// Created at the first communicator init of a load cycle and destroyed at the last finalize
// (refcounted by live contexts), so after the last finalize nothing of the plugin remains: no
// thread, no atexit handler, no pthread key, no mapping (docs/nccl-notes.md §1.2: NCCL then dlcloses the
// library and may dlopen it again). Creation and destruction run under one mutex that only
// init and finalize take; the hot path reads the state through one atomic pointer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/segment_writer.h"
#include "plugin/core/api_state.h"
#include "plugin/core/comm.h"
#include "plugin/core/handle.h"
#include "plugin/core/link_table.h"
#include "plugin/core/progress.h"
#include "plugin/core/proxy_window.h"
#include "scout/config.h"

namespace scout::fp {
class Engine;
}
namespace scout::gemm {
class Capture;
class ShapeTable;
}  // namespace scout::gemm

namespace scout::core {

struct Process {
  uint16_t salt = 0;  // handle salt of this load cycle (handle.h)
  int pid = 0;
  config::Config cfg;
  bool p2p = true;  // SCOUT_P2P
  std::unique_ptr<shm::SegmentWriter> seg;
  shm::SegmentHeader* seg_hdr = nullptr;
  fp::Engine* engine = nullptr;
  gemm::ShapeTable* gemm_table = nullptr;  // SCOUT_GEMM_CAPTURE=1 only (plugin/gemm/)
  gemm::Capture* gemm = nullptr;
  LinkTable links;         // link table (SCOUT_PROXY_TIMING=1 or SCOUT_NET_DELEGATE set); header() null if none
  ProxyWindows proxy;      // ProxyStep windows (SCOUT_PROXY_TIMING=1 with a link table)
  ProgressTable progress;  // progress table and trace requests (SCOUT_PROXY_TIMING=1); header() null if none
  int global_rank = -1;    // identity (identity.h), also carried in net listen handles
  uint64_t host_hash = 0;  // FNV-1a 64 of the host name
  std::atomic<bool> fp_any{false};  // some communicator has fingerprints (group hooks needed)
  uint32_t max_comms = 0;
  int live_contexts = 0;  // guarded by the init mutex
  std::atomic<CommState*> comms[shm::kMaxCommsLimit] = {};
  std::atomic<ThreadBlock*> blocks[kMaxThreadBlocks] = {};
  std::atomic<uint32_t> n_blocks{0};
  std::atomic<uint64_t> next_group{1};  // group ids are handed out in batches per thread
};

// The live process state, or nullptr (no communicator enabled). Hot path: one acquire load.
extern std::atomic<Process*> g_process;
inline Process* process() { return g_process.load(std::memory_order_acquire); }

// Creates the process state if there is none (first init of a load cycle). Reads the SCOUT_*
// configuration (bad values reported once each through NCCL's logger), the identity, creates
// the segment and the fingerprint engine, and prints the effective configuration once at INFO.
// Returns nullptr when scout is disabled (SCOUT_ENABLE=0) or the segment cannot be created (one
// WARN with the path and reason). `abi_version` (4, 5, 6) is stamped into the segment header;
// 0 (the net half's init, which NCCL runs before the profiler's) leaves it for the profiler's
// first init to stamp. Caller holds init_mutex(); it counts its context in live_contexts.
Process* process_acquire(int abi_version);

// Destroys the process state (caller holds init_mutex(); no communicator is live).
void process_release(Process* p);

// What the net plugin half did (shm::NetHalfState, NCCL's net table version, the delegate's
// version and name), written into the link table header now if the process state has one, and
// kept for a segment created later (NCCL inits the net half before the profiler half, so the
// first refusal happens before any segment exists). Caller holds init_mutex().
void note_net_state(uint32_t state, int net_abi, int delegate_abi, const char* delegate);

// The mutex init and finalize take (never taken on the hot path).
void lock_init();
void unlock_init();

// The communicator named by ring `ring` if it exists (active or finalized), else nullptr.
inline CommState* comm_at(Process* p, uint32_t ring) {
  if (ring >= p->max_comms) return nullptr;
  return p->comms[ring].load(std::memory_order_acquire);
}

// The active communicator named by an init context, or nullptr. A non-null context that is not
// one of this load's handles is counted (events_bad_handle) and logged once.
CommState* comm_from_context_slow(Process* p, void* ctx);
inline CommState* comm_from_context(Process* p, void* ctx) {
  Decoded d = decode(ctx, p->salt);
  if (d.type == HandleType::kContext) {
    uint32_t ring = payload_ring(d.payload);
    if (ring < p->max_comms) {
      CommState* c = p->comms[ring].load(std::memory_order_acquire);
      if (c != nullptr && c->live.load(std::memory_order_relaxed) == kCommLiveActive) return c;
    }
  }
  return comm_from_context_slow(p, ctx);
}

// Counts one bad handle: on the communicator when known, else on the segment header.
void count_bad_handle(Process* p, CommState* c);

// Counts one unknown event type or state (segment header).
void count_unknown(Process* p, uint64_t what);

// Advances SegmentHeader::last_event_ns to `now` at most once per millisecond (cheap).
inline void touch(Process* p, int64_t now) {
  auto& last = p->seg_hdr->last_event_ns;
  if (now - last.load(std::memory_order_relaxed) > 1000000) last.store(now, std::memory_order_relaxed);
}

// Sets the GPU identity in the segment header if it is still empty (the fingerprint engine
// calls this with "GPU-<uuid>" once it asked the driver); and the CUDA device ordinal if unset.
// Safe to call from any thread; the first non-empty value wins.
void set_gpu_identity(const char* gpu, int cuda_dev);

}  // namespace scout::core
