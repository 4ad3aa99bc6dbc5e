// Shared-memory segments: creation and ring writing (plugin side), attaching and validated
// reading (observer and tool side). The byte layout and the ring protocol are in
// include/scout/shm_format.h; this is the code that follows them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "scout/shm_format.h"

namespace scout::shm {

// Reduces a job or host name to the characters allowed in a segment name component:
// [A-Za-z0-9_-]; others become '_'; at most 48 characters; empty becomes "_".
std::string sanitize_component(std::string_view s);

// "scout.<job>.<host>.<pid>" with job and host sanitized.
std::string segment_name(std::string_view job, std::string_view host, int pid);

// Start time of process `pid` in clock ticks since boot (/proc/<pid>/stat field 22); 0 if the
// process does not exist or /proc is unreadable. Pairs with the pid to detect pid reuse.
uint64_t process_start_ticks(int pid);

// True when the process that created a segment still runs: `pid` exists and its start time
// equals `start_ticks` (0 = unknown, then existence alone decides). `state`, when given, receives
// the /proc state letter ('R', 'S', 'Z', ...; 0 if unreadable) from the same read.
bool process_alive(int pid, uint64_t start_ticks, char* state = nullptr);

// CLOCK_REALTIME in ns.
int64_t wall_ns();

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
  static std::unique_ptr<SegmentWriter> create(const std::string& dir, const SegmentIdentity& id,
                                               uint32_t max_comms, uint32_t ring_capacity,
                                               std::string* error);
  ~SegmentWriter();  // unmaps; the file stays for the observer, which reclaims it
  SegmentWriter(const SegmentWriter&) = delete;
  SegmentWriter& operator=(const SegmentWriter&) = delete;

  // Assigns the next free ring to a communicator and publishes it. Returns nullptr when all
  // max_comms rings are taken (SegmentHeader::comms_dropped advances). Thread-safe.
  RingWriter* open_ring(uint64_t comm_hash, int nranks, int rank, int nnodes, const char* name,
                        int cuda_dev);

  // Marks a ring finalized (records stay readable). Thread-safe.
  void close_ring(RingWriter* ring);

  SegmentHeader* header() const { return hdr_; }
  const std::string& path() const { return path_; }
  uint64_t bytes() const { return bytes_; }

 private:
  SegmentWriter() = default;
  static std::unique_ptr<SegmentWriter> reopen_own(const std::string& path, uint32_t max_comms,
                                                   uint32_t ring_capacity);
  SegmentHeader* hdr_ = nullptr;
  uint64_t bytes_ = 0;
  std::string path_;
  std::vector<RingWriter> rings_;  // one per possible ring, constructed at creation
  std::atomic<uint32_t> next_ring_{0};
};

// Result of reading one record.
enum class ReadStatus {
  kOk,           // *out holds a consistent copy of the record
  kNotYet,       // index >= head: not written yet
  kOverwritten,  // the slot now holds a newer record: this one is lost (a gap)
  kTorn,         // the slot was rewritten while it was copied; try again later
  kInvalid,      // the slot's contents break the format (bad enum, bounds): rejected
};

// Plain copy of one OpRecord (no atomics), with fingerprint statuses decoded against its index.
struct RecordSnapshot {
  uint64_t index = 0;  // ring index
  uint64_t key = 0;
  uint8_t kind = 0, func = 0, datatype = 0, api_datatype = 0, algo = 0, proto = 0;
  uint8_t n_channels = 0, n_warps = 0;
  uint32_t flags = 0;
  int32_t peer = -1;
  uint64_t count = 0, api_count = 0, bytes = 0, group = 0;
  int64_t api_ns = 0, launch_ns = 0, enqueue_ns = 0;
  uint64_t send_buf = 0, recv_buf = 0, stream = 0;
  uint32_t thread = 0;
  uint32_t state = 0;
  uint16_t ch_started = 0, ch_stopped = 0;
  int64_t gpu_start_ns = 0, gpu_end_ns = 0, complete_ns = 0;
  uint64_t gpu_start_raw = 0;
  FpStatus fp_send_status = kFpNone, fp_recv_status = kFpNone;
  uint64_t fp_send = 0, fp_recv = 0;
  uint32_t send_nan = 0, send_inf = 0, recv_nan = 0, recv_inf = 0;
  uint64_t fp_bytes = 0;
  uint32_t fp_level = 0, fp_version = 0;
};

