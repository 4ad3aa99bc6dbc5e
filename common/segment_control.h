// The one write a reader makes to a segment: a trace request in its progress table
// (include/scout/shm_format.h, "Progress table"; docs/record-format.md, "Progress table";
// docs/plugin.md, "Tracing a stuck collective"). The observer asks the process that owns the
// segment to keep ProxyOp | ProxyStep in NCCL's activation mask for one communicator until a time,
// and to record where that communicator's network steps are.
#pragma once

#include <cstdint>
#include <string>

#include "common/segment_reader.h"

namespace scout::shm {

// What a request asks for.
struct TraceRequest {
  uint64_t comm_hash = 0;
  int32_t nranks = 0;    // 0: any communicator with that hash
  int64_t until_ns = 0;  // CLOCK_REALTIME
};

// Writes `req` into the progress table of the segment `rd` maps (rd.path()): opens the file
// read-write with the trust rules of SegmentReader::open (O_NOFOLLOW, regular file, owner, mode
// 0600; and the same file: device and inode of the first open), maps the page(s) of the table's
// request, stores comm hash, size and time, then increments request_seq (release), and unmaps.
// Returns the new request_seq, or 0 with a one-line *error (no progress table, the file is not
// the one `rd` read, cannot be opened or mapped). Never blocks on a FIFO or follows a link.
uint64_t request_trace(const SegmentReader& rd, const TraceRequest& req, std::string* error,
                       const TrustPolicy& trust = TrustPolicy::from_config());

}  // namespace scout::shm
