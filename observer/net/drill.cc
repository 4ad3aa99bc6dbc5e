#include "observer/net/drill.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>
#include <type_traits>

#include "observer/model/limits.h"
#include "observer/net/wire.h"
#include "observer/net/wire_fields.h"

namespace scout::net {

namespace {

constexpr uint8_t kReportVersion = 6;
constexpr uint32_t kMaxFindingBytes = 1u << 20;

using namespace wire;

int64_t shifted(int64_t t, int64_t offset) { return t ? t - offset : 0; }

}  // namespace

void shift_times(shm::RecordSnapshot* r, int64_t offset) {
  r->api_ns = shifted(r->api_ns, offset);
  r->launch_ns = shifted(r->launch_ns, offset);
  r->enqueue_ns = shifted(r->enqueue_ns, offset);
  r->gpu_start_ns = shifted(r->gpu_start_ns, offset);
  r->gpu_end_ns = shifted(r->gpu_end_ns, offset);
  r->complete_ns = shifted(r->complete_ns, offset);
}

void shift_times(WaitSnapshot* w, int64_t offset) {
  for (ProcView& p : w->procs) {
    p.last_event_ns = shifted(p.last_event_ns, offset);
    p.gone_ns = shifted(p.gone_ns, offset);
  }
  for (CommWaitView& c : w->comms) {
    c.last_progress_ns = shifted(c.last_progress_ns, offset);
    for (MemberView& m : c.members) {
      m.init_ns = shifted(m.init_ns, offset);
      for (MarkView* k : {&m.last_enqueued, &m.last_started, &m.last_completed}) k->ns = shifted(k->ns, offset);
      for (shm::RecordSnapshot& r : m.records) shift_times(&r, offset);
    }
  }
}

std::vector<uint8_t> encode_report(const NodeReport& r) {
  WireWriter w;
  w.u8(kReportVersion);
  w.u32(static_cast<uint32_t>(r.findings.size()));
  for (const obs::Finding& f : r.findings) {
    nlohmann::json j = obs::to_json(f);
    j["dedup_key"] = f.dedup_key;  // not in the public JSON form; status carries open/closed
    w.str(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return w.take();
}

bool decode_report(std::span<const uint8_t> bytes, NodeReport* out, std::string* error) {
  auto fail = [&](const std::string& m) {
    if (error) *error = m;
    return false;
  };
  WireReader r(bytes);
  NodeReport rep;
  if (r.u8() != kReportVersion) return fail("unknown report version");
  const uint32_t nf = r.u32();
  if (!r.fits(nf, kCountBytes)) return fail("truncated findings");  // a string's length
  for (uint32_t i = 0; i < nf; ++i) {
    const std::string text = r.str();
    if (!r.ok() || text.size() > kMaxFindingBytes) return fail("truncated finding");
    obs::Finding f;
    std::string why;
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      if (!obs::from_json(j, &f, &why)) return fail("bad finding: " + why);
      if (f.dedup_key.empty()) return fail("bad finding: no dedup_key");
    } catch (const std::exception& e) { return fail(std::string("bad finding: ") + e.what()); }
    f.id = 0;
    rep.findings.push_back(std::move(f));
  }
  if (!r.ok()) return fail("truncated report");
  if (!r.at_end()) return fail("trailing bytes after report");
  *out = std::move(rep);
  return true;
}

LeaderInbox collect_reports(const std::vector<Contribution>& got) {
  LeaderInbox in;
  for (const Contribution& c : got) {
    NodeReport r;
    std::string why;
    if (!decode_report(c.bytes, &r, &why)) {
      if (in.bad_reports++ == 0) in.first_error = "node-rank " + std::to_string(c.rank) + ": " + why;
      continue;
    }
    for (obs::Finding& f : r.findings) in.findings.push_back(std::move(f));
  }
  return in;
}

}  // namespace scout::net
