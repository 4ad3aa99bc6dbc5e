#include "observer/net/drill.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>
#include <type_traits>

#include "observer/model/limits.h"
#include "observer/net/wire.h"

namespace scout::net {

namespace {

constexpr uint8_t kReportVersion = 4;
constexpr uint32_t kMaxFindingBytes = 1u << 20;

// Every message part below has ONE field list, a function template over the direction: called
// with a WireWriter it encodes, with a WireReader it decodes, so the two cannot drift apart.
// Variable-length parts (lists) are encoded by the callers as a u32 count and the elements.
// Integers travel as variable-length integers (field), times as differences (time_field),
// hashes in their fixed width (hash_field).
template <typename T>
void field(WireWriter& w, const T& v) {
  if constexpr (std::is_signed_v<T>) {
    w.svar(int64_t(v));
  } else {
    w.var(uint64_t(v));
  }
}
template <typename T>
void field(WireReader& r, T& v) {
  if constexpr (std::is_signed_v<T>) {
    v = T(r.svar());
  } else {
    v = T(r.var());
  }
}
void time_field(WireWriter& w, const int64_t& t) { w.time(t); }
void time_field(WireReader& r, int64_t& t) { t = r.time(); }
void hash_field(WireWriter& w, const uint64_t& v) { w.u64(v); }
void hash_field(WireReader& r, uint64_t& v) { v = r.u64(); }
void field(WireWriter& w, const bool& v) { w.u8(v ? 1 : 0); }
void field(WireReader& r, bool& v) { v = r.u8() != 0; }
void field(WireWriter& w, const std::string& s) { w.str(s); }
void field(WireReader& r, std::string& s) { s = r.str(); }
void field(WireWriter& w, const shm::FpStatus& s) { w.u8(static_cast<uint8_t>(s)); }
void field(WireReader& r, shm::FpStatus& s) {
  const uint8_t x = r.u8();
  s = x <= shm::kFpDone ? static_cast<shm::FpStatus>(x) : shm::kFpNone;  // hostile value: none
}
void pad_byte(WireWriter& w) { w.u8(0); }
void pad_byte(WireReader& r) { r.u8(); }

// Smallest encoding of the fixed part of T (strings empty, lists empty): the element size the
// decoder checks a count against before reading that many.
template <typename T, typename Fields>
uint64_t min_bytes(Fields fields) {
  WireWriter w;
  T v{};
  fields(w, v);
  return w.bytes().size();
}

template <typename IO, typename S>
void stream_fields(IO& io, S& s) {
  hash_field(io, s.comm_hash);
  field(io, s.func);
  field(io, s.nranks);
  field(io, s.comm_name);
}

// The fields of a record a drill-down carries (identity, metadata, progress, GPU times,
// fingerprints), in wire order; buffers, stream, thread and tuning choices do not travel.
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
  time_field(io, r.api_ns);
  time_field(io, r.enqueue_ns);
  field(io, r.state);
  field(io, r.n_channels);
  pad_byte(io);
  field(io, r.ch_started);
  field(io, r.ch_stopped);
  time_field(io, r.gpu_start_ns);
  time_field(io, r.gpu_end_ns);
  time_field(io, r.complete_ns);
  field(io, r.fp_send_status);
  field(io, r.fp_recv_status);
  hash_field(io, r.fp_send);
  hash_field(io, r.fp_recv);
  field(io, r.send_nan);
  field(io, r.send_inf);
  field(io, r.fp_bytes);
  field(io, r.fp_version);
}

template <typename IO, typename M>
void mark_fields(IO& io, M& m) {
  field(io, m.valid);
  field(io, m.cls);
  field(io, m.func);
  field(io, m.seq);
  field(io, m.src);
  field(io, m.dst);
  time_field(io, m.ns);
}

template <typename IO, typename P>
void proc_fields(IO& io, P& p) {
  field(io, p.global_rank);
  field(io, p.local_rank);
  field(io, p.host);
  field(io, p.pid);
  field(io, p.gpu);
  field(io, p.cuda_dev);
  field(io, p.state);
  time_field(io, p.last_event_ns);
  time_field(io, p.gone_ns);
}

// A communicator of a wait snapshot, without its member list.
template <typename IO, typename C>
void comm_wait_fields(IO& io, C& c) {
  hash_field(io, c.comm_hash);
  field(io, c.nranks);
  field(io, c.name);
  field(io, c.nnodes);
  time_field(io, c.last_progress_ns);
  field(io, c.stall_threshold_ns);
  field(io, c.stall_gaps);
  field(io, c.stall_p99_ns);
}

// The identity of a member (checked by the decoder before the rest is read).
template <typename IO, typename M>
void member_id_fields(IO& io, M& m) {
  field(io, m.comm_rank);
  field(io, m.proc);
}

// A member after its identity, without its record list.
template <typename IO, typename M>
void member_fields(IO& io, M& m) {
  time_field(io, m.init_ns);
  field(io, m.finalized);
  for (size_t f = 0; f < std::size(m.issued); ++f) {
    field(io, m.issued[f]);
    field(io, m.started[f]);
    field(io, m.completed[f]);
  }
  mark_fields(io, m.last_enqueued);
  mark_fields(io, m.last_started);
  mark_fields(io, m.last_completed);
}

template <typename IO, typename I>
void identity_fields(IO& io, I& id) {
  field(io, id.global_rank);
  field(io, id.host);
  field(io, id.pid);
  field(io, id.gpu);
}

// Field lists as callables, for min_bytes and the list helpers.
#define SCOUT_FIELDS_FN(fields) [](auto& io, auto& v) { fields(io, v); }

constexpr uint64_t kCountBytes = 4;  // a list's u32 element count
const uint64_t kStreamBytes = min_bytes<StreamKeyInfo>(SCOUT_FIELDS_FN(stream_fields));
const uint64_t kRecordBytes = min_bytes<shm::RecordSnapshot>(SCOUT_FIELDS_FN(record_fields));
const uint64_t kProcBytes = min_bytes<ProcView>(SCOUT_FIELDS_FN(proc_fields));
const uint64_t kCommWaitBytes = min_bytes<CommWaitView>(SCOUT_FIELDS_FN(comm_wait_fields)) + kCountBytes;
const uint64_t kMemberBytes = min_bytes<MemberView>(SCOUT_FIELDS_FN(member_id_fields)) +
                              min_bytes<MemberView>(SCOUT_FIELDS_FN(member_fields)) + kCountBytes;
const uint64_t kIdentityBytes = min_bytes<RankIdentity>(SCOUT_FIELDS_FN(identity_fields));
#undef SCOUT_FIELDS_FN

void put_record(WireWriter& w, const shm::RecordSnapshot& r) { record_fields(w, r); }
void get_record(WireReader& r, shm::RecordSnapshot* rec) { record_fields(r, *rec); }

void put_waits(WireWriter& w, const WaitSnapshot& s) {
  w.u32(static_cast<uint32_t>(s.procs.size()));
  for (const ProcView& p : s.procs) proc_fields(w, p);
  w.u32(static_cast<uint32_t>(s.comms.size()));
  for (const CommWaitView& c : s.comms) {
    comm_wait_fields(w, c);
    w.u32(static_cast<uint32_t>(c.members.size()));
    for (const MemberView& m : c.members) {
      member_id_fields(w, m);
      member_fields(w, m);
      w.u32(static_cast<uint32_t>(m.records.size()));
      for (const shm::RecordSnapshot& r : m.records) put_record(w, r);
    }
  }
}

// A communicator size another observer claims: refused outside [0, obs::kMaxCommRanks] (each
// rank costs state where the leader judges it; observer/model/limits.h).
bool comm_size_ok(int nranks, std::string* why) {
  if (nranks >= 0 && nranks <= obs::kMaxCommRanks) return true;
  *why = "communicator of " + std::to_string(nranks) + " ranks outside 0.." + std::to_string(obs::kMaxCommRanks);
  return false;
}

bool get_waits(WireReader& r, WaitSnapshot* s, std::string* why) {
  auto fail = [&](const char* m) {
    *why = m;
    return false;
  };
  const uint32_t np = r.u32();
  if (!r.fits(np, kProcBytes)) return fail("truncated processes");
  s->procs.resize(np);
  for (ProcView& p : s->procs) proc_fields(r, p);
  const uint32_t nc = r.u32();
  if (!r.fits(nc, kCommWaitBytes)) return fail("truncated communicators");
  int64_t rank_slots = 0;
  for (uint32_t i = 0; i < nc; ++i) {
    CommWaitView c;
    comm_wait_fields(r, c);
    if (!comm_size_ok(c.nranks, why)) return false;
    if ((rank_slots += c.nranks) > obs::kMaxRankSlots) return fail("communicators beyond the rank-slot bound");
    const uint32_t nm = r.u32();
    if (!r.fits(nm, kMemberBytes)) return fail("truncated members");
    for (uint32_t k = 0; k < nm; ++k) {
      MemberView m;
      member_id_fields(r, m);
      if (m.proc < -1 || m.proc >= int(s->procs.size()) || m.comm_rank < 0 || m.comm_rank >= c.nranks) {
        return fail("member out of range");
      }
      member_fields(r, m);
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
  put_waits(w, r.waits);
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
  std::string why;
  if (!get_waits(r, &rep.waits, &why)) return fail(why);
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
