// The training step scout-sim runs on every rank (docs/scout-sim.md, "Per-step operations"):
// the NCCL API calls of one step of a Megatron-style 3-D parallel job, as data. A pure function
// of (layout, options, global rank, step), so the option checks, the fabric sizing and the rank
// process all agree on it.
//
// With B = --bytes and c = B / 4 float32 elements, one step of a rank at pipeline stage s is:
//   forward:  PP group {Send(next), Recv(prev)}  (Megatron batch_isend_irecv; ends omitted)
//             TP AllReduce c (in place), TP AllGather c/T per rank,
//             EP AlltoAll c/E per peer (token dispatch), TP ReduceScatter c/T per rank
//   backward: PP group {Send(prev), Recv(next)}, EP AlltoAll (combine), TP AllReduce c,
//             DP user group {4 x AllReduce c (gradient buckets, in place)}
//   every --bcast-every steps (step % k == 0): world Broadcast max(64, c/8) from root 0, in place
// Point-to-point messages are c/2 elements. A call on a communicator of one rank is skipped.
#pragma once

#include <cstdint>
#include <vector>

#include "test/sim/layout.h"
#include "test/sim/nccl_types.h"
#include "test/sim/options.h"

namespace scout::sim {

enum class ActionKind : uint8_t { kGroupStart, kGroupEnd, kColl, kSend, kRecv, kAlltoAll };

// One NCCL API call of the step. Counts are what the caller passes to NCCL (elements of float32):
// AllReduce/Broadcast count, AllGather sendcount, ReduceScatter recvcount, Send/Recv count,
// AlltoAll count per peer.
struct Action {
  ActionKind kind = ActionKind::kColl;
  CommKind comm = CommKind::kWorld;
  Func func = Func::kAllReduce;  // kColl: the collective; kSend/kRecv/kAlltoAll: that function
  uint64_t count = 0;
  int peer = -1;          // Broadcast root or Send/Recv peer, as a comm rank
  bool in_place = false;  // sendbuff == recvbuff (AllReduce, Broadcast)

  bool is_op() const { return kind != ActionKind::kGroupStart && kind != ActionKind::kGroupEnd; }
};

constexpr int kDpBuckets = 4;

// Elements this rank sends (reads from its send buffer) and receives for an action in a
// communicator of `nranks` ranks (`is_root`: Broadcast root).
uint64_t action_send_elems(const Action& a, int nranks, bool is_root);
uint64_t action_recv_elems(const Action& a, int nranks);

// The API calls of global rank g in step `step`, in issue order.
std::vector<Action> step_actions(const Layout& layout, const SimOptions& o, int g, int64_t step);

// Operations (non-group actions) of rank g in the whole run (all --steps steps).
uint64_t total_ops(const Layout& layout, const SimOptions& o, int g);

// Index of rank g's first operation in step `step` (= operations of steps 0..step-1).
uint64_t first_op_of_step(const Layout& layout, const SimOptions& o, int g, int64_t step);

// Step and action of rank g's operation `op`; false if the run has fewer operations.
bool find_op(const Layout& layout, const SimOptions& o, int g, uint64_t op, int64_t* step, Action* action);

}  // namespace scout::sim
