// Bus bandwidth of a collective, nccl-tests convention (docs/nccl-notes.md §5.1): algbw = traffic / time,
// busbw = algbw * factor, with per function
//   AllReduce      traffic = msg        factor 2(n-1)/n
//   ReduceScatter  traffic = msg * n    factor (n-1)/n
//   AllGather      traffic = msg * n    factor (n-1)/n
//   Broadcast, Reduce, Send, Recv: traffic = msg, factor 1
// where msg is the record's bytes (the task's count * datatype size; for AllGather NCCL's task
// count is already the per-rank bytes).
#pragma once

#include <cstdint>

namespace scout::obs {

// GB/s (1e9 bytes per second); 0 when duration_ns <= 0 or nranks <= 0.
double bus_bandwidth_gbps(uint8_t func, uint64_t msg_bytes, int nranks, int64_t duration_ns);

}  // namespace scout::obs
