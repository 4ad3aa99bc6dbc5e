// Per-peer network step times from NCCL's ProxyOp and ProxyStep events, while a ProxyStep window
// is open (proxy_window.h; docs/net-plugin.md, "ProxyStep timing").
//
// A ProxyOp of this process (pid == ours; a PXN op of another process is never looked at,
// docs/nccl-notes.md §3.9) started in an open window names the peer and the direction; its
// handle carries them. Each ProxyStep under it takes a step slot of its communicator and is
// timed (docs/nccl-notes.md §2.3, §3.4, §6.7):
//   send  SendWait (the isend was accepted; args: transSize) -> stopEvent (the network test
//         reported it done)
//   recv  RecvWait (the irecv was posted) -> RecvFlushWait (the test completed it; args:
//         transSize)
// and added to the link table entry of (communicator, peer, direction), source proxy, claimed at
// the first step of that peer and direction (one claim per peer, never per step).
//
// Only steps that start while the window of their ProxyOp is still open are timed; a step that
// started inside a window is timed even when it completes after the close. A step that cannot
// be timed is counted in the header's proxy_untimed: its op's window closed, its slot was taken
// over by a newer step before it finished (kProxyStepSlots in flight), a state was missing, or
// the table had no entry for its peer (dropped_full counts that link once).
//
// Progress (progress.h): every ProxyOp of this process that arrives (at all times with
// SCOUT_PROXY_PROGRESS=1, the default; otherwise in a window, or while its communicator is traced at
// the observer's request) also takes the progress table entry of its (communicator, channel, peer,
// direction), which then follows its steps through NCCL's states:
//   send  SendGPUWait (waiting for the GPU's data) -> SendPeerWait (waiting for the peer's buffer)
//         -> SendWait (in the network) -> stop (the network completed it)
//   recv  RecvWait (in the network) -> RecvFlushWait (received) -> RecvGPUWait (handed to the
//         GPU) -> stop (the GPU consumed it)
// so a collective that stops shows where: a send in the network that never completes (the link),
// received data the GPU never consumes (the GPU), steps that starve behind them.
// A step that is not timed takes no step slot (slots stay with timed steps in flight): its handle
// (kProxyCount) names the entry and its op, and each state is counted as it arrives; SendPeerWait,
// which NCCL may record several times per step, is counted for timed steps only, and the entry's
// last_ns follows a counted step's start and stop only (no clock read per state).
// An entry follows its tuple's ops in NCCL's order: NCCL starts a ProxyOp when the proxy thread
// appends it, but runs the ops of one connection one after another (an op appended behind a running
// one waits in its nextPeer list, v2.28.9-1:src/proxy.cc ProxyAppend), so a ProxyOp that arrives
// while the entry's op has not stopped waits in a small queue (kProgressPending) and takes the
// entry when that op stops: a collective that stops keeps its entry while later operations are
// enqueued behind it. A full queue (an op that never stops: only the net transport stops its
// ProxyOps, docs/nccl-notes.md §3.4) gives the entry to the newest op.
//
// Threads: a communicator's ProxyOp and ProxyStep events come from its proxy thread
// (docs/nccl-notes.md §1.4), so its slots and link entries have one writer and are updated with
// plain stores; nothing here allocates, locks, blocks or throws.
#pragma once

#include <atomic>
#include <cstdint>

#include "scout/nccl_profiler_abi.h"
#include "scout/shm_format.h"

namespace scout::core {

struct Process;
struct CommState;

constexpr uint32_t kProxyStepSlots = 1024;  // steps of one communicator in flight (power of two)

struct ProxyStepSlot {
  int64_t t0 = 0;                      // SendWait / RecvWait (ns)
  uint64_t bytes = 0;                  // send: transSize of SendWait
  shm::LinkEntry* entry = nullptr;     // the link of the step's peer and direction; null: not timed
  shm::ProgressEntry* prog = nullptr;  // its progress entry; null: none
  uint32_t prog_gen = 0;               // the entry's op_gen when the step started
  uint32_t gen = 0;                    // generation, in the step handle (24 bits)
  uint32_t window = 0;                 // ProxyWindows::current() at the step's start
  uint8_t send = 0;
  uint8_t state = 0;  // ProxySlotState (proxy_steps.cc)
  uint8_t seen = 0;   // progress states counted (proxy_steps.cc)
};

constexpr uint32_t kProgressSlots = 256;  // (channel, peer, direction) tuples of one communicator (power of two)

// A ProxyOp waiting for its entry (proxy_steps.cc): its collective's seqNumber and Func, nSteps.
struct PendingProxyOp {
  uint64_t key = ~0ull;
  uint32_t func = 255;
  uint32_t n_steps = 0;
};
constexpr uint32_t kProgressPending = 4;  // ProxyOps of one tuple queued behind its running one

// Where a communicator's tuple lives in the progress table: key 0 empty; index = entry + 1, 0 =
// the table was full; the ProxyOps queued behind the entry's running op, oldest at `head`.
struct ProgressSlot {
  uint64_t key = 0;
  uint32_t index = 0;
  uint8_t head = 0, queued = 0;
  PendingProxyOp pending[kProgressPending];
};

// A communicator's step timing state (allocated at init when SCOUT_PROXY_TIMING=1).
struct ProxyComm {
  shm::LinkEntry** links = nullptr;  // [2 * nranks]: peer's send entry at 2*peer, recv at 2*peer+1
  ProxyStepSlot slots[kProxyStepSlots];
  uint32_t next = 0;  // next slot to take
  ProgressSlot prog[kProgressSlots];
  std::atomic<uint8_t> traced{0};  // traced at the observer's request (ProxyWindows::trace)
};

// Allocates the state for a communicator of `nranks` ranks; nullptr when memory is short.
ProxyComm* proxy_comm_create(int nranks);
void proxy_comm_free(ProxyComm* pc);

// ProxyOp start of this process's communicator `c` (caller checked pid == ours); `parent` is the
// descriptor's parentObj (the Coll/P2p handle: its record names the operation). Returns the handle:
// a ProxyOp handle when a window is open or `c` is traced and the peer is a rank of `c`, else an
// inert one (counted in the communicator's ignored_events).
void* proxy_op_start(Process* p, CommState* c, const abi::ProxyOpDescr& d, void* parent);
// ProxyOp stop of a ProxyOp handle's payload: its progress entry's op_stopped.
void proxy_op_stop(Process* p, uint64_t payload);

// ProxyStep start; `parent` is what NCCL passed as parentObj (a ProxyOp handle of ours, an inert
// handle, or anything else). Returns the step's handle (inert when the step is not timed).
void* proxy_step_start(Process* p, void* ctx, void* parent);

// recordEventState and stopEvent of a ProxyStep handle's payload.
void proxy_step_state(Process* p, uint64_t payload, int state, const abi::StateArgs* args);
void proxy_step_stop(Process* p, uint64_t payload);

// recordEventState and stopEvent of a ProxyCount handle's payload (a step counted, not timed).
void proxy_count_state(Process* p, uint64_t payload, int state);
void proxy_count_stop(Process* p, uint64_t payload);

}  // namespace scout::core
