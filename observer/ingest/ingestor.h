// Node-local ingestion: finds every segment of the job on this host (including ones created
// after start: the directory is rescanned each pass), attaches read-only, validates, and feeds
// every record into the Model. Segments that break (bad header, SIGBUS because the file shrank)
// are counted and dropped, never fatal. Reclaim (unlink) of segments whose owner is gone is
// decided by the caller (Observer), which knows when their evidence is judged and stored.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/progress_reader.h"
#include "common/segment_control.h"
#include "common/segment_reader.h"
#include "observer/ingest/liveness.h"
#include "observer/ingest/ring_cursor.h"
#include "observer/model/model.h"

namespace scout::obs {

struct IngestOptions {
  std::string shm_dir = "/dev/shm";
  std::string job;
  std::string host;  // only segments of this host ("" = every host in shm_dir)
  int node_rank = 0;
  LivenessFn liveness;                          // default: owner_running
  std::function<void(const std::string&)> log;  // one line per notable event (may be empty)
};

// Totals over the segments attached so far (rejections included).
struct IngestStats {
  uint64_t segments_attached = 0;
  uint64_t segments_rejected = 0;  // files whose header fails validation now (retried each pass)
  uint64_t segments_faulted = 0;   // dropped because the file shrank (seen before reading, or SIGBUS)
  uint64_t segments_reclaimed = 0;
  uint64_t rings_rejected = 0;  // ring headers with impossible values, or claims beyond the rank-slot bounds
  RingCounters records;
};

class Ingestor {
 public:
  explicit Ingestor(IngestOptions opt);
  ~Ingestor();

  // One pass: rescan the directory, attach new segments, refresh liveness, read every ring and
  // apply the records to `model`. `now_ns` is the observer clock.
  void pass(Model& model, int64_t now_ns);

  // A segment attached now or earlier, as the reclaim decision needs it.
  struct SegmentView {
    std::string path;
    int proc = -1;
    bool owner_gone = false;
    bool closed = false;   // the writer set closed_ns (every communicator finalized)
    bool drained = false;  // every record claimed so far read and final
    int64_t last_event_ns = 0;
    int64_t gone_ns = 0;  // observer time the owner was first seen gone
  };
  std::vector<SegmentView> segments() const;

  // Asks the process of Model proc `proc` (a segment this ingestor reads) to trace `req`'s
  // communicator: writes the request into its segment's progress table (common/segment_control.h;
  // docs/plugin.md, "Tracing a stuck collective"). Returns the request's sequence number, or 0 with
  // a one-line *error (no such segment, no progress table, the file changed).
  uint64_t request_trace(int proc, const shm::TraceRequest& req, std::string* error) const;

  // Unlinks `path` (a segment listed by segments()) and detaches from it. Returns false with a
  // log line if unlink fails (e.g. permissions); the segment is then left alone.
  bool reclaim(const std::string& path);

  // Totals so far (record counters of attached and detached segments).
  IngestStats stats() const;

  // Why the observer has read no segment of the job yet, in one line: SCOUT_SHM_DIR missing, not
  // a directory or not writable (the plugin cannot create segments there), only refused files
  // (the latest reason), or none there. "" once a segment was attached.
  std::string no_segment_reason() const;
  size_t attached() const { return segs_.size(); }

 private:
  struct Ring {
    bool known = false;
    bool refused = false;  // beyond the rank-slot bound (logged once)
    uint32_t generation = 0;
    CommKey key;
    int rank = -1;
    uint64_t head = 0;
    RingCursor cursor;
  };
  struct Segment {
    std::string path;
    std::unique_ptr<shm::SegmentReader> reader;
    uint64_t bytes = 0;  // file size the header promised when attached
    uint64_t inode = 0;  // file identity when attached
    // Scratch copies filled inside the SIGBUS-guarded region: members, not locals, so a fault
    // (which skips destructors) leaks nothing.
    shm::SegmentInfo info;
    shm::CommSnapshot cs;
    int proc = -1;
    bool owner_gone = false;
    bool closed = false;
    int64_t last_event_ns = 0;
    int64_t gone_ns = 0;
    int64_t rank_slots = 0;      // rank slots of the communicators this segment claimed first
    uint64_t rings_refused = 0;  // rings beyond its budget or the job's bound
    std::vector<Ring> rings;
    // GEMM shape table (kTableGemmShapes): scratch sized at attach (no allocation under the
    // SIGBUS guard), copied into the model after it.
    const shm::GemmTableHeader* gemm = nullptr;
    uint32_t gemm_capacity = 0;
    GemmCaptureInfo gemm_info;
    std::vector<std::pair<shm::GemmKey, uint64_t>> gemm_scratch;
    // Link table (kTableLinks): the same scheme, scratch reserved at attach.
    const shm::LinkTableHeader* links = nullptr;
    uint32_t links_capacity = 0;
    shm::LinkTableInfo link_info;
    std::vector<shm::LinkSnapshot> link_scratch;
    // Progress table (kTableProgress): the same scheme.
    const shm::ProgressTableHeader* progress = nullptr;
    uint32_t progress_capacity = 0;
    shm::ProgressTableInfo progress_info;
    std::vector<shm::ProgressSnapshot> progress_scratch;
  };
  // Copies the segment's GEMM table into s.gemm_info / s.gemm_scratch (inside the guard).
  static void read_gemm(Segment& s);
  // The segment's GEMM, link and progress tables into its scratch copies (under the SIGBUS guard).
  static void read_tables(Segment& s);
  // The link and GEMM tables read from segment `s` (outside the SIGBUS guard) into its process.
  static void publish_tables(Segment& s, Model& model);
  void attach_new();
  enum class ReadResult { kOk, kFault, kShrunk, kForeign };
  // Reads one segment; kFault (SIGBUS), kShrunk (the file no longer has the size its header
  // promised) and kForeign (another job's header) drop it.
  ReadResult read_segment(Segment& s, Model& model, int64_t now_ns);
  void log(const std::string& line) const;

  IngestOptions opt_;
  std::map<std::string, std::unique_ptr<Segment>> segs_;
  std::map<std::string, std::string> rejected_;         // path -> last error (retried each pass)
  std::string last_rejection_;                          // latest rejection message
  std::set<std::pair<std::string, uint64_t>> dropped_;  // (path, inode) dropped: not reattached
  IngestStats stats_;                                   // records: counters of detached segments only
  std::set<CommKey> admitted_;                          // communicators whose rank slots are counted in rank_slots_
  int64_t rank_slots_ = 0;
};

}  // namespace scout::obs
