#include "observer/ingest/ring_cursor.h"

#include "observer/model/model.h"

namespace scout::obs {

using shm::ReadStatus;

RingCounters& RingCounters::operator+=(const RingCounters& o) {
  read += o.read;
  updates += o.updates;
  gaps += o.gaps;
  before_attach += o.before_attach;
  lost_inflight += o.lost_inflight;
  torn += o.torn;
  invalid += o.invalid;
  return *this;
}

void RingCursor::poll(const shm::SegmentReader& rd, uint32_t ring, uint64_t head, uint32_t capacity, bool owner_gone,
                      const OnRecord& on_record, const OnLost& on_lost) {
  if (!started_) {
    next_ = head > capacity ? head - capacity : 0;
    c_.before_attach += next_;  // claimed and already overwritten: never seen by this cursor
    started_ = true;
  }
  if (head < next_) {  // head went backwards: not a ring we know; start over
    reset();
    started_ = true;
    next_ = head > capacity ? head - capacity : 0;
  }
  if (head - next_ > capacity) {
    c_.gaps += head - capacity - next_;
    next_ = head - capacity;
  }
  shm::RecordSnapshot rec;

  // Records already seen, still in progress (oldest first; compacted in place).
  size_t keep = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    uint64_t idx = pending_[i];
    ReadStatus st = rd.read(ring, idx, &rec);
    if (st == ReadStatus::kOk) {
      c_.updates++;
      on_record(rec);
      if (!Model::is_final(rec)) pending_[keep++] = idx;
    } else if (st == ReadStatus::kOverwritten) {
      c_.lost_inflight++;
      on_lost(idx);
    } else if (st == ReadStatus::kTorn || st == ReadStatus::kNotYet) {
      c_.torn += st == ReadStatus::kTorn;
      pending_[keep++] = idx;  // try again next pass
    } else {
      c_.invalid++;
      on_lost(idx);
    }
  }
  pending_.resize(keep);
  if (owner_gone) pending_.clear();  // this was the last read: a dead writer updates nothing

  // New records.
  while (next_ < head) {
    ReadStatus st = rd.read(ring, next_, &rec);
    for (int t = 0; st == ReadStatus::kTorn && t < kTornRetries; ++t) {
      c_.torn++;
      st = rd.read(ring, next_, &rec);
    }
    if (st == ReadStatus::kOk) {
      c_.read++;
      on_record(rec);
      if (!Model::is_final(rec)) pending_.push_back(next_);
      next_++;
      stuck_passes_ = 0;
      continue;
    }
    if (st == ReadStatus::kOverwritten) {
      c_.gaps++;
      next_++;
      continue;
    }
    if (st == ReadStatus::kInvalid) {
      c_.invalid++;
      next_++;
      continue;
    }
    // kNotYet (claimed, not yet published) or still torn: wait, unless the slot is abandoned
    // (its writer died mid-write, or it stays unpublished while the ring moved on).
    if (stuck_index_ != next_) {
      stuck_index_ = next_;
      stuck_passes_ = 0;
    }
    if (owner_gone || (++stuck_passes_ > kAbandonPasses && head > next_ + 1)) {
      c_.invalid++;
      next_++;
      stuck_passes_ = 0;
      continue;
    }
    break;
  }
}

}  // namespace scout::obs
