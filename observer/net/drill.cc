#include "observer/net/drill.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "observer/net/wire.h"

namespace scout::net {

namespace {

constexpr uint8_t kReportVersion = 2;
constexpr uint32_t kMaxFindingBytes = 1u << 20;
// Smallest encodings, for the element-count checks of the decoder.
constexpr uint64_t kStreamBytes = 8 + 1 + 4 + 4;

void put_stream(WireWriter& w, const StreamKeyInfo& s) {
  w.u64(s.comm_hash);
  w.u8(s.func);
  w.i32(s.nranks);
  w.str(s.comm_name);
}

void get_stream(WireReader& r, StreamKeyInfo* s) {
  s->comm_hash = r.u64();
  s->func = r.u8();
  s->nranks = r.i32();
  s->comm_name = r.str();
}

// The fields of a record the detectors read (identity, metadata, progress, GPU times,
// fingerprints); buffers, stream, thread and tuning choices do not travel.
// One field in either direction: the same field list (below) writes and reads a message part.
template <typename T>
void field(WireWriter& w, const T& v) {
  w.put(v);
}
template <typename T>
void field(WireReader& r, T& v) {
  v = r.get<T>();
}
void field(WireWriter& w, const bool& v) { w.u8(v ? 1 : 0); }
void field(WireReader& r, bool& v) { v = r.u8() != 0; }
void field(WireWriter& w, const shm::FpStatus& s) { w.u8(static_cast<uint8_t>(s)); }
void field(WireReader& r, shm::FpStatus& s) {
  const uint8_t x = r.u8();
  s = x <= shm::kFpDone ? static_cast<shm::FpStatus>(x) : shm::kFpNone;  // hostile value: none
}
void pad_byte(WireWriter& w) { w.u8(0); }
void pad_byte(WireReader& r) { r.u8(); }

// The fields of a record a drill-down carries, in wire order (140 bytes).
template <typename IO, typename R>
void record_fields(IO& io, R& r) {
  field(io, r.index);
  field(io, r.key);
  field(io, r.kind);
  field(io, r.func);
  field(io, r.datatype);
  field(io, r.api_datatype);
  field(io, r.flags);
  field(io, r.peer);
  field(io, r.count);
  field(io, r.api_count);
  field(io, r.bytes);
  field(io, r.api_ns);
  field(io, r.enqueue_ns);
  field(io, r.state);
  field(io, r.n_channels);
  pad_byte(io);
  field(io, r.ch_started);
  field(io, r.ch_stopped);
  field(io, r.gpu_start_ns);
  field(io, r.gpu_end_ns);
  field(io, r.complete_ns);
  field(io, r.fp_send_status);
  field(io, r.fp_recv_status);
  field(io, r.fp_send);
  field(io, r.fp_recv);
  field(io, r.send_nan);
  field(io, r.send_inf);
  field(io, r.fp_bytes);
  field(io, r.fp_version);
}

void put_record(WireWriter& w, const shm::RecordSnapshot& r) { record_fields(w, r); }
void get_record(WireReader& w, shm::RecordSnapshot* r) { record_fields(w, *r); }

const uint64_t kRecordBytes = [] {
  WireWriter w;
  put_record(w, shm::RecordSnapshot{});
  return uint64_t(w.bytes().size());
}();

template <typename IO, typename M>
void mark_fields(IO& io, M& m) {
  field(io, m.valid);
  field(io, m.cls);
  field(io, m.func);
  field(io, m.seq);
  field(io, m.src);
  field(io, m.dst);
  field(io, m.ns);
}
void put_mark(WireWriter& w, const MarkView& m) { mark_fields(w, m); }
void get_mark(WireReader& r, MarkView* m) { mark_fields(r, *m); }

void put_waits(WireWriter& w, const WaitSnapshot& s) {
  w.u32(static_cast<uint32_t>(s.procs.size()));
  for (const ProcView& p : s.procs) {
    w.i32(p.global_rank);
    w.i32(p.local_rank);
    w.str(p.host);
    w.i32(p.pid);
    w.str(p.gpu);
    w.i32(p.cuda_dev);
    w.u8(p.state);
    w.i64(p.last_event_ns);
    w.i64(p.gone_ns);
  }
  w.u32(static_cast<uint32_t>(s.comms.size()));
  for (const CommWaitView& c : s.comms) {
    w.u64(c.comm_hash);
    w.i32(c.nranks);
    w.str(c.name);
    w.i32(c.nnodes);
    w.i64(c.last_progress_ns);
    w.u32(static_cast<uint32_t>(c.members.size()));
    for (const MemberView& m : c.members) {
      w.i32(m.comm_rank);
      w.i32(m.proc);
      w.i64(m.init_ns);
      w.u8(m.finalized ? 1 : 0);
      for (int f = 0; f < 5; ++f) {
        w.u64(m.issued[f]);
        w.u64(m.started[f]);
        w.u64(m.completed[f]);
      }
      put_mark(w, m.last_enqueued);
      put_mark(w, m.last_started);
      put_mark(w, m.last_completed);
      w.u32(static_cast<uint32_t>(m.records.size()));
      for (const shm::RecordSnapshot& r : m.records) put_record(w, r);
    }
  }
}

bool get_waits(WireReader& r, WaitSnapshot* s, std::string* why) {
  auto fail = [&](const char* m) {
    *why = m;
    return false;
  };
  const uint32_t np = r.u32();
  if (!r.fits(np, 4 + 4 + 4 + 4 + 4 + 4 + 1 + 16)) return fail("truncated processes");
  for (uint32_t i = 0; i < np; ++i) {
    ProcView p;
    p.global_rank = r.i32();
    p.local_rank = r.i32();
    p.host = r.str();
    p.pid = r.i32();
    p.gpu = r.str();
    p.cuda_dev = r.i32();
    p.state = r.u8();
    p.last_event_ns = r.i64();
    p.gone_ns = r.i64();
    s->procs.push_back(std::move(p));
  }
  const uint32_t nc = r.u32();
  if (!r.fits(nc, 8 + 4 + 4 + 4 + 8 + 4)) return fail("truncated communicators");
  for (uint32_t i = 0; i < nc; ++i) {
    CommWaitView c;
    c.comm_hash = r.u64();
    c.nranks = r.i32();
    c.name = r.str();
    c.nnodes = r.i32();
    c.last_progress_ns = r.i64();
    const uint32_t nm = r.u32();
    if (!r.fits(nm, 4 + 4 + 8 + 1 + 120 + 3 * 27 + 4)) return fail("truncated members");
    for (uint32_t k = 0; k < nm; ++k) {
      MemberView m;
      m.comm_rank = r.i32();
      m.proc = r.i32();
      if (m.proc < -1 || m.proc >= int(s->procs.size()) || m.comm_rank < 0 || m.comm_rank >= c.nranks) {
        return fail("member out of range");
      }
      m.init_ns = r.i64();
      m.finalized = r.u8() != 0;
      for (int f = 0; f < 5; ++f) {
        m.issued[f] = r.u64();
        m.started[f] = r.u64();
        m.completed[f] = r.u64();
      }
      get_mark(r, &m.last_enqueued);
      get_mark(r, &m.last_started);
      get_mark(r, &m.last_completed);
      const uint32_t nr = r.u32();
      if (!r.fits(nr, kRecordBytes)) return fail("truncated records");
      m.records.resize(nr);
      for (auto& rec : m.records) get_record(r, &rec);
      c.members.push_back(std::move(m));
    }
    s->comms.push_back(std::move(c));
  }
  return r.ok() || fail("truncated wait snapshot");
}

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
    put_stream(w, d.stream);
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
  put_waits(w, r.waits);
  w.u32(static_cast<uint32_t>(r.identities.size()));
  for (const RankIdentity& id : r.identities) {
    w.i32(id.global_rank);
    w.str(id.host);
    w.i32(id.pid);
    w.str(id.gpu);
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
  if (!r.fits(nf, 4)) return fail("truncated findings");
  for (uint32_t i = 0; i < nf; ++i) {
    const std::string text = r.str();
    if (!r.ok() || text.size() > kMaxFindingBytes) return fail("truncated finding");
    obs::Finding f;
    std::string why;
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      if (!obs::from_json(j, &f, &why)) return fail("bad finding: " + why);
      if (f.dedup_key.empty()) return fail("bad finding: no dedup_key");
    } catch (const std::exception& e) {
      return fail(std::string("bad finding: ") + e.what());
    }
    f.id = 0;
    rep.findings.push_back(std::move(f));
  }
  const uint32_t nd = r.u32();
  if (!r.fits(nd, kStreamBytes + 16 + 8)) return fail("truncated digest drill-down");
  for (uint32_t i = 0; i < nd; ++i) {
    NodeStreamOps d;
    get_stream(r, &d.stream);
    d.from = r.u64();
    d.to = r.u64();
    const uint32_t nr = r.u32();
    if (!r.fits(nr, 8)) return fail("truncated rank list");
    for (uint32_t k = 0; k < nr; ++k) {
      const int cr = r.i32();
      d.ranks.emplace_back(cr, r.i32());
    }
    const uint32_t nops = r.u32();
    if (!r.fits(nops, 9)) return fail("truncated operations");
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
  std::string why;
  if (!get_waits(r, &rep.waits, &why)) return fail(why);
  const uint32_t ni = r.u32();
  if (!r.fits(ni, 16)) return fail("truncated identities");
  for (uint32_t i = 0; i < ni; ++i) {
    RankIdentity id;
    id.global_rank = r.i32();
    id.host = r.str();
    id.pid = r.i32();
    id.gpu = r.str();
    rep.identities.push_back(std::move(id));
  }
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
    for (const ProcView& p : r.waits.procs) {
      if (!in.identities.count(p.global_rank)) in.identities[p.global_rank] = {p.global_rank, p.host, p.pid, p.gpu};
    }
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
    if (!r.waits.empty()) in.waits.push_back({c.rank, std::move(r.waits)});
  }
  for (auto& [k, d] : digests) in.digests.push_back(std::move(d));
  return in;
}

}  // namespace scout::net
