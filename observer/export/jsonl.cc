#include "observer/export/jsonl.h"

#include <map>

#include "observer/export/json.h"

namespace scout::exporter {

void write_jsonl(const Snapshot& s, std::ostream& out) {
  nlohmann::json header = {{"type", "header"},
                           {"format", "scout-jsonl"},
                           {"version", kJsonlVersion},
                           {"schema_version", s.meta.schema_version},
                           {"job", s.job ? job_json(*s.job) : nlohmann::json(nullptr)}};
  out << header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  auto line = [&](const char* type, nlohmann::json j) {
    j["type"] = type;
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  };
  for (const auto& r : s.ranks) line("rank", rank_json(r));
  for (const auto& c : s.comms) line("comm", comm_json(c));
  for (const auto& f : s.findings) line("finding", obs::to_json(f));
  std::map<int64_t, nlohmann::json> timings;
  for (const auto& t : s.timings) {
    auto& arr = timings[t.op_id];
    if (arr.is_null()) arr = nlohmann::json::array();
    arr.push_back(timing_json(t.t));
  }
  for (const auto& o : s.ops) {
    nlohmann::json j = op_json(o.op);
    auto it = timings.find(o.op_id);
    j["timings"] = it == timings.end() ? nlohmann::json::array() : it->second;
    line("op", std::move(j));
  }
  for (const auto& c : s.checkpoints) {
    const ckpt::CertificateRow* cert = nullptr;
    for (const auto& r : s.certificates)
      if (r.checkpoint_id == c.id) cert = &r;
    line("checkpoint", checkpoint_json(c, cert));
  }
  for (const auto& v : s.check_cycles) line("check_cycle", check_cycle_json(v));
  for (const auto& r : s.certificates) line("certificate", certificate_json(r));
  for (const auto& c : s.replay_cycles) line("replay_cycle", replay_cycle_json(c));
  for (const auto& c : s.gemm_capture) line("gemm_capture", gemm_capture_json(c));
  for (const auto& g : s.gemm_shapes) line("gemm_shape", gemm_shape_json(g));
}

}  // namespace scout::exporter
