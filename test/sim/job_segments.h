// Reads back what the plugin recorded for a scout-sim job: every segment of the job in a
// directory, with each communicator ring and its readable records (common/segment_reader.h). For
// scout-sim's end-to-end tests and benchmark.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/segment_reader.h"

namespace scout::sim {

struct RingRecords {
  shm::CommSnapshot comm;
  std::vector<shm::RecordSnapshot> records;  // readable records, oldest first
  uint64_t missing = 0;                      // indices below head that could not be read
};

struct RankSegment {
  std::string path;
  shm::SegmentInfo info;
  bool owner_alive = false;
  std::vector<RingRecords> rings;
};

// Every segment of `job` in `dir`, sorted by global rank. Segments that fail validation are
// skipped; *errors (if given) receives one line per such segment.
std::vector<RankSegment> read_job_segments(const std::string& dir, const std::string& job,
                                           std::vector<std::string>* errors = nullptr);

// Records of all segments (sum of ring heads): what the plugin recorded for the job.
uint64_t count_records(const std::vector<RankSegment>& segs);

}  // namespace scout::sim
