#include "test/sim/job_segments.h"

#include <algorithm>
#include "common/paths.h"

namespace scout::sim {

std::vector<RankSegment> read_job_segments(const std::string& dir, const std::string& job,
                                           std::vector<std::string>* errors) {
  std::vector<RankSegment> out;
  for (const std::string& path : shm::list_segments(dir, job)) {
    std::string err;
    auto reader = shm::SegmentReader::open(path, &err);
    if (!reader) {
      if (errors) errors->push_back(path + ": " + err);
      continue;
    }
    RankSegment seg;
    seg.path = path;
    seg.info = reader->info();
    seg.owner_alive = reader->owner_alive();
    for (uint32_t ring = 0; ring < reader->n_rings(); ++ring) {
      RingRecords rr;
      if (!reader->comm(ring, &rr.comm)) continue;
      uint64_t head = rr.comm.head;
      uint64_t first = head > seg.info.ring_capacity ? head - seg.info.ring_capacity : 0;
      rr.missing = first;
      for (uint64_t i = first; i < head; ++i) {
        shm::RecordSnapshot r;
        shm::ReadStatus st = reader->read(ring, i, &r);
        for (int tries = 0; st == shm::ReadStatus::kTorn && tries < 100; ++tries) st = reader->read(ring, i, &r);
        if (st == shm::ReadStatus::kOk)
          rr.records.push_back(r);
        else
          ++rr.missing;
      }
      seg.rings.push_back(std::move(rr));
    }
    out.push_back(std::move(seg));
  }
  std::sort(out.begin(), out.end(),
            [](const RankSegment& a, const RankSegment& b) { return a.info.global_rank < b.info.global_rank; });
  return out;
}

uint64_t count_records(const std::vector<RankSegment>& segs) {
  uint64_t n = 0;
  for (const RankSegment& s : segs)
    for (const RingRecords& r : s.rings) n += r.comm.head;
  return n;
}

}  // namespace scout::sim
