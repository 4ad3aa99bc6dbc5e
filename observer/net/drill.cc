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

constexpr uint8_t kReportVersion = 5;
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
  w.u32(static_cast<uint32_t>(r.digests.size()));
  for (const NodeStreamOps& d : r.digests) {
    stream_fields(w, d.stream);
    w.u64(d.from);
    w.u64(d.to);
    w.u32(static_cast<uint32_t>(d.ranks.size()));
    for (const auto& [cr, gr] : d.ranks) {
      w.i32(cr);
      w.i32(gr);
    }
    w.u32(static_cast<uint32_t>(d.ops.size()));
    for (const NodeOpValues& op : d.ops) {
      w.u64(op.seq);
      w.u8(op.agree ? 1 : 0);
      if (op.agree) {
        put_record(w, op.rec);
      } else {
        for (size_t i = 0; i < d.ranks.size(); ++i) {
          const bool present = i < op.per_rank.size() && op.per_rank[i].present;
          w.u8(present ? 1 : 0);
          if (present) put_record(w, op.per_rank[i].rec);
        }
      }
    }
  }
  w.u32(static_cast<uint32_t>(r.identities.size()));
  for (const RankIdentity& id : r.identities) identity_fields(w, id);
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
  const uint32_t nd = r.u32();
  // A digest drill-down: stream, range [from, to), rank list, operation list.
  if (!r.fits(nd, kStreamBytes + 2 * sizeof(uint64_t) + 2 * kCountBytes)) return fail("truncated digest drill-down");
  for (uint32_t i = 0; i < nd; ++i) {
    NodeStreamOps d;
    stream_fields(r, d.stream);
    if (std::string why; !comm_size_ok(d.stream.nranks, &why)) return fail(why);
    d.from = r.u64();
    d.to = r.u64();
    const uint32_t nr = r.u32();
    if (!r.fits(nr, 2 * sizeof(int32_t))) return fail("truncated rank list");
    for (uint32_t k = 0; k < nr; ++k) {
      const int cr = r.i32();
      d.ranks.emplace_back(cr, r.i32());
    }
    const uint32_t nops = r.u32();
    if (!r.fits(nops, sizeof(uint64_t) + 1)) return fail("truncated operations");  // seq, agree
    for (uint32_t k = 0; k < nops; ++k) {
      NodeOpValues op;
      op.seq = r.u64();
      op.agree = r.u8() != 0;
      if (op.agree) {
        get_record(r, &op.rec);
      } else {
        if (!r.fits(nr, 1)) return fail("truncated per-rank records");
        for (uint32_t q = 0; q < nr; ++q) {
          NodeOpValues::Value v;
          v.present = r.u8() != 0;
          if (v.present) get_record(r, &v.rec);
          op.per_rank.push_back(v);
        }
      }
      if (!r.ok()) return fail("truncated operation");
      d.ops.push_back(std::move(op));
    }
    rep.digests.push_back(std::move(d));
  }
  const uint32_t ni = r.u32();
  if (!r.fits(ni, kIdentityBytes)) return fail("truncated identities");
  rep.identities.resize(ni);
  for (RankIdentity& id : rep.identities) identity_fields(r, id);
  if (!r.ok()) return fail("truncated report");
  if (!r.at_end()) return fail("trailing bytes after report");
  *out = std::move(rep);
  return true;
}

LeaderInbox collect_reports(const std::vector<Contribution>& got) {
  LeaderInbox in;
  std::map<std::tuple<uint64_t, uint8_t, uint64_t, uint64_t>, DigestDrill> digests;
  for (const Contribution& c : got) {
    NodeReport r;
    std::string why;
    if (!decode_report(c.bytes, &r, &why)) {
      if (in.bad_reports++ == 0) in.first_error = "node-rank " + std::to_string(c.rank) + ": " + why;
      continue;
    }
    for (const RankIdentity& id : r.identities) in.identities[id.global_rank] = id;
    for (obs::Finding& f : r.findings) in.findings.push_back(std::move(f));
    for (const NodeStreamOps& d : r.digests) {
      DigestDrill& dd = digests[{d.stream.comm_hash, d.stream.func, d.from, d.to}];
      dd.stream = d.stream;
      dd.from = d.from;
      dd.to = d.to;
      for (const NodeOpValues& op : d.ops) {
        auto& votes = dd.votes[op.seq];
        for (size_t i = 0; i < d.ranks.size(); ++i) {
          RankVote rv{d.ranks[i].first, d.ranks[i].second, c.rank, op.rec};
          if (!op.agree) {
            if (i >= op.per_rank.size() || !op.per_rank[i].present) continue;
            rv.rec = op.per_rank[i].rec;
          }
          votes.push_back(rv);
        }
      }
    }
  }
  for (auto& [k, d] : digests) in.digests.push_back(std::move(d));
  return in;
}

}  // namespace scout::net
