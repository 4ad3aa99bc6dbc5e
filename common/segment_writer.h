// The plugin's side of a shared-memory segment: creation and ring writing. The byte layout and
// the ring protocol are in include/scout/shm_format.h; this is the code that follows them on the
// writing side (the reading side is segment_reader.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scout/shm_format.h"

namespace scout::shm {

// Identity stamped into the segment header.
struct SegmentIdentity {
  std::string job;
  std::string host;
  std::string gpu;
  int global_rank = -1;
  int local_rank = -1;
  int world_size = -1;
  int cuda_dev = -1;
  std::string plugin_version;
};

// One communicator's ring inside a writer's segment. Thread-safe for any number of writers
// (claims use fetch_add); never blocks.
class RingWriter {
 public:
  RingWriter(CommHeader* header, OpRecord* slots, uint32_t capacity, uint32_t ring_index)
      : hdr_(header), slots_(slots), mask_(capacity - 1), ring_index_(ring_index) {}

  // Claims the next record. Returns the slot with seq = seq_writing(index) and every other byte
  // zeroed; the caller fills identity fields and calls publish(). *index receives the record's
  // ring index (0-based, monotonic). If the slot held an operation that had not completed, the
  // ring's overwritten_live counter advances.
  OpRecord* begin(uint64_t* index);

  // Makes a record begun with begin() visible to readers (seq = seq_valid(index), release).
  static void publish(OpRecord* rec, uint64_t index);

  // The record with ring index `index` if it is still in the ring and published; nullptr if it
  // was overwritten (or never written).
  OpRecord* at(uint64_t index) const;

  // The published record whose ring index has the low `bits` bits `low` (what a handle
  // carries), with *index set to its full index; nullptr when the slot now holds a record with
  // other low bits (overwritten) or is being written. One load of the slot's seq: the ring head
  // (written by other threads) is not read. Requires capacity() <= 2^bits.
  OpRecord* find(uint64_t low, int bits, uint64_t* index) const {
    OpRecord* rec = &slots_[low & mask_];
    uint64_t s = rec->seq.load(std::memory_order_acquire);
    if (s < 2 || (s & 1) != 0) return nullptr;
    uint64_t i = s / 2 - 1;
    if ((i & ((uint64_t(1) << bits) - 1)) != low) return nullptr;
    *index = i;
    return rec;
  }

  CommHeader* header() const { return hdr_; }
  uint32_t capacity() const { return mask_ + 1; }
  uint32_t ring_index() const { return ring_index_; }

 private:
  CommHeader* hdr_;
  OpRecord* slots_;
  uint32_t mask_;
  uint32_t ring_index_;
};

// A table to place after the rings (shm_format.h, "Tables").
struct TableRequest {
  uint32_t id = kTableNone;
  uint32_t version = 0;
  uint64_t bytes = 0;  // rounded up to a multiple of 64
};

// The writer's view of its process's segment. Creation is the only place that can fail; after
// that nothing here blocks or allocates.
class SegmentWriter {
 public:
  // Creates `dir`/segment_name(...) with O_CREAT|O_EXCL, mode 0600, sizes it with
  // posix_fallocate (a full tmpfs fails here, not later with SIGBUS), maps it and writes the
  // header. max_comms in [1, kMaxCommsLimit]; ring_capacity a power of two in
  // [kMinRingCapacity, kMaxRingCapacity]. On failure returns nullptr and sets *error to one line
  // naming the path and the reason; no file is left behind.
  // If this pid's segment already exists and was created by this very process (same pid and
  // start time, same geometry: the plugin was dlclosed and dlopened again), it is reopened:
  // its records and counters stay, new communicators get the rings not used yet, closed_ns is
  // cleared. Any other existing file of that name (pid reuse, other geometry) is replaced.
  // `tables` (at most kMaxTables, distinct ids) are zero-filled and listed in the header.
  static std::unique_ptr<SegmentWriter> create(const std::string& dir, const SegmentIdentity& id, uint32_t max_comms,
                                               uint32_t ring_capacity, std::string* error,
                                               const std::vector<TableRequest>& tables = {});

  // Start of table `id` (zero-filled at creation, or as left by an earlier load cycle of this
  // process), or nullptr if the segment has no such table. *bytes receives its size.
  void* table(uint32_t id, uint64_t* bytes = nullptr) const;
  ~SegmentWriter();  // unmaps; the file stays for the observer, which reclaims it
  SegmentWriter(const SegmentWriter&) = delete;
  SegmentWriter& operator=(const SegmentWriter&) = delete;

  // Assigns the next free ring to a communicator and publishes it. Returns nullptr when all
  // max_comms rings are taken (SegmentHeader::comms_dropped advances). Thread-safe.
  RingWriter* open_ring(uint64_t comm_hash, int nranks, int rank, int nnodes, const char* name, int cuda_dev);

  // Marks a ring finalized (records stay readable). Thread-safe.
  void close_ring(RingWriter* ring);

  SegmentHeader* header() const { return hdr_; }
  const std::string& path() const { return path_; }
  uint64_t bytes() const { return bytes_; }
  // True once the file was truncated under this writer and its mapping replaced by private
  // memory (common/write_guard.h): what it writes from then on reaches no observer.
  bool detached() const;

 private:
  SegmentWriter() = default;
  static std::unique_ptr<SegmentWriter> reopen_own(const std::string& path, uint32_t max_comms, uint32_t ring_capacity,
                                                   uint64_t bytes);
  SegmentHeader* hdr_ = nullptr;
  uint64_t bytes_ = 0;
  std::string path_;
  std::vector<RingWriter> rings_;  // one per possible ring, constructed at creation
  std::atomic<uint32_t> next_ring_{0};
};

}  // namespace scout::shm
