// scout-sim command line: the job shape, the workload size, and the faults to inject
// (docs/scout-sim.md, "Usage" and "Faults").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scout::sim {

enum class FaultKind {
  kSdc,
  kStraggler,
  kHang,
  kDesync,
  kCrash,
  kSlowlink,
  kNan,
  kGpuSdc,
  kLinkSdc,
  kSlowGpu,
  kDtype,      // R passes another datatype of the same size (int32 for float32)
  kOptype,     // R calls another collective at the same point (AllReduce <-> AllGather)
  kSkip,       // R skips one collective call and goes on
  kExtraStep,  // R runs one extra warm-up step (a copy of step 0) before step 0
  kNondet,     // reductions of R's communicators differ from call to call (every rank agrees)
  kPause,      // R sleeps S seconds (alive) before steps K, 2K, ... (an evaluation, a checkpoint save)
  kP2pOrder,      // R posts its step's pipeline sends/receives in reverse order, each alone (no group)
  kWrongGroup,    // R issues one pipeline Send on the world communicator instead of its pp one
  kEnqueueStall,  // R's process stays inside one NCCL API call (recorded, never enqueued)
  kKernelStall,   // R's kernel of one collective starts and never completes (the others wait)
  kSlowNic,       // every inter-host transfer of emulated host K takes M ms longer
  kLinkDown,      // from step N the link R<->Q delivers nothing (collectives over it, p2p between them hang)
  kNicDown,       // from step N every inter-host connection of emulated host K delivers nothing
};

// Persistent hardware faults: they act on the rank's emulated GPU from their step on, in
// training and in replay (docs/scout-sim.md, "Hardware faults").
bool is_hardware_fault(FaultKind k);

// "sdc", "straggler", ... (the spelling of --fault).
const char* fault_kind_name(FaultKind k);

// One --fault KIND:rank=R[,op=N|,step=N][,ms=M][,peer=Q][,factor=F], or pause:rank=R,every=K,s=S. `rank=R1+R2+...` or
// `stage=S` (every rank of pipeline stage S) put the same fault on several ranks: parse_options
// expands them into one FaultSpec per rank (same `text`, `expanded` counting from 0).
// `op` is rank R's operation index: the 0-based count of NCCL API operations R issued before
// (every ncclAllReduce/AllGather/ReduceScatter/Broadcast/Send/Recv/AlltoAll call is one
// operation; group calls are not). `step` means "the first operation of step N". Exactly one of
// them is >= 0 after validation (straggler and slowlink default to step 0).
struct FaultSpec {
  FaultKind kind = FaultKind::kSdc;
  int rank = -1;           // global rank R
  int64_t op = -1;         // rank R's operation index, or -1
  int64_t step = -1;       // training step, or -1
  int64_t ms = 0;          // straggler / slowlink delay, milliseconds
  int peer = -1;           // slowlink, linksdc, linkdown: the other end Q (global rank; linksdc: the sender)
  double factor = 1;       // slowgpu: kernels take this many times longer (> 1)
  int64_t every = 0;       // pause: at every this many steps (steps K, 2K, ...)
  int64_t pause_s = 0;     // pause: seconds asleep
  std::string text;        // the flag as given, for messages
  std::vector<int> ranks;  // rank=R1+R2+...: every rank named (parse_fault_spec; size 1 for rank=R)
  int stage = -1;          // stage=S: pipeline stage whose every rank gets the fault, or -1
  int node = -1;           // slownic, nicdown: the emulated host K
  std::vector<int> node_ranks;  // slownic, nicdown: the global ranks on host K (parse_options)
  bool mirror = false;     // FaultPlan's copy of a link fault seen from its other end (writes no ground truth)
  int expanded = 0;        // index of this spec among those one flag expanded into
  // Resolved by parse_options (docs/scout-sim.md, "Faults"): rank R's operation the fault acts
  // on first (sdc: first AllReduce/AllGather/Broadcast at or after N; nan: first operation with
  // a float send buffer; desync: first collective; others: N itself), and its step. slowlink
  // acts on every operation of R and Q together from `step` on; target_op is -1 for it.
  int64_t target_op = -1;
  int64_t target_step = -1;
};

// Everything scout-sim was asked to do. Defaults are the documented ones.
struct SimOptions {
  int ranks = 0;                // N, required, 1..kMaxRanks
  int tp = 1;                   // tensor-parallel size T
  int pp = 1;                   // pipeline-parallel size P
  int ep = 1;                   // expert-parallel size E (divides DP)
  int cp = 1;                   // context-parallel size C (ring attention inside each CP group)
  int vpp = 1;                  // virtual pipeline stages per rank V (interleaved schedule; needs P > 1)
  int nodes = 1;                // emulated hosts M (divides N; whole TP groups per host)
  int64_t steps = 20;           // training steps
  uint64_t bytes = 256 * 1024;  // base message size B in bytes (TP AllReduce size)
  int64_t step_ms = 0;          // compute time between steps, ms
  std::string job;              // SCOUT_JOB_ID; empty: $SCOUT_JOB_ID, else "sim-<launcher pid>"
  uint64_t seed = 1;            // data, unique id and channel choices
  double timeout_s = 600;       // launcher ends the job after this many seconds (0: never)
  double idle_timeout_s = 90;   // ... or once no rank issued an operation for this long (0: never); beyond
                                // the observer's default hang timeout (60 s), so a drill shows the hang
  std::vector<FaultSpec> faults;
  std::string truth;                     // ground-truth file; empty: "<job>.truth.jsonl" if faults given
  int bcast_every = 10;                  // world Broadcast every this many steps (step % k == 0)
  int64_t ckpt_every = 0;                // write a checkpoint after every this many steps (0: never)
  std::string ckpt_dir;                  // where (required with ckpt_every)
  std::string ckpt_format = "megatron";  // megatron | dcp | deepspeed | hf | nemo
  int64_t ckpt_kill_at = 0;              // iteration whose checkpoint every rank is killed writing (0: none)
  int moe_experts = 0;                   // experts X (divisible by E): each step logs expert GEMMs (gemm_lt.h)
  // Internal (set by the launcher for its workers, hidden from --help):
  int worker_rank = -1;  // >= 0: run as this global rank
  int fabric_fd = -1;    // the shared fabric (memfd) inherited from the launcher

  int dp() const { return ranks / (tp * cp * pp); }
  bool is_worker() const { return worker_rank >= 0; }
};

constexpr int kMaxRanks = 1024;
constexpr uint64_t kMinBytes = 4096;
constexpr uint64_t kMaxBytes = 1ull << 30;

enum class ParseStatus { kOk, kHelp, kError };

// Parses and validates argv. kOk fills *out. kHelp puts the help text in *message (print it to
// stdout, exit 0). kError puts exactly one line (no newline) in *message: print it to stderr
// and exit 2. Checks: unknown options, missing or malformed values, T*P dividing N, E dividing
// DP, M dividing N with whole TP groups per host, fault kinds, ranks and peers in range, keys
// allowed per kind, steps and operations that exist in the run.
ParseStatus parse_options(int argc, const char* const* argv, SimOptions* out, std::string* message);

// Parses one fault spec (without range checks that need the job shape). False with *error.
bool parse_fault_spec(const std::string& text, FaultSpec* out, std::string* error);

// The argv a worker is started with: the launcher's options in canonical form plus the hidden
// worker flags. argv[0] is `exe`.
std::vector<std::string> worker_argv(const std::string& exe, const SimOptions& o, int rank, int fabric_fd);

}  // namespace scout::sim
