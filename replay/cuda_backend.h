// The CUDA replay backend (docs/replay.md, "Backends"): cuBLASLt GEMMs and NCCL links and
// collectives on this host's GPUs, in scout-replay's own context on each GPU, on a stream of the
// lowest priority, timed with CUPTI CONCURRENT_KERNEL activity records (the sum of the kernel
// durations on that device between the launch and the synchronization; CUDA events when CUPTI
// is missing). Every library comes from the table in cuda_libs.h, so tests run the backend
// against a fake table.
//
// GEMM recipes: D = A x B, column-major, A and B generated on the host from the recipe's seed
// (identical bits on every GPU) and copied to the device; the algorithm is chosen once per
// recipe by the heuristic on the first GPU and that 64-byte algorithm is used on every GPU; D
// is copied back and fingerprinted (docs/fingerprint.md). Memory: a recipe needing more than
// min(SCOUT_REPLAY_MAX_MEM, free - margin) is skipped with the numbers, never retried in the
// same cycle.
// Link and collective recipes: NCCL communicators over the members' local devices
// (ncclCommInitAll, NCCL_ALGO / NCCL_PROTO set from the class before each init). A link whose
// ends are on two hosts runs as two ends (run_link_end): a non-blocking communicator of two
// ranks from the sender's ncclGetUniqueId (handed over by the observers), polled with
// ncclCommGetAsyncError and cuStreamQuery until the deadline, aborted (ncclCommAbort) when the
// peer does not come. A collective with members on other hosts runs the same way (run_coll_end):
// each host's members join one non-blocking communicator of every member from the lowest
// member's id.
//
// Every library call is checked (cuda_calls.h): a failure makes the sample "failed" with the
// call's name and error text, never a verdict on its data (a copy that failed is not a corrupted
// link, a timer that failed is not a slow GPU); memory, events, cuBLASLt objects and
// communicators are released on every path. A time CUPTI did not record (no kernel record of the
// device) is a failure too.
#pragma once

#include <map>
#include <string>

#include "replay/backend.h"
#include "replay/cuda_calls.h"
#include "replay/cuda_libs.h"

namespace scout::replay {

namespace cu = scout::fp::gpu::cu;

class CudaBackend : public Backend {
 public:
  // `libs` must outlive the backend; missing libraries turn their recipes into skips.
  CudaBackend(const cudalib::Libs* libs, BackendLimits limits);
  ~CudaBackend() override;
  std::string name() const override { return "cuda"; }
  GpuInfo describe(const Participant& p) override;
  Sample run_gemm(const Recipe& r, const Participant& p, int round) override;
  Sample run_link(const Recipe& r, const Participant& src, const Participant& dst, int round) override;
  std::vector<Sample> run_coll(const Recipe& r, const std::vector<Participant>& members, int round) override;
  std::string link_unique_id(const Participant& self, std::string* error) override;
  std::vector<Sample> run_link_end(const Recipe& r, const Participant& self, const Participant& peer, bool sender,
                                   const std::string& uid, int64_t deadline_ns) override;
  // AllReduce classes only (others skipped, as run_coll): one non-blocking communicator per
  // local member (ncclCommInitRankConfig, nranks = members, rank = its index in `members`, in one
  // group), then per round the AllReduce in float32 of r.coll.count elements, inputs from the
  // seed per rank, polled against the deadline; aborted (ncclCommAbort) when a member does not
  // come. Exact expected result for two members; larger groups vote (judge.h).
  std::vector<Sample> run_coll_end(const Recipe& r, const std::vector<Participant>& members,
                                   const std::vector<int>& local, const std::string& uid, int64_t deadline_ns) override;

  // Heuristic calls so far (the algorithm is chosen once per recipe).
  int heuristic_calls() const { return heuristic_calls_; }

