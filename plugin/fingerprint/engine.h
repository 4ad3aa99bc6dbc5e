// The plugin's fingerprint engine: decides which operations are fingerprinted and where the
// hashing happens (CPU for host buffers, our GPU kernel on NCCL's stream for device buffers).
//
// Contract between the event layer (plugin/core, which calls the hooks below at the points of
// NCCL's call sequence named in each comment) and the fingerprint implementation
// (plugin/fingerprint, plugin/gpu). Semantics: docs/fingerprint.md, docs/nccl-notes.md §4.
//
// Rules every hook follows: never throws, never blocks on the GPU, never calls CUDA from a
// CUDA host-callback thread, allocates nothing per operation after warm-up, and reports every
// skip in the record (fp words) and in CommHeader::fp_skipped.
#pragma once

#include <cstdint>
#include <memory>

#include "scout/config.h"
#include "scout/nccl_profiler_abi.h"
#include "scout/shm_format.h"

namespace scout::fp {
namespace gpu {
class Backend;
}

// What the event layer knows about one operation when NCCL hands it over (Coll/P2p start).
struct OpInfo {
  uint64_t comm_hash = 0;
  uint8_t kind = 0;  // shm::OpKind
  uint8_t func = 0;  // shm::Func
  uint64_t key = 0;  // matching key (NCCL seqNumber / p2p counter)
  const void* send_buf = nullptr;
  void* recv_buf = nullptr;
  uint64_t send_bytes = 0;       // bytes this rank sends (see docs/fingerprint.md, "Which bytes")
  uint64_t recv_bytes = 0;       // bytes this rank receives
  uint8_t dtype = 0;             // element type for NaN/Inf counting: the API datatype if known
  bool graph_captured = false;   // from the CollApi/P2pApi/GroupApi parent
  void* stream = nullptr;        // launch stream (KernelLaunch), else the API stream; may be null
  bool on_launch_thread = true;  // false: Coll start arrived on a CUDA host-callback thread
};

// The function whose sampling decision an operation follows: a Recv decides like the Send it
// pairs with, so send #k of rank a to b and recv #k of b from a are sampled together
// (docs/fingerprint.md, "Sampling").
uint8_t sampling_func(uint8_t func);

// Bytes of the send and receive buffers of one operation on this rank (docs/fingerprint.md,
// "Which bytes"). `func` is a shm::Func; `count` and `elem_bytes` as the Coll/P2p descriptor
// gives them (task count: for AllGather and Broadcast NCCL reports bytes with ncclInt8, so
// elem_bytes = 1); `rank`/`root` inside the communicator. Unknown functions give 0 and 0.
void op_bytes(uint8_t func, uint64_t count, uint64_t elem_bytes, int nranks, int rank, int root, uint64_t* send_bytes,
              uint64_t* recv_bytes);

// Per-communicator fingerprint state (sampling level, budget, GPU resources).
struct CommFp;

// Process-wide engine. One instance per loaded plugin, created at the first communicator init
// and destroyed when the last one is finalized (so dlclose leaves nothing behind).
class Engine {
 public:
  // Creates the engine from the configuration. Looks for a CUDA driver (dlopen
  // "libcuda.so.1"); without one, host buffers are hashed on the CPU and device buffers are
  // skipped (kFpSkippedDevice). `log` may be null. Never fails: on any error the engine runs in
  // CPU-only mode and says so once through `log`.
  static Engine* create(const config::Config& cfg, abi::Logger log);
  // The same with a given GPU backend (tests: a fake; nullptr: CPU only). Never fails but for
  // memory exhaustion (nullptr).
  static Engine* create_with_backend(const config::Config& cfg, abi::Logger log, std::unique_ptr<gpu::Backend> backend);
  static void destroy(Engine* e);

  // Communicator lifetime (init / finalize threads). `ring` is the communicator's CommHeader in
  // the segment (fp counters and level are published there). Returns null if fingerprints are
  // off for this communicator.
  CommFp* comm_init(uint64_t comm_hash, int nranks, int cuda_dev, shm::CommHeader* ring);
  void comm_fini(CommFp* c);

  // GroupApi start of the outermost group (user thread, inside the NCCL API call). From here to
  // on_group_end() on the same thread, the engine may enqueue GPU work that waits for buffer
  // addresses, because on_group_end() is guaranteed to come on this thread and releases it.
  // Threads that never call it (non-blocking communicators' launch threads) get no send
  // fingerprints on the GPU (docs/fingerprint.md, "Engine").
  void on_group_start();

  // KernelLaunch start (launching thread, current CUDA device = the communicator's, right before
  // NCCL's cuLaunchKernelEx). `stream` is descriptor kernelLaunch.stream. May enqueue work that
  // must run before the NCCL kernel (send-buffer fingerprints). `send_bytes_hint`: the largest
  // send buffer this plan may hold, if the event layer knows it from pending CollApi/P2pApi
  // counts (sizes the GPU grid); 0 = unknown.
  void on_launch_start(CommFp* c, void* stream, uint64_t send_bytes_hint = 0);

  // Coll or P2p start, after the event layer filled the record's identity and published it
  // (`rec` is the record, `index` its ring index). Decides sampling (sets kFlagFpSampled,
  // fp_level, fp_version), hashes host send buffers now, records what the GPU must hash.
  // No CUDA calls here: on the normal path this runs inside NCCL's "no CUDA" section.
  void on_op_enqueued(CommFp* c, shm::OpRecord* rec, uint64_t index, const OpInfo& op);

  // The sampling decision of on_op_enqueued alone (kind, sampling level, selector hash), for the
  // event layer to skip building an OpInfo for the operations that will not be sampled (most of
  // them). True does not promise a fingerprint: on_op_enqueued still decides what to hash.
  bool may_sample(const CommFp* c, uint8_t kind, uint8_t func, uint64_t key) const;

  // End of the outermost group (GroupApi stop, user thread, after all launches of the group):
  // enqueue the receive-buffer fingerprints of this thread's sampled operations on their launch
  // streams, stream-ordered right after the NCCL kernels.
  void on_group_end();

  // The operation completed on this rank (KernelCh stopped on all channels; proxy thread).
  // `kernel_ns` is its GPU time (the event layer adds it to the ring header; here it only feeds
  // the budget). Hashes host receive buffers on the CPU.
  void on_op_complete(CommFp* c, shm::OpRecord* rec, uint64_t index, uint64_t kernel_ns);

  // True when a CUDA driver and a device were found and the kernel loaded.
  bool gpu_available() const;

  // GPU identity of CUDA device `cuda_dev` (< 0: the device of the calling thread's current
  // context) as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (the form nvidia-smi -L prints) into
  // out[0..cap). False (out = "") without a driver, device or (for -1) current context.
  // For SegmentHeader::gpu when SCOUT_GPU is empty. Call from a thread where CUDA calls are
  // allowed (communicator init).
  bool gpu_uuid(int cuda_dev, char* out, unsigned cap) const;

 private:
  Engine() = default;
  struct Impl;
  Impl* impl_ = nullptr;
};

}  // namespace scout::fp
