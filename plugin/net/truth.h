// The ground-truth file of net drills (SCOUT_TRUTH): one JSON line per injected fault, in the
// shape scout-sim writes (docs/scout-sim.md, "Ground truth"; docs/net-plugin.md, "Drills"), so
// a drill on real NCCL is scored like a sim run. Each line is one write() on an O_APPEND file:
// lines of different processes never interleave.
#pragma once

#include <cstdint>
#include <string>

namespace scout::net {

// One injected fault. `kind` is the sim's kind the drill stands for: "slowlink" (delay),
// "stall", "linksdc" (flip: `global_rank` is the receiver, `peer` the sender).
struct TruthLine {
  const char* kind = "";
  int global_rank = -1;
  int peer = -1;  // -1: null
  uint64_t comm_hash = 0;
  int64_t ms = 0;          // delay
  int64_t time_ns = 0;     // CLOCK_REALTIME of the injection
  const char* drill = "";  // the spec as written (describe(), fault.h), into detail.drill
  uint32_t conn_id = 0;    // detail.conn
};

// The line (no trailing newline), formatted into `buf` of `cap` bytes; returns its length, or
// 0 if it did not fit. No allocation.
size_t truth_json(const TruthLine& t, char* buf, size_t cap);

// Appends the line to `path` (created 0644 if missing). False when the path is empty or the
// file cannot be opened or written. Opens, writes once and closes: no allocation, no lock.
bool write_truth(const std::string& path, const TruthLine& t);

}  // namespace scout::net
