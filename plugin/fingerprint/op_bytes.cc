// Which bytes of an operation are fingerprinted on this rank (docs/fingerprint.md, "Which bytes").
#include "plugin/fingerprint/engine.h"

namespace scout::fp {

void op_bytes(uint8_t func, uint64_t count, uint64_t elem_bytes, int nranks, int rank, int root, uint64_t* send_bytes,
              uint64_t* recv_bytes) {
  const uint64_t n = count * elem_bytes;
  const uint64_t r = nranks > 0 ? uint64_t(nranks) : 1;
  uint64_t s = 0, v = 0;
  switch (func) {
    case shm::kFuncAllReduce:
      s = n;
      v = n;
      break;
    case shm::kFuncAllGather:
      s = n;
      v = n * r;
      break;  // count = per-rank contribution
    case shm::kFuncReduceScatter:
      s = n * r;
      v = n;
      break;  // count = per-rank result
    case shm::kFuncBroadcast:
      s = rank == root ? n : 0;
      v = n;
      break;
    case shm::kFuncReduce:
      s = n;
      v = rank == root ? n : 0;
      break;
    case shm::kFuncSend: s = n; break;
    case shm::kFuncRecv: v = n; break;
    default: break;
  }
  if (send_bytes) *send_bytes = s;
  if (recv_bytes) *recv_bytes = v;
}

}  // namespace scout::fp
