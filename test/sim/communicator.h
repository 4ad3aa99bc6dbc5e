// One rank's emulated NCCL communicator: identity (commHash, name, rank), NCCL's per-function
// seqNumber counters, and the proxy thread that runs the communicator's emulated kernels and
// delivers KernelCh events (docs/nccl-notes.md §1.4: ProxyOp/KernelCh come from the proxy thread).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "test/sim/layout.h"
#include "test/sim/nccl_types.h"
#include "test/sim/net_transport.h"
#include "test/sim/rank_context.h"

namespace scout::sim {

// One task of a kernel plan as the emulated GPU sees it.
struct KernelTask {
  Func func = Func::kAllReduce;  // collective, kSend or kRecv
  const float* send = nullptr;
  float* recv = nullptr;
  uint64_t count = 0;  // elements as passed to NCCL by this rank (after desync)
  int peer = -1;       // Broadcast root / Send-Recv peer (comm rank)
  uint8_t n_channels = 1;
  uint8_t channel_base = 0;
  void* handle = nullptr;  // Coll/P2p handle: KernelCh parent
  uint64_t mask = 0;       // activation mask stored in the task at API time
  uint64_t ordinal = 0;    // fabric index: collective ordinal / message ordinal of the pair
  uint64_t key = 0;        // seqNumber (collective) or per-peer counter (p2p)
  int64_t step = 0;
  uint64_t op = 0;          // rank-local API operation index (for ground truth)
  int64_t straggle_ms = 0;  // straggler fault: arrive this late
  const FaultSpec* crash = nullptr;
  const FaultSpec* sdc = nullptr;
  const FaultSpec* kernelstall = nullptr;  // the kernel starts and never completes
  bool int32 = false;  // dtype fault: described as ncclInt32 (same size as float32)
};

struct KernelPlan {
  std::vector<KernelTask> tasks;  // collectives first, then point-to-point (NCCL plan order)
  uint64_t stream_seq = 0;        // position in the rank's kernel order (RankContext::next_kernel)
};

class Communicator {
 public:
  // `spec` must contain rc->global_rank. `comm_hash` per docs/nccl-notes.md §3.7 (comm_hash.h).
  Communicator(RankContext* rc, const CommSpec* spec, uint64_t comm_hash);
  ~Communicator();  // joins the proxy thread if destroy() was not called
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // ncclCommInitRank / ncclCommSplit on this rank: waits for every member (NCCL's bootstrap),
  // calls the net plugin's init when one is loaded (NCCL's commAlloc, before the profiler's),
  // the profiler plugin's init with (commHash, &mask, name, nNodes, nranks, rank, logger), connects
  // the net transport to the peers on other hosts (net_transport.h), then starts the proxy thread
  // (docs/nccl-notes.md §1.3: init runs before the proxy thread exists). Returns the profiler
  // plugin's init result (NCCL 2.28.9 logs a failure and continues).
  abi::Result init(abi::Logger logger);
  // ncclCommDestroy: drains and stops the proxy thread, closes the net connections, then the
  // profiler plugin's finalize and the net plugin's.
  void destroy();

  // Hands a plan to the proxy thread (NCCL's ncclProxyStart after the Coll/P2p starts).
  void post(KernelPlan&& plan);
  // Blocks until every posted plan has completed on this rank (cudaStreamSynchronize).
  void wait_idle();
  // On the proxy thread, when this rank's kernel never completes (linkdown, nicdown, kernelstall):
  // the plans posted later never run, but their collectives' ProxyOps are still started as NCCL's
  // proxy thread appends them (emit_appended_proxy_ops). Never returns.
  [[noreturn]] void park_stuck();

  RankContext* rc() const { return rc_; }
  const CommSpec& spec() const { return *spec_; }
  int rank() const { return rank_; }
  int nranks() const { return spec_->nranks(); }
  uint64_t hash() const { return hash_; }
  void* context() const { return context_; }
  // The net transport to peers on other hosts (inactive without a net plugin).
  const NetComm& net() const { return net_; }
  // The emulated cudaStream_t of this rank's work on the communicator (never dereferenced).
  void* stream() { return &stream_token_; }

  // NCCL's comm->seqNumber[func] (docs/nccl-notes.md §3.6): reported in Coll start, then incremented; counts
  // launches whether or not a plugin is loaded.
  uint64_t seq[kNumSeqFuncs] = {};
  // Counters the sequencer keeps at API time to name operations in ground truth (the same
  // values the launch assigns, since a communicator's tasks launch in API order).
  uint64_t api_seq[kNumSeqFuncs] = {};
  std::vector<uint64_t> api_sends, api_recvs;  // per peer comm rank
  // Launch-time ordinals for the fabric.
  uint64_t coll_launched = 0;
  std::vector<uint64_t> sends_launched, recvs_launched;

 private:
  void proxy_main();

  RankContext* rc_;
  const CommSpec* spec_;
  int rank_;
  uint64_t hash_;
  void* context_ = nullptr;
  char stream_token_ = 0;
  uint64_t barrier_round_ = 0;
  NetComm net_;

  std::thread proxy_;
  std::mutex mu_;
  std::condition_variable cv_;       // proxy: work or quit
  std::condition_variable idle_cv_;  // main: completed == posted
  std::deque<KernelPlan> queue_;
  uint64_t posted_ = 0, completed_ = 0;
  bool quit_ = false;
  bool started_ = false;
};

// A ground-truth line naming operation (func, key[, key_peer]) of this rank in `c`, stamped now.
TruthEvent truth_event(const Communicator& c, FaultKind kind, Func func, uint64_t key, int key_peer, int64_t step,
                       int64_t op);

// Runs one plan on the calling (proxy) thread: the emulated kernel of every task, with its
// KernelCh events (kernel.cc).
void run_kernel_plan(Communicator& comm, KernelPlan& plan);

}  // namespace scout::sim
