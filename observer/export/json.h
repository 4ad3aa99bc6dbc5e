// JSON forms of the job model (observer/model/job.h) used by `scout report --json`,
// `scout status --json` and `scout export --format jsonl`. Keys: docs/cli.md. Findings use
// obs::to_json (observer/model/finding.h).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "observer/model/job.h"

namespace scout::exporter {

// {"job", "nodes", "node_rank", "started_ns", "updated_ns", "observer_version"}
nlohmann::json job_json(const obs::JobInfo& j);
// {"global_rank", "local_rank", "host", "pid", "gpu", "cuda_dev", "node_rank", "segment",
//  "state", "first_seen_ns", "last_event_ns"}
nlohmann::json rank_json(const obs::RankInfo& r);
// {"hash" ("0x" + 16 hex), "name", "nranks", "nnodes", "global_ranks", "ops_complete",
//  "last_seq" {Broadcast, Reduce, AllGather, ReduceScatter, AllReduce}, "last_progress_ns",
//  "state"}
nlohmann::json comm_json(const obs::CommInfo& c);
// {"comm" {hash, name}, "nranks", "kind", "func", "seq", "datatype", "count", "bytes", "algo",
//  "proto", "n_channels", "ranks_reported", "ranks_complete", "first_arrival_ns",
//  "last_arrival_ns", "arrival_spread_ns", "last_rank", "end_ns", "duration_ns", "busbw_gbps",
//  "fp_verdict", "meta_verdict"}
nlohmann::json op_json(const obs::OpSummary& o);
// {"global_rank", "comm_rank", "api_ns", "start_ns", "end_ns", "fp_recv" ("0x" + 16 hex or
//  null), "fp_status"}
nlohmann::json timing_json(const obs::OpRankTiming& t);

// last_arrival_ns - first_arrival_ns; 0 when no rank has started (docs/observer.md#stragglers).
int64_t arrival_spread_ns(const obs::OpSummary& o);
// Every rank of the operation has started on the GPU: only then do the spread and the last
// arrival mean something (report, Prometheus).
bool all_arrived(const obs::OpSummary& o);
// A rank's lateness: its GPU start minus the operation's earliest start (ns); none when either
// is unknown. The ONE rule of scout report, the Prometheus lateness gauge and the trace.
std::optional<int64_t> lateness_ns(const obs::OpSummary& o, const obs::OpRankTiming& t);

// Function names of CommInfo::last_seq, in NCCL's order.
extern const char* const kSeqFuncs[5];

}  // namespace scout::exporter
