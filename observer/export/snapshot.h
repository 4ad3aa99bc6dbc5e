// Everything a report or an export needs from one store, read in one snapshot.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "observer/ckpt/ckpt_store.h"
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
  // The rest of the store (loaded with_history): certification (docs/certification.md),
  // replay cycles (docs/replay.md) and GEMM capture (docs/replay-schedule.md).
  std::vector<ckpt::Checkpoint> checkpoints;       // by id
  std::vector<ckpt::CycleVerdict> check_cycles;    // by index
  std::vector<ckpt::CertificateRow> certificates;  // by seq
  std::vector<obs::ReplayCycleRecord> replay_cycles;  // by started_ns, id
  std::vector<obs::GemmCaptureInfo> gemm_capture;     // by global rank
  std::vector<obs::GemmShapeInfo> gemm_shapes;        // by global rank, shape

  // Reference time of relative times in reports: job.updated_ns ("as of"), else the latest
  // time found in the snapshot.
  int64_t as_of_ns() const;
  // Job start (job.started_ns), else the earliest time found in the snapshot.
  int64_t origin_ns() const;
  std::string job_name() const { return job ? job->job : std::string(); }
};

// Reads the store: ops and timings only when with_ops; checkpoints, check cycles,
// certificates, replay cycles and GEMM capture only when with_history. Throws store::Error.
Snapshot load_snapshot(store::StoreReader& reader, bool with_ops, bool with_history = false);

}  // namespace scout::exporter
