// A fake table of the libraries scout-replay uses (replay/cuda_libs.h) for the CUDA backend's
// tests: device memory is host memory, the fake cuBLASLt computes fp32 GEMMs on the host, the
// fake CUPTI delivers CONCURRENT_KERNEL records (1 ms per matmul on device 0, 2 ms on device 1 ...,
// or 1 ms everywhere with F.equal_speed), the fake NCCL moves a link's payload through a "wire"
// and sums AllReduce buffers at ncclGroupEnd. Three devices.
//
// Faults: every fake call (those with a result) counts itself in X.calls; the call numbered
// X.fail_at fails with the library's error code and is named in X.failed. Resources are counted
// in X.live (created minus destroyed: "mem", "event", "stream", "ctx", "lt.handle", "lt.desc",
// "lt.layout", "lt.pref", "comm"); a destroy call counts even when it is the one that fails.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "replay/cuda_backend.h"

namespace scout::testing::fakecuda {

namespace cu = scout::fp::gpu::cu;
namespace cudalib = scout::replay::cudalib;

struct FakeState {
  int current = -1;
  size_t free_bytes = size_t(80) << 30;
  int heuristic = 0;
  int matmuls = 0;
  int stream_priority = 99;
  int64_t allocated = 0, peak = 0;
  std::map<uint64_t, size_t> sizes;
  std::vector<replay::KernelSpan> pending;
  cudalib::BufferRequested req = nullptr;
  cudalib::BufferCompleted done = nullptr;
  uint64_t clock = 1'000'000'000;
  bool fail_alloc = false;   // cuMemAlloc answers CUDA_ERROR_OUT_OF_MEMORY
  bool equal_speed = false;  // every device takes 1 ms per matmul
};
extern FakeState F;

// The fake NCCL of a replay communicator across nodes: one end at a time (the sender's Send
// leaves the payload on the "wire", the receiver's Recv takes it; a receive with nothing sent
// never completes); the communicator's state stays ncclInProgress for `pending` polls, then is
// `settled`.
struct FakeNccl {
  int inits = 0, nranks = -1, rank = -1;
  std::vector<int> init_devices;  // the current device at each ncclCommInitRankConfig
  cudalib::NcclConfig config;
  unsigned char id[128] = {};
  int pending = 0;
  int settled = cudalib::kNcclSuccess;
  int polls = 0;
  int not_ready = 0;  // StreamQuery answers kNotReady this many times
  int aborts = 0, destroys = 0;
  int send_peer = -1, recv_peer = -1;
  std::vector<unsigned char> wire;        // across nodes (the link ends' communicator)
  std::vector<unsigned char> local_wire;  // inside the host (ncclCommInitAll's communicators)
  struct Reduce {
    float* buf;
    uint64_t count;
    int device;
  };
  std::vector<Reduce> group;  // AllReduce calls of the open group
};
extern FakeNccl N;

struct Faults {
  int calls = 0;        // fake calls so far
  int fail_at = -1;     // the call that fails (-1: none)
  std::string failed;   // its name ("cuMemAlloc", "ncclGroupEnd", ...)
  std::map<std::string, int> live;
  // Every live count is zero (what is not, in *left: "mem 1, comm 2").
  bool none_live(std::string* left) const;
};
extern Faults X;

// Fresh F, N and X.
void reset();
// The fake table: the driver, cuBLASLt (with_blas) and CUPTI; NCCL missing. "CUDA_ERROR_..."
// texts come from the fake cuGetErrorString.
cudalib::Libs fake_libs(bool with_blas = true);
// fake_libs with the fake NCCL (every entry).
cudalib::Libs nccl_libs();

}  // namespace scout::testing::fakecuda
