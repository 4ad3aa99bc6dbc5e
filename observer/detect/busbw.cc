#include "observer/detect/busbw.h"

#include "scout/shm_format.h"

namespace scout::obs {

double bus_bandwidth_gbps(uint8_t func, uint64_t msg_bytes, int nranks, int64_t duration_ns) {
  if (duration_ns <= 0 || nranks <= 0) return 0;
  double n = nranks;
  double traffic = double(msg_bytes);
  double factor = 1;
  switch (func) {
    case shm::kFuncAllReduce: factor = 2 * (n - 1) / n; break;
    case shm::kFuncReduceScatter:
    case shm::kFuncAllGather:
      traffic *= n;
      factor = (n - 1) / n;
      break;
    default: break;
  }
  return traffic / (double(duration_ns) * 1e-9) / 1e9 * factor;
}

}  // namespace scout::obs
