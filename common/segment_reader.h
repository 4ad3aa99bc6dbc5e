// The observer's and the tools' side of a shared-memory segment: attaching read-only and
// validated reading of the header, the rings and the records (the protocol of
// include/scout/shm_format.h). Never writes to the segment.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scout/shm_format.h"

namespace scout::shm {

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
  uint64_t ch_started_mask = 0, ch_stopped_mask = 0;  // bit c: KernelCh started / stopped on channel c
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

// Who may have written a segment the reader trusts. A segment is read only when it is a regular
// file (not a FIFO, device or symbolic link), owned by the reader's effective uid or one of
// `uids`, with no permission bits for group or others (the plugin creates it 0600), and fully
// allocated (a sparse file would make every read allocate tmpfs pages: docs/record-format.md,
// "Trust").
struct TrustPolicy {
  std::vector<uint32_t> uids;  // trusted owners besides geteuid()
  // The policy of SCOUT_SHM_TRUSTED_UIDS (comma-separated uids; bad entries are ignored).
  static TrustPolicy from_config();
};

// The checks of `trust` on what fstat() returned for an opened segment file: regular file, owner,
// mode 0600, fully allocated. False with a one-line *why.
bool trusted_segment_file(const struct stat& st, const TrustPolicy& trust, std::string* why);

// Bounds a reader applies before it trusts a header (a hostile file cannot make the reader map
// or allocate more than this).
constexpr uint64_t kMaxSegmentBytes = 64ull << 30;

// Read-only view of a segment written by another process. Never writes to it; every access is
// bounds-checked against the size validated at open.
class SegmentReader {
 public:
  // Opens and maps `path` read-only and validates the header: magic, layout version, header and
  // record sizes, ring geometry, and that the file is exactly as large as the header says.
  // Before mapping, the file itself must pass `trust` (TrustPolicy above); it is opened
  // O_NONBLOCK|O_NOFOLLOW so a FIFO or a link can never block or redirect the reader.
  // Returns nullptr with a one-line *error otherwise.
  static std::unique_ptr<SegmentReader> open(const std::string& path, std::string* error,
                                             const TrustPolicy& trust = TrustPolicy::from_config());
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
  // Start of table `id` (shm_format.h, "Tables") if the segment has one with that id, with
  // *version and *bytes set (bounds were validated at open); nullptr otherwise.
  const void* table(uint32_t id, uint32_t* version, uint64_t* bytes) const;
  // Offset of `t` (a pointer table() returned) from the segment's start, bytes.
  uint64_t offset_of(const void* t) const {
    return uint64_t(static_cast<const char*>(t) - reinterpret_cast<const char*>(hdr_));
  }
  // True while the owner process runs (pid + start time).
  bool owner_alive() const;
  const std::string& path() const { return path_; }
  // Size of the segment validated at open (rings and tables), bytes.
  uint64_t bytes() const { return bytes_; }

 private:
  SegmentReader() = default;
  const SegmentHeader* hdr_ = nullptr;
  uint64_t bytes_ = 0;
  uint32_t max_comms_ = 0, capacity_ = 0;
  uint64_t stride_ = 0;
  std::string path_;
};

// Validates the enums and bounds of a record copy; false with *why if it breaks the format.
bool validate_record(const RecordSnapshot& r, std::string* why);

}  // namespace scout::shm
