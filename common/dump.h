// Human- and test-readable dump of a segment as JSON lines (scout-dump, and the `scout dump`
// CLI subcommand). One JSON object per line, each with a "type":
//   {"type":"segment", ...}  the header: identity, geometry, counters, owner liveness
//   {"type":"comm", ...}     one per ring: communicator identity, head, every counter
//   {"type":"op", ...}       one per readable record of that ring, oldest first
//   {"type":"gap", ...}      a range of ring indices no longer (or not yet) readable, with why
//   {"type":"links", ...}    the link table's header (only once a link is recorded or the net
//                            half was initialised), then one {"type":"link", ...} per entry
// Enums are printed by name ("AllReduce", "ncclFloat32", "complete"); hashes, addresses and
// fingerprints as "0x..." hex strings (64-bit values lose precision as JSON numbers in many
// readers); times in ns since the epoch (CLOCK_REALTIME) as integers. Field names are those of
// include/scout/shm_format.h; docs/record-format.md describes them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "common/segment_reader.h"

namespace scout::shm {

struct DumpOptions {
  bool ops = true;    // false: segment and comm lines only
  int64_t ring = -1;  // >= 0: only this ring
};

struct DumpStats {
  uint64_t comms = 0;    // comm lines printed
  uint64_t ops = 0;      // op lines printed
  uint64_t missing = 0;  // indices in gap lines (overwritten, torn, invalid)
  uint64_t links = 0;    // link lines printed
};

// The JSON objects of one line each (without printing).
nlohmann::json segment_json(const SegmentInfo& info, bool owner_alive);
nlohmann::json comm_json(const CommSnapshot& c);
nlohmann::json op_json(uint32_t ring, const RecordSnapshot& r);
struct LinkTableInfo;
struct LinkSnapshot;
nlohmann::json links_json(const LinkTableInfo& i);
nlohmann::json link_json(const LinkSnapshot& l);
struct ProgressTableInfo;
struct ProgressSnapshot;
nlohmann::json progress_json(const ProgressTableInfo& i);  // "progress": the progress table's header
nlohmann::json step_json(const ProgressSnapshot& e);       // "step": one progress entry

// Prints `r` as JSON lines to `out` (see above). Never throws on segment contents: whatever the
// reader rejects becomes a gap line. Returns what was printed.
DumpStats dump_segment(const SegmentReader& r, std::ostream& out, const DumpOptions& opt = {});

// Opens `path` (SegmentReader::open) and dumps it. False with *error (nothing printed) when the
// file is not a readable scout segment.
bool dump_segment_file(const std::string& path, std::ostream& out, const DumpOptions& opt, DumpStats* stats,
                       std::string* error);

// The set bits of OpFlags by name ("graph_captured", ...); the enums' names are in
// common/names.h (Spelling::kRecord).
nlohmann::json flag_names(uint32_t flags);

}  // namespace scout::shm
