// Everything a report or an export needs from one store, read in one snapshot.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "observer/model/job.h"
#include "observer/store/reader.h"

namespace scout::exporter {

struct Snapshot {
  std::string store_path;
  store::StoreMeta meta;
  std::optional<obs::JobInfo> job;
  std::vector<obs::RankInfo> ranks;       // StoreReader::ranks() order
  std::vector<obs::CommInfo> comms;       // StoreReader::comms() order
  std::vector<obs::Finding> findings;     // by id
  std::vector<store::OpRow> ops;          // by time (StoreReader::ops() order)
  std::vector<store::TimingRow> timings;  // by op_id, global_rank

  // Reference time of relative times in reports: job.updated_ns ("as of"), else the latest
  // time found in the snapshot.
  int64_t as_of_ns() const;
  // Job start (job.started_ns), else the earliest time found in the snapshot.
  int64_t origin_ns() const;
  std::string job_name() const { return job ? job->job : std::string(); }
};

// Reads the whole store (ops and timings only when with_ops). Throws store::Error.
Snapshot load_snapshot(store::StoreReader& reader, bool with_ops);

}  // namespace scout::exporter