// Plain copy of one CommHeader.
struct CommSnapshot {
  uint32_t ring = 0;
  uint32_t state = 0;
  uint32_t generation = 0;
  uint64_t comm_hash = 0;
  int32_t nranks = 0, rank = 0, nnodes = 0, cuda_dev = -1;
  std::string name;
  int64_t init_ns = 0, finalize_ns = 0;
  uint64_t head = 0;
  uint64_t n_coll = 0, n_p2p = 0, n_unmatched = 0, overwritten_live = 0, bad_handles = 0;
  uint64_t foreign_proxy = 0, kernelch_orphans = 0, api_calls = 0;
  int64_t last_api_ns = 0, gpu_clock_offset_ns = 0;
  uint64_t fp_sampled = 0, fp_skipped = 0;
  uint32_t fp_level = 0;
  uint64_t fp_gpu_ns = 0, kernel_ns = 0, disabled_reason = 0;
  uint64_t kernelch_extra = 0, ignored_events = 0, late_matches = 0;
};

// Plain copy of the segment header's identity and counters.
struct SegmentInfo {
  std::string path;
  uint32_t layout_version = 0;
  int32_t owner_pid = 0;
  uint64_t owner_start_ticks = 0;
  int64_t created_ns = 0;
  uint32_t max_comms = 0, ring_capacity = 0, n_comms = 0, abi_version = 0;
  int32_t global_rank = -1, local_rank = -1, world_size = -1, cuda_dev = -1;
  std::string job, host, gpu, plugin_version;
  uint64_t comms_dropped = 0, events_bad_handle = 0, events_unknown = 0;
  int64_t last_event_ns = 0, closed_ns = 0;
};

// Read-only view of a segment written by another process. Never writes to it; every access is
// bounds-checked against the size validated at open.
class SegmentReader {
 public:
  // Opens and maps `path` read-only and validates the header: magic, layout version, header and
  // record sizes, ring geometry, and that the file is exactly as large as the header says.
  // Returns nullptr with a one-line *error otherwise.
  static std::unique_ptr<SegmentReader> open(const std::string& path, std::string* error);
  ~SegmentReader();
  SegmentReader(const SegmentReader&) = delete;
  SegmentReader& operator=(const SegmentReader&) = delete;

  // Header identity and counters (copied now).
  SegmentInfo info() const;
  // Rings published so far (<= max_comms).
  uint32_t n_rings() const;
  // Copies ring `ring`'s header; false if the ring is out of range, free or still initialising.
  bool comm(uint32_t ring, CommSnapshot* out) const;
  // Reads record `index` of ring `ring` following the protocol in shm_format.h.
  ReadStatus read(uint32_t ring, uint64_t index, RecordSnapshot* out) const;
  // True while the owner process runs (pid + start time).
  bool owner_alive() const;
  const std::string& path() const { return path_; }

 private:
  SegmentReader() = default;
  const SegmentHeader* hdr_ = nullptr;
  uint64_t bytes_ = 0;
  uint32_t max_comms_ = 0, capacity_ = 0;
  uint64_t stride_ = 0;
  std::string path_;
};

// Paths of the segments in `dir` whose names start with "scout.<job>." (and, when `host` is not
// empty, "scout.<job>.<host>."), job and host sanitized as in segment_name(). Sorted by name.
std::vector<std::string> list_segments(const std::string& dir, std::string_view job,
                                       std::string_view host = {});

// Parses "scout.<job>.<host>.<pid>" (a file name, no directory); false if it is not one.
bool parse_segment_name(std::string_view name, std::string* job, std::string* host, int* pid);

// Validates the enums and bounds of a record copy; false with *why if it breaks the format.
bool validate_record(const RecordSnapshot& r, std::string* why);

}  // namespace scout::shm
