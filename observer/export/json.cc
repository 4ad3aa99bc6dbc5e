#include "observer/export/json.h"

#include "common/gemm_names.h"
#include "common/utf8.h"
#include "observer/model/finding.h"
#include "observer/model/net_state.h"

namespace scout::exporter {

const char* const kSeqFuncs[5] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};

nlohmann::json job_json(const obs::JobInfo& j) {
  nlohmann::json out = {{"job", j.job},
                        {"nodes", j.nodes},
                        {"node_rank", j.node_rank},
                        {"started_ns", j.started_ns},
                        {"updated_ns", j.updated_ns},
                        {"observer_version", j.observer_version},
                        {"records_read", j.records_read},
                        {"records_lost", j.records_lost},
                        {"records_invalid", j.records_invalid},
                        {"segments_refused", j.segments_refused},
                        {"rings_refused", j.rings_refused},
                        {"warning", j.warning},
                        {"store",
                         {{"failed_batches", j.store.failed_batches},
                          {"unstored_findings", j.store.unstored_findings},
                          {"ops_unstored", j.store.ops_unstored},
                          {"failing_since_ns", j.store.failing_since_ns},
                          {"last_error", j.store.last_error}}}};
  if (j.net.present) out["network"] = obs::to_json(j.net);
  return out;
}

nlohmann::json rank_json(const obs::RankInfo& r) {
  return {{"global_rank", r.global_rank},
          {"local_rank", r.local_rank},
          {"host", r.host},
          {"pid", r.pid},
          {"gpu", r.gpu},
          {"cuda_dev", r.cuda_dev},
          {"node_rank", r.node_rank},
          {"segment", r.segment},
          {"state", r.state},
          {"first_seen_ns", r.first_seen_ns},
          {"last_event_ns", r.last_event_ns}};
}

nlohmann::json comm_json(const obs::CommInfo& c) {
  nlohmann::json seq = nlohmann::json::object();
  for (int i = 0; i < 5; ++i) seq[kSeqFuncs[i]] = c.last_seq[i];
  return {{"hash", obs::hex64(c.comm_hash)},
          {"name", c.name},
          {"nranks", c.nranks},
          {"nnodes", c.nnodes},
          {"global_ranks", c.global_ranks},
          {"ops_complete", c.ops_complete},
          {"p2p_complete", c.p2p_complete},
          {"last_seq", seq},
          {"last_progress_ns", c.last_progress_ns},
          {"state", c.state}};
}

int64_t arrival_spread_ns(const obs::OpSummary& o) {
  if (o.first_arrival_ns == 0 || o.last_arrival_ns < o.first_arrival_ns) return 0;
  return o.last_arrival_ns - o.first_arrival_ns;
}

bool all_arrived(const obs::OpSummary& o) { return o.first_arrival_ns > 0 && o.ranks_reported >= o.nranks; }

std::optional<int64_t> lateness_ns(const obs::OpSummary& o, const obs::OpRankTiming& t) {
  if (o.first_arrival_ns == 0 || t.start_ns == 0) return std::nullopt;
  return t.start_ns - o.first_arrival_ns;
}

nlohmann::json op_json(const obs::OpSummary& o) {
  return {{"comm", {{"hash", obs::hex64(o.comm_hash)}, {"name", o.comm_name}}},
          {"nranks", o.nranks},
          {"kind", o.kind},
          {"func", o.func},
          {"seq", o.seq},
          {"datatype", o.datatype},
          {"count", o.count},
          {"bytes", o.bytes},
          {"algo", o.algo},
          {"proto", o.proto},
          {"n_channels", o.n_channels},
          {"ranks_reported", o.ranks_reported},
          {"ranks_complete", o.ranks_complete},
          {"first_arrival_ns", o.first_arrival_ns},
          {"last_arrival_ns", o.last_arrival_ns},
          {"arrival_spread_ns", arrival_spread_ns(o)},
          {"last_rank", o.last_rank},
          {"end_ns", o.end_ns},
          {"duration_ns", o.duration_ns},
          {"busbw_gbps", o.busbw_gbps},
          {"fp_verdict", o.fp_verdict},
          {"meta_verdict", o.meta_verdict}};
}

nlohmann::json timing_json(const obs::OpRankTiming& t) {
  return {{"global_rank", t.global_rank},
          {"comm_rank", t.comm_rank},
          {"api_ns", t.api_ns},
          {"start_ns", t.start_ns},
          {"end_ns", t.end_ns},
          {"fp_recv", t.fp_recv ? nlohmann::json(obs::hex64(t.fp_recv)) : nlohmann::json(nullptr)},
          {"fp_status", t.fp_status}};
}

