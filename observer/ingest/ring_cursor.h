// Reads one communicator ring of a segment, pass after pass, following the ring protocol of
// include/scout/shm_format.h: every record once as soon as it is published, then again at each
// pass while it is not final (records are updated in place: Enqueued -> Running -> Complete,
// GPU times, fingerprint words), until it is final or overwritten.
//
// A new cursor starts at the oldest record still in the ring, so an observer restarted mid-job
// reads everything still there. Nothing here throws or trusts the writer: records the reader
// rejects are counted, never delivered.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/segment_reader.h"

namespace scout::obs {

// What a cursor has seen, cumulative. Every record the writer published is in exactly one of
// read (delivered at least once), gaps, before_attach, or invalid, or still unread.
struct RingCounters {
  uint64_t read = 0;           // records delivered (first sighting)
  uint64_t updates = 0;        // re-reads of records not yet final
  uint64_t gaps = 0;           // records overwritten before the observer first read them
  uint64_t before_attach = 0;  // records overwritten before this cursor started (the observer
                               // came late or restarted): unread by this observer
  uint64_t lost_inflight = 0;  // records overwritten after a first read but before they were final
  uint64_t torn = 0;           // reads that raced with a slot reuse (retried)
  uint64_t invalid = 0;        // records rejected by validate_record, or abandoned half-written
  RingCounters& operator+=(const RingCounters& o);
};

class RingCursor {
 public:
  using OnRecord = std::function<void(const shm::RecordSnapshot&)>;
  using OnLost = std::function<void(uint64_t index)>;

  // Reads ring `ring` of `rd`, whose header says `head` records were claimed so far and whose
  // capacity is `capacity`. Calls on_record for each consistent copy of a new record or of a
  // record still in progress, on_lost for a record overwritten before it was final.
  // `owner_gone`: the writer is dead, so a half-written slot will never be published and is
  // skipped at once (otherwise it is skipped after kAbandonPasses passes), and records still in
  // progress are read one last time and then no longer followed.
  void poll(const shm::SegmentReader& rd, uint32_t ring, uint64_t head, uint32_t capacity, bool owner_gone,
            const OnRecord& on_record, const OnLost& on_lost);

  // Forget everything (the ring was reassigned to another communicator).
  void reset() { *this = RingCursor(); }

  // True when every record claimed so far has been read and is final.
  bool drained(uint64_t head) const { return started_ && next_ >= head && pending_.empty(); }
  const RingCounters& counters() const { return c_; }
  uint64_t next() const { return next_; }
  size_t pending() const { return pending_.size(); }

  static constexpr int kAbandonPasses = 3;  // passes a claimed slot may stay unpublished
  static constexpr int kTornRetries = 3;    // immediate retries of a torn read

 private:
  bool started_ = false;
  uint64_t next_ = 0;              // next index never read
  std::vector<uint64_t> pending_;  // indexes read but not final, ascending
  uint64_t stuck_index_ = UINT64_MAX;
  int stuck_passes_ = 0;
  RingCounters c_;
};

}  // namespace scout::obs
