// The plugin's writer of the link table in its segment (include/scout/shm_format.h, "Link
// table"; docs/record-format.md, "Link table"): one entry per net plugin connection and per
// (communicator, peer, direction) timed from ProxyStep events.
//
// Claiming an entry (claim) is an atomic fetch_add on the table's `claimed` counter, so the net
// half and the profiler half may claim from any thread; it happens once per connection or peer,
// never per transfer. Adding a transfer (link_add) is the hot path: plain loads and stores of
// relaxed atomics, no read-modify-write, because every entry has exactly one writing thread (the
// proxy thread driving its connection or communicator, docs/nccl-notes.md §1.4); it never blocks,
// allocates or throws.
#pragma once

#include <atomic>
#include <cstdint>

#include "scout/shm_format.h"

namespace scout::core {

// What identifies a new entry; the counters start at zero.
struct LinkIdentity {
  uint8_t source = shm::kLinkSourceNone;  // shm::LinkSource
  uint8_t dir = shm::kLinkDirNone;        // shm::LinkDir
  uint16_t dev = 0;
  uint64_t comm_hash = 0;
  int32_t comm_nranks = 0;
  int32_t comm_rank = -1;
  int32_t peer_rank = -1;
  int32_t peer_global_rank = -1;
  int32_t peer_pid = 0;
  uint32_t conn_id = 0;
  uint64_t link_id = 0;
  uint64_t peer_host_hash = 0;
};

class LinkTable {
 public:
  // Takes the table at `hdr` of `bytes` bytes (zero-filled at creation, or left by an earlier
  // load cycle of this process: its entries stay and new ones are appended). Returns false if
  // the bytes cannot hold the header and one entry.
  bool attach(shm::LinkTableHeader* hdr, uint64_t bytes);

  // Claims, fills and publishes a new entry (state kLinkOpen, open_ns = `now_ns`). nullptr when
  // the table is full (dropped_full advances) or not attached.
  shm::LinkEntry* claim(const LinkIdentity& id, int64_t now_ns);

  shm::LinkTableHeader* header() const { return hdr_; }
  uint32_t capacity() const { return capacity_; }

 private:
  shm::LinkTableHeader* hdr_ = nullptr;
  shm::LinkEntry* entries_ = nullptr;
  uint32_t capacity_ = 0;
};

// Single-writer increment of a relaxed counter (a load and a store: no locked instruction).
inline void bump(std::atomic<uint64_t>& a, uint64_t by) {
  a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// One completed transfer of `bytes` bytes that took `dur_ns` (>= 0) ns, completed at `end_ns`.
// Only the entry's writing thread calls it.
inline void link_add(shm::LinkEntry* e, uint64_t bytes, int64_t dur_ns, int64_t end_ns) {
  uint64_t d = dur_ns > 0 ? uint64_t(dur_ns) : 0;
  bump(e->transfers, 1);
  bump(e->bytes, bytes);
  bump(e->busy_ns, d);
  if (d > e->max_ns.load(std::memory_order_relaxed)) e->max_ns.store(d, std::memory_order_relaxed);
  std::atomic<uint32_t>& h = e->hist[shm::link_hist_bucket(d)];
  h.store(h.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  e->last_ns.store(end_ns, std::memory_order_relaxed);
}

// The entry's connection closed at `now_ns`: its counters are final.
inline void link_close(shm::LinkEntry* e, int64_t now_ns) {
  e->close_ns.store(now_ns, std::memory_order_relaxed);
  e->state.store(shm::kLinkClosed, std::memory_order_release);
}

}  // namespace scout::core
