// Reading a segment's link table (include/scout/shm_format.h, "Link table"; docs/record-format.md,
// "Link table"): the header's counters and plain copies of the published entries. Used by the
// observer's ingestion, `scout dump` and the tests. Never writes to the segment.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/segment_reader.h"
#include "scout/shm_format.h"

namespace scout::shm {

// Plain copy of the LinkTableHeader.
struct LinkTableInfo {
  uint32_t capacity = 0, claimed = 0;
  uint32_t net_state = 0, net_abi = 0, delegate_abi = 0;  // NetHalfState, net table versions
  std::string delegate;
  uint64_t dropped_full = 0, net_inits = 0, net_errors = 0;
  uint64_t fault_delayed = 0, fault_stalled = 0, fault_flipped = 0;
  uint32_t proxy_state = 0;  // ProxyWindowState
  uint64_t proxy_windows = 0, proxy_window_ns = 0;
  int64_t proxy_window_start_ns = 0, proxy_window_end_ns = 0;
  uint64_t proxy_steps = 0, proxy_untimed = 0, handle_full = 0;
};

// Plain copy of one published LinkEntry.
struct LinkSnapshot {
  uint32_t index = 0;  // entry index in the table
  uint32_t state = 0;  // LinkEntryState
  uint8_t source = 0, dir = 0;
  uint16_t dev = 0;
  uint64_t comm_hash = 0;
  int32_t comm_nranks = 0, comm_rank = -1, peer_rank = -1, peer_global_rank = -1, peer_pid = 0;
  uint32_t conn_id = 0;
  uint64_t link_id = 0, peer_host_hash = 0;
  int64_t open_ns = 0, close_ns = 0, last_ns = 0;
  uint64_t transfers = 0, bytes = 0, busy_ns = 0, max_ns = 0, posted = 0, faults = 0;
  std::array<uint32_t, kLinkHistBuckets> hist{};
};

// The link table of `rd`, or nullptr (no table, another version, too small). `*capacity` gets the
// entries its bytes hold (bounded by the header's capacity).
const LinkTableHeader* link_table(const SegmentReader& rd, uint32_t* capacity);

// Copies the header of `t` into *out (assigning out->delegate: no allocation when its capacity
// already holds 64 characters).
void read_link_info(const LinkTableHeader* t, uint32_t capacity, LinkTableInfo* out);
inline LinkTableInfo read_link_info(const LinkTableHeader* t, uint32_t capacity) {
  LinkTableInfo i;
  read_link_info(t, capacity, &i);
  return i;
}

// Appends a copy of every published entry of `t` to `out` (entries [0, min(claimed, capacity))
// whose state is not empty). Allocates only if `out` has less spare capacity than that.
void read_links(const LinkTableHeader* t, uint32_t capacity, std::vector<LinkSnapshot>* out);

// "net" / "proxy" / "none"; "send" / "recv" / "none"; "open" / "closed" / "empty";
// "unused" / "active" / "no-delegate" / "delegate-failed"; "off" / "waiting" / "open".
const char* link_source_name(uint8_t s);
const char* link_dir_name(uint8_t d);
const char* link_state_name(uint32_t s);
const char* net_state_name(uint32_t s);
const char* proxy_state_name(uint32_t s);

}  // namespace scout::shm
