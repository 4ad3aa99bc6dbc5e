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
// peer does not come. Collectives with members on other hosts are skipped.
#pragma once

#include <map>
#include <string>

#include "replay/backend.h"
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

  // Heuristic calls so far (the algorithm is chosen once per recipe).
  int heuristic_calls() const { return heuristic_calls_; }

 private:
  bool enter(const Participant& p, cu::Device* dev, std::string* why);  // context current
  int64_t budget_bytes(std::string* why);                               // bytes this GPU may take now (0: none)
  int64_t kernel_ns_since(uint64_t t0_ns, int device);                  // CUPTI: kernel time on `device`
  std::string libs_text() const;

  const cudalib::Libs* L_;
  BackendLimits limits_;
  bool cupti_on_ = false;
  int heuristic_calls_ = 0;
  std::map<std::string, cudalib::LtAlgo> algos_;  // recipe id -> pinned algorithm
  std::map<int, cu::Stream> streams_;             // device -> low-priority stream
  std::map<int, cu::Context> ctxs_;
};

// The CUPTI record collector behind CudaBackend (process-wide, as CUPTI's activity state is).
// Kernel records are kept as (device, start_ns, end_ns).
struct KernelSpan {
  int device = -1;
  uint64_t start_ns = 0, end_ns = 0;
};
// Enables CONCURRENT_KERNEL with our buffer callbacks; false if CUPTI refused.
bool cupti_start(const cudalib::Cupti& c);
// Flushes CUPTI and returns (and forgets) the spans collected so far.
std::vector<KernelSpan> cupti_take(const cudalib::Cupti& c);

// The host bytes of GEMM input `which` ('A': m x k, 'B': k x n, column-major) of recipe `r`:
// seeded values in [-1, 1) rounded to the recipe's datatype, identical on every GPU.
std::vector<unsigned char> gemm_input(const Recipe& r, char which);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" of a driver UUID (nvidia-smi's spelling).
std::string uuid_text(const cu::Uuid& u);

}  // namespace scout::replay
