// JSON forms of the job model (observer/model/job.h), of checkpoint certification
// (observer/ckpt) and of replay cycles, used by `scout report --json`, `scout status --json`,
// `scout ckpt --json`, `scout replay plan --json` and `scout export --format jsonl`. Keys:
// docs/cli.md. Findings use obs::to_json (observer/model/finding.h).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "common/gemm_key.h"
#include "observer/ckpt/ckpt_store.h"
#include "observer/model/job.h"
#include "observer/model/replay_cycle.h"

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

// A checkpoint (observer/ckpt/states.h; `scout ckpt list --json`): {"id", "path", "framework",
// "step", "state" ("candidate", "verified", "rejected"), "reason", "completed_ns",
// "finding_ids", "cycles", "files" (files recorded when it completed, or null), "certificate" (its
// file, or null when `cert` is null)}. Strings from the disk are made valid UTF-8 (common/utf8.h).
nlohmann::json checkpoint_json(const ckpt::Checkpoint& c, const ckpt::CertificateRow* cert);
// A certificate as the store keeps it: {"seq", "checkpoint_id", "sha256", "prev_sha256", "file",
// "document" (the certificate as issued, parsed; its text when it does not parse)}.
nlohmann::json certificate_json(const ckpt::CertificateRow& r);
// A judged check cycle (observer/ckpt/cycle.h): {"index", "begin_ns", "end_ns", "status"
// ("clean", "dirty", "incomplete"), "reasons", "finding_ids", "comparisons", "comms_ran",
// "comms_covered", "voters_min", "bytes_fingerprinted", "replay", "replay_recipes",
// "replay_gpus"}.
nlohmann::json check_cycle_json(const ckpt::CycleVerdict& v);
// A replay cycle as stored (docs/replay.md, "Cycles in the store"): {"id", "cycle", "trigger",
// "started_ns", "ended_ns", "outcome", "backend", "detail"}.
nlohmann::json replay_cycle_json(const obs::ReplayCycleRecord& c);
// A GEMM shape class (common/gemm_key.h) with the cuBLASLt logger's spellings: {"m", "n", "k",
// "batch", "a_type", "b_type", "c_type", "d_type", "compute", "scale_type", "ops", "a_row_major",
// "b_row_major", "d_row_major", "algo", "tile_m", "tile_n"}.
nlohmann::json gemm_key_json(const shm::GemmKey& k);
// One process's GEMM capture counters: {"global_rank", "host", "pid", "state" (off, waiting,
// capturing, no_library, user_logger, failed), "windows", "lines", "captured", "ignored",
// "malformed", "dropped_full", "dropped_busy", "classes", "capacity"}.
nlohmann::json gemm_capture_json(const obs::GemmCaptureInfo& c);
// One shape class one process ran: {"global_rank", "host", "pid", "count"} + gemm_key_json.
nlohmann::json gemm_shape_json(const obs::GemmShapeInfo& g);

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