nlohmann::json checkpoint_json(const ckpt::Checkpoint& c, const ckpt::CertificateRow* cert) {
  // Paths and reasons come from the disk (any bytes): made valid UTF-8 so no encoder can throw.
  return {{"id", c.id},
          {"path", utf8_clean(c.path)},
          {"framework", utf8_clean(c.framework)},
          {"step", c.step},
          {"state", ckpt::to_string(c.state)},
          {"reason", utf8_clean(c.reason)},
          {"completed_ns", c.completed_ns},
          {"finding_ids", c.finding_ids},
          {"cycles", c.cycles},
          {"files", c.manifest.present ? nlohmann::json(c.manifest.files.size()) : nlohmann::json(nullptr)},
          {"certificate", cert ? nlohmann::json(utf8_clean(cert->file)) : nlohmann::json(nullptr)}};
}

nlohmann::json certificate_json(const ckpt::CertificateRow& r) {
  nlohmann::json doc = nlohmann::json::parse(r.json, nullptr, false);
  return {{"seq", r.seq},
          {"checkpoint_id", r.checkpoint_id},
          {"sha256", r.sha256},
          {"prev_sha256", r.prev_sha256},
          {"file", utf8_clean(r.file)},
          {"document", doc.is_discarded() ? nlohmann::json(r.json) : doc}};
}

nlohmann::json check_cycle_json(const ckpt::CycleVerdict& v) {
  return {{"index", v.index},
          {"begin_ns", v.begin_ns},
          {"end_ns", v.end_ns},
          {"status", ckpt::to_string(v.status)},
          {"reasons", v.reasons},
          {"finding_ids", v.finding_ids},
          {"comparisons", v.comparisons},
          {"comms_ran", v.comms_ran},
          {"comms_covered", v.comms_covered},
          {"voters_min", ckpt::voters_min(v.voters)},
          {"bytes_fingerprinted", v.bytes_fingerprinted},
          {"replay", ckpt::to_string(v.replay)},
          {"replay_recipes", v.replay_recipes},
          {"replay_gpus", v.replay_gpus}};
}

nlohmann::json replay_cycle_json(const obs::ReplayCycleRecord& c) {
  return {{"id", c.id},
          {"cycle", c.cycle},
          {"trigger", c.trigger},
          {"started_ns", c.started_ns},
          {"ended_ns", c.ended_ns},
          {"outcome", c.outcome},
          {"backend", c.backend},
          {"detail", c.detail}};
}

nlohmann::json gemm_key_json(const shm::GemmKey& k) {
  char ops[3];
  shm::gemm_layout_ops(k.layout, ops);
  return {{"m", k.m},
          {"n", k.n},
          {"k", k.k},
          {"batch", k.batch},
          {"a_type", shm::gemm_type_name(k.a_type)},
          {"b_type", shm::gemm_type_name(k.b_type)},
          {"c_type", shm::gemm_type_name(k.c_type)},
          {"d_type", shm::gemm_type_name(k.d_type)},
          {"compute", shm::gemm_compute_name(k.compute)},
          {"scale_type", shm::gemm_type_name(k.scale_type)},
          {"ops", ops},
          {"a_row_major", bool(k.layout & shm::kGemmRowA)},
          {"b_row_major", bool(k.layout & shm::kGemmRowB)},
          {"d_row_major", bool(k.layout & shm::kGemmRowD)},
          {"algo", k.algo},
          {"tile_m", k.tile_m},
          {"tile_n", k.tile_n}};
}

nlohmann::json gemm_capture_json(const obs::GemmCaptureInfo& c) {
  return {{"global_rank", c.global_rank},
          {"host", c.host},
          {"pid", c.pid},
          {"state", shm::gemm_capture_state_name(c.state)},
          {"windows", c.windows},
          {"lines", c.lines},
          {"captured", c.captured},
          {"ignored", c.ignored},
          {"malformed", c.malformed},
          {"dropped_full", c.dropped_full},
          {"dropped_busy", c.dropped_busy},
          {"classes", c.n_entries},
          {"capacity", c.capacity}};
}

nlohmann::json gemm_shape_json(const obs::GemmShapeInfo& g) {
  nlohmann::json j = {{"global_rank", g.global_rank}, {"host", g.host}, {"pid", g.pid}, {"count", g.count}};
  j.update(gemm_key_json(g.key));
  return j;
}

}  // namespace scout::exporter
