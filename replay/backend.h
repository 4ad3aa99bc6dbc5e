// The seam between a replay cycle and the hardware it runs on (docs/replay.md, "Backends"):
// the CUDA backend (cuda_backend.h: driver, cuBLASLt, NCCL and CUPTI through dlopen) and the
// emulated backend (emu_backend.h: CPU, used by the tests and for scout-sim jobs) implement it.
// Calls come from one thread; a backend never throws and never blocks past the deadline it is
// given: a recipe it cannot run comes back as a sample with status "skipped" and the reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "replay/recipe.h"

namespace scout::replay {

// One GPU of the job as the observer knows it (from the records).
struct Participant {
  int global_rank = -1;
  std::string gpu;    // GPU UUID or SCOUT_GPU
  int cuda_dev = -1;  // CUDA ordinal on its host
};

// Identity of a GPU for the readiness contract and the GEMM vote groups.
struct GpuInfo {
  int global_rank = -1;
  std::string gpu;
  std::string model;  // "NVIDIA H200", "scout-sim emulated GPU"
  int sm_count = 0;
  std::string libs;        // library versions, e.g. "cuda 13000; cublasLt 130100; nccl 22809"
  int64_t free_bytes = 0;  // device memory free when asked
  bool ready = false;      // false: reason says why (no device, library missing, ...)
  std::string reason;
};
nlohmann::json to_json(const GpuInfo& g);
bool from_json(const nlohmann::json& j, GpuInfo* out, std::string* error);

// Bytes of a bootstrap id for a replay communicator (NCCL_UNIQUE_ID_BYTES, nccl.h).
constexpr int kUniqueIdBytes = 128;
// `n` bytes as 2n lowercase hex digits, and back (common/hex.h).
using shm::bytes_hex;
using shm::hex_bytes;

enum class SampleStatus { kOk, kSkipped, kFailed };
const char* to_string(SampleStatus s);  // "ok", "skipped", "failed"

// One run of a recipe on one GPU (gemm: the GPU; link: the receiver; coll: each member).
struct Sample {
  std::string recipe;  // Recipe::id
  int global_rank = -1;
  std::string gpu;
  int round = 0;
  SampleStatus status = SampleStatus::kOk;
  std::string reason;           // skipped / failed: why
  uint64_t fp = 0;              // fingerprint of the output (docs/fingerprint.md)
  bool expected_known = false;  // link, coll: the exact expected output is known
  uint64_t expected_fp = 0;
  int64_t ns = -1;  // GPU time of the recipe's kernels (CUPTI or the emulated clock)
  int peer = -1;    // link: the sender
};
nlohmann::json to_json(const Sample& s);
bool from_json(const nlohmann::json& j, Sample* out, std::string* error);
// The sample of round `round` of recipe `r` on the GPU of `p`, status ok, nothing measured yet.
Sample sample_of(const Recipe& r, const Participant& p, int round);
// `s` as not measured: status `st` (skipped or failed) and `why`; fingerprint and time cleared.
Sample not_measured(Sample s, SampleStatus st, const std::string& why);

struct BackendLimits {
  int64_t max_mem = int64_t(2) << 30;     // SCOUT_REPLAY_MAX_MEM: device bytes replay may hold per GPU
  int64_t mem_margin = int64_t(1) << 30;  // never take the last this many free bytes
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cuda", "emu"
  // What the GPU of `p` is (identity, libraries, free memory) and whether it can replay.
  virtual GpuInfo describe(const Participant& p) = 0;
  // One round of GEMM recipe `r` on the GPU of `p`.
  virtual Sample run_gemm(const Recipe& r, const Participant& p, int round) = 0;
  // One round of link recipe `r`: `src` sends r.bytes to `dst`; the sample is the receiver's.
  virtual Sample run_link(const Recipe& r, const Participant& src, const Participant& dst, int round) = 0;
  // One round of collective recipe `r` over `members` (in r.coll.ranks order); one sample each.
  virtual std::vector<Sample> run_coll(const Recipe& r, const std::vector<Participant>& members, int round) = 0;

  // Links and collectives across nodes (docs/replay.md, "Across nodes"): each node's scout-replay
  // runs its own ends. One side makes a bootstrap id for a replay communicator (NCCL's unique id,
  // 128 bytes, as hex; "" with *error when it cannot): a link's sender, a collective's lowest
  // member; the observers hand it to the other members' nodes through their rendezvous store.
  virtual std::string link_unique_id(const Participant& self, std::string* error) = 0;
  // This node's end of link recipe `r` for every round: `self` is r.src when `sender`, else
  // r.dst; `peer` the other end (on another node); `uid` the sender's bootstrap id. The receiver
  // returns one sample per round (as run_link); the sender returns none when its end ran, else
  // one sample (its own rank) saying why not. Never waits past `deadline_ns` (CLOCK_MONOTONIC):
  // an end whose peer never comes is aborted then.
  virtual std::vector<Sample> run_link_end(const Recipe& r, const Participant& self, const Participant& peer,
                                           bool sender, const std::string& uid, int64_t deadline_ns) = 0;
  // This node's members of collective recipe `r` whose other members are on other nodes, every
  // round: `members` every member in r.coll.ranks order (GPU ids of the other nodes' too),
  // `local` the global ranks of those this node runs (a subset of r.coll.ranks, each a
  // participant of this node), `uid` the lowest member's bootstrap id (link_unique_id). Returns
  // one sample per local member per round, as run_coll gives them; a member that never comes
  // fails them all at `deadline_ns` (CLOCK_MONOTONIC), never later (the communicator aborted).
  virtual std::vector<Sample> run_coll_end(const Recipe& r, const std::vector<Participant>& members,
                                           const std::vector<int>& local, const std::string& uid,
                                           int64_t deadline_ns) = 0;
};

}  // namespace scout::replay
