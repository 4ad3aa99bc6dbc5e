// Reading a segment's progress table (include/scout/shm_format.h, "Progress table";
// docs/record-format.md, "Progress table"): the plugin's answer to trace requests and plain copies
// of the published entries, for the observer's stuck-collective tracing and `scout dump`. Never
// writes to the segment; writing a request is SegmentControl's (segment_control.h).
#pragma once

#include <cstdint>
#include <vector>

#include "common/segment_reader.h"
#include "scout/shm_format.h"

namespace scout::shm {

// Plain copy of the ProgressTableHeader.
struct ProgressTableInfo {
  uint32_t capacity = 0, claimed = 0;
  uint64_t request_seq = 0, request_comm_hash = 0;
  int64_t request_until_ns = 0;
  int32_t request_nranks = 0;
  uint32_t trace_state = 0;  // TraceState
  uint64_t ack_seq = 0;
  int64_t ack_ns = 0;
  uint64_t trace_comm_hash = 0;
  int64_t trace_until_ns = 0;
  uint64_t requests = 0, traced_ops = 0, dropped_full = 0;
};

// Plain copy of one published ProgressEntry.
struct ProgressSnapshot {
  uint32_t index = 0;
  uint8_t dir = 0, channel = 0;  // ProgressDir, NCCL channel id
  uint64_t comm_hash = 0;
  int32_t comm_nranks = 0, comm_rank = -1, peer = -1;
  uint32_t op_gen = 0, n_steps = 0;
  uint64_t op_key = ~0ull;
  uint32_t op_func = 255;
  uint32_t posted = 0, gpu_wait = 0, peer_wait = 0, in_net = 0, net_done = 0, consumed = 0;
  bool op_stopped = false;
  int64_t start_ns = 0, last_ns = 0;
};

// The progress table of `rd`, or nullptr (no table, another version, too small). `*capacity` gets
// the entries its bytes hold (bounded by the header's capacity).
const ProgressTableHeader* progress_table(const SegmentReader& rd, uint32_t* capacity);

// Copies the header of `t`.
ProgressTableInfo read_progress_info(const ProgressTableHeader* t, uint32_t capacity);

// Appends a copy of every published entry of `t` to `out` (entries [0, min(claimed, capacity))
// whose state is 1). An entry whose op_gen changed while it was copied (a new ProxyOp) is read again
// once, then taken as read.
void read_progress(const ProgressTableHeader* t, uint32_t capacity, std::vector<ProgressSnapshot>* out);

// "send" / "recv" / "none"; "none" / "active" / "expired" / "no-comm".
const char* progress_dir_name(uint8_t d);
const char* trace_state_name(uint32_t s);

}  // namespace scout::shm
