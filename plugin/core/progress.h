// The plugin's side of the progress table (include/scout/shm_format.h, "Progress table";
// docs/record-format.md, "Progress table"; docs/plugin.md, "Tracing a stuck collective"): where
// NCCL's network steps of each (communicator, channel, peer, direction) are, and the observer's
// request to trace one communicator.
//
// Entries are claimed by a communicator's proxy thread at the first ProxyOp of their tuple
// (claimed.fetch_add, never an allocation) and updated only by that thread with relaxed loads and
// stores. The request is polled at each NCCL API call with one relaxed load (pending()); acting on
// it (trace_request) is the slow path: it finds the communicator, asks the ProxyStep windows to
// keep ProxyOp | ProxyStep in the activation mask until the request's time (proxy_window.h), and
// answers in the header. Nothing here blocks, allocates or throws.
#pragma once

#include <atomic>
#include <cstdint>

#include "scout/shm_format.h"

namespace scout::core {

struct Process;

class ProgressTable {
 public:
  // Takes the table at `hdr` of `bytes` bytes (zero-filled at creation, or left by an earlier load
  // cycle of this process: its entries and the request stay; a request already acted on is not
  // acted on again). False if the bytes cannot hold the header and one entry.
  bool attach(shm::ProgressTableHeader* hdr, uint64_t bytes);
  shm::ProgressTableHeader* header() const { return hdr_; }

  // True when the observer wrote a request not acted on yet: one relaxed load and a compare.
  bool pending() const {
    return hdr_ != nullptr &&
           hdr_->request_seq.load(std::memory_order_relaxed) != seen_.load(std::memory_order_relaxed);
  }
  // Marks request `seq` acted on.
  void seen(uint64_t seq) { seen_.store(seq, std::memory_order_relaxed); }

  // Claims, fills and publishes the entry of (communicator, channel, peer, direction); returns its
  // index, or -1 when the table is full (dropped_full advances) or not attached.
  int32_t claim(uint64_t comm_hash, int32_t nranks, int32_t rank, int32_t peer, uint8_t channel, uint8_t dir);
  shm::ProgressEntry* entry(uint32_t index) const { return index < capacity_ ? &entries_[index] : nullptr; }

 private:
  shm::ProgressTableHeader* hdr_ = nullptr;
  shm::ProgressEntry* entries_ = nullptr;
  uint32_t capacity_ = 0;
  std::atomic<uint64_t> seen_{0};
};

// The observer's request, acted on at an API call (caller checked pending()): the communicator it
// names (hash, and size unless 0) is traced until the request's time, its ProxyOps recorded in
// entries; a request naming no communicator of this process is answered kTraceNoComm. Retried at
// the next call when a ProxyStep window is switching at this moment. `now_ns`: CLOCK_REALTIME.
void trace_request(Process* p, int64_t now_ns);

}  // namespace scout::core
