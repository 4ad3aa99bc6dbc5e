// The NCCL call sequencer: ncclGroupStart/End, collectives, send/recv and AlltoAll on emulated
// communicators, issuing the profiler callbacks in NCCL 2.28.9's order, on its threads, with its
// descriptors (docs/nccl-notes.md §1.4, 3.1-3.3, 3.6, 3.10; docs/scout-sim.md "Call sequence"):
//
//   user thread, per API call (taskAppend):
//     GroupApi start (outermost group only; groupDepth = ncclGroupDepth) + GroupStartApiStop
//     CollApi start/stop  or  P2pApi start/stop (AlltoAll: one Send and one Recv per peer)
//   user thread, outermost group end:
//     GroupApi state GroupEndApiStart
//     per communicator plan: KernelLaunch start, launch, KernelLaunch stop,
//       Group start, Coll start (seqNumber = comm->seqNumber[func]++) ..., P2p start ...,
//       plan posted to the proxy thread, Coll/P2p stops, Group stop
//     GroupApi stop
//   proxy thread: KernelCh start per channel, KernelChStop state + stop per channel.
//
// Every event is gated by the activation mask NCCL read at the API call (docs/nccl-notes.md §2.2). One NcclApi
// per rank, used from one thread (NCCL's thread-local API state lives here).
#pragma once

#include <cstdint>
#include <vector>

#include "test/sim/communicator.h"
#include "test/sim/faults.h"

namespace scout::sim {

class NcclApi {
 public:
  explicit NcclApi(RankContext* rc) : rc_(rc) {}

  // Training step the following calls belong to (ground truth and step-scoped faults).
  void set_step(int64_t step) { step_ = step; }
  // Operations issued so far (the index the next one gets; options.h defines "operation").
  uint64_t ops() const { return op_; }

  void group_start();  // ncclGroupStart
  void group_end();    // ncclGroupEnd: launches when the outermost group closes

  // Collectives on float32 buffers. Counts as NCCL takes them: AllReduce/Broadcast count,
  // AllGather sendcount, ReduceScatter recvcount. `root` is a comm rank.
  void all_reduce(const float* send, float* recv, uint64_t count, Communicator& comm);
  void all_gather(const float* send, float* recv, uint64_t sendcount, Communicator& comm);
  void reduce_scatter(const float* send, float* recv, uint64_t recvcount, Communicator& comm);
  void broadcast(const float* send, float* recv, uint64_t count, int root, Communicator& comm);
  void send(const float* buf, uint64_t count, int peer, Communicator& comm);
  void recv(float* buf, uint64_t count, int peer, Communicator& comm);
  // ncclAlltoAll: `count` elements to and from every peer; lowered to Send/Recv tasks.
  void all_to_all(const float* send, float* recv, uint64_t count, Communicator& comm);

  // Waits for every communicator this API launched on to finish its kernels (stream sync).
  void synchronize();

 private:
  struct Task {
    KernelTask k;
    void* api_handle = nullptr;        // CollApi/P2pApi handle
    void* group_api_handle = nullptr;  // GroupApi handle at append time
  };
  struct Pending {
    Communicator* comm;
    std::vector<Task> colls, p2ps;
  };

  // Start of API operation op_: looks up its faults; a hang fault stops the rank here, before
  // the call (never returns). key/key_peer name the operation in the ground truth.
  OpFaults begin_op(Func f, Communicator& comm, uint64_t key, int key_peer);
  void coll(Func f, const float* send, float* recv, uint64_t count, int root, Communicator& comm);
  void p2p_task(Func f, float* buf, uint64_t count, int peer, Communicator& comm, const OpFaults& faults);
  void group_api_begin(Communicator& comm);  // ncclProfilerStartGroupApiEvent + GroupStartApiStop
  void group_start_internal() { ++group_depth_; }
  void group_end_internal();
  void launch(Pending& p);
  Pending& pending_for(Communicator& comm);
  [[noreturn]] void stop_forever(Func func, Communicator& comm, uint64_t key, int key_peer);
  // enqueuestall: the calling thread stays inside the API call (after its CollApi/P2pApi start).
  [[noreturn]] void stall_in_call(Func func, Communicator& comm, uint64_t key, int key_peer);

  RankContext* rc_;
  int64_t step_ = 0;
  uint64_t op_ = 0;
  // NCCL's thread-local state (ncclGroupDepth, ncclProfilerApiState).
  int group_depth_ = 0;
  int profiler_group_depth_ = 0;
  int group_api_state_ = 0;  // 0 none/reset, 1 started, 2 start-stop recorded
  void* group_api_ = nullptr;
  uint64_t api_mask_ = 0;
  void* coll_api_ = nullptr;  // not cleared by CollApi stop (docs/nccl-notes.md §3.10, "Stale handles")
  void* p2p_api_ = nullptr;
  std::vector<Pending> pending_;     // communicators of the open group, first use first
  std::vector<Communicator*> used_;  // communicators launched on (for synchronize)
};

}  // namespace scout::sim