 private:
  struct GemmBuffers {
    cudalib::DeviceBuf a, b, d, ws;
  };
  // The participant's device ordinal (by UUID, else its CUDA ordinal; -1 not on this host).
  int ordinal_of(const Participant& p, cudalib::Calls& c);
  // Its context current and its low-priority stream made; false with *why (not on this host, a
  // library missing) or a failed call in c.
  bool enter(const Participant& p, cu::Device* dev, std::string* why, cudalib::Calls& c);
  int64_t budget_bytes(cudalib::Calls& c);       // bytes this GPU may take now (0: none)
  bool sync(cu::Device dev, cudalib::Calls& c);  // its context current, its stream synchronized
  bool drop_spans(cudalib::Calls& c);            // CUPTI: forget the spans recorded so far
  int64_t kernel_ns_since(uint64_t t0_ns, int device, cudalib::Calls& c);  // CUPTI: kernel time on `device`
  bool libs_text(std::string* out, cudalib::Calls& c) const;               // "cuda 13000; cublasLt ...; nccl ..."
  // The recipe's pinned algorithm (the heuristic's first choice, asked once per recipe).
  bool gemm_algo(const Recipe& r, const cudalib::LtObjects& lt, cudalib::Calls& c);
  // One untimed warm-up then r.iters timed matmuls; their GPU time, -1 when a call failed.
  int64_t time_gemm(const Recipe& r, cu::Device dev, const cudalib::LtObjects& lt, const GemmBuffers& g,
                    cudalib::Calls& c);
  // Polls a non-blocking communicator until it settles or the deadline: its state (-1: the poll failed).
  int settle(cudalib::NcclComm comm, int64_t deadline_ns, cudalib::Calls& c);
  bool coll_init(const Recipe& r, cudalib::Comms& comms, const std::vector<int>& devs, cudalib::Calls& c);
  // run_coll_end's pieces: every local member's non-blocking communicator (ranks[k] in a
  // communicator of `nranks`, made on device devs[k], one group) settled by the deadline, and one round's collectives
  // settled and their streams drained by it; "" or why not (a failed call is in c).
  std::string coll_end_join(const Recipe& r, cudalib::Comms& comms, int nranks, const cudalib::NcclUniqueId& id,
                            const std::vector<int>& ranks, const std::vector<int>& devs, int64_t deadline_ns,
                            cudalib::Calls& c);
  std::string coll_end_wait(const cudalib::Comms& comms, const std::vector<int>& devs, int64_t deadline_ns,
                            cudalib::Calls& c);
  // One AllReduce over every member's buffer; each member's time into (*out)[i].ns.
  void run_allreduce(const cudalib::Comms& comms, const std::vector<int>& devs, std::vector<cudalib::DeviceBuf>& buf,
                     uint64_t count, cudalib::Calls& c, std::vector<Sample>* out);

  const cudalib::Libs* L_;
  BackendLimits limits_;
  bool cupti_on_ = false;
  int heuristic_calls_ = 0;
  std::map<std::string, cudalib::LtAlgo> algos_;  // recipe id -> pinned algorithm
  std::map<int, cu::Stream> streams_;             // device -> low-priority stream
  std::map<int, cu::Context> ctxs_;               // device -> retained primary context
};

// The CUPTI record collector behind CudaBackend (process-wide, as CUPTI's activity state is).
// Kernel records are kept as (device, start_ns, end_ns).
struct KernelSpan {
  int device = -1;
  uint64_t start_ns = 0, end_ns = 0;
};
// Enables CONCURRENT_KERNEL with our buffer callbacks; false if CUPTI refused.
bool cupti_start(const cudalib::Cupti& c);
// Flushes CUPTI and hands over (and forgets) the spans collected so far; false with the failed
// call in c (the flush, or a record that could not be read: spans may be missing).
bool cupti_take(const cudalib::Cupti& cupti, std::vector<KernelSpan>* spans, cudalib::Calls& c);

// The host bytes of GEMM input `which` ('A': m x k, 'B': k x n, column-major) of recipe `r`:
// seeded values in [-1, 1) rounded to the recipe's datatype, identical on every GPU.
std::vector<unsigned char> gemm_input(const Recipe& r, char which);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" of a driver UUID (common/uuid.h).
std::string uuid_text(const cu::Uuid& u);

}  // namespace scout::replay
