// The field lists of the observers' drill-down messages (docs/observer-network.md, "Drill-down"):
// every part has ONE list, a function template over the direction: called with a WireWriter it
// encodes, with a WireReader it decodes, so the two cannot drift apart. Shared by the NodeReport
// (observer/net/drill.cc), the wait summary (observer/net/wait_summary.cc) and the vote summary
// (observer/net/vote_summary.cc). Variable-length parts (lists) are encoded by the callers as a
// count and the elements. Integers travel as variable-length integers (field), times as
// differences (time_field), hashes in their fixed width (hash_field). The members of a summary's
// group (MemberGroup, VoteGroup) travel as a count and runs of ranks (put_members), then, while
// the group is small, one identity per member (put_identities).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "common/segment_reader.h"
#include "observer/model/limits.h"
#include "observer/net/drill.h"
#include "observer/net/local_view.h"
#include "observer/net/rank_runs.h"
#include "observer/net/wire.h"

namespace scout::net::wire {

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
inline void time_field(WireWriter& w, const int64_t& t) { w.time(t); }
inline void time_field(WireReader& r, int64_t& t) { t = r.time(); }
inline void hash_field(WireWriter& w, const uint64_t& v) { w.u64(v); }
inline void hash_field(WireReader& r, uint64_t& v) { v = r.u64(); }
inline void field(WireWriter& w, const bool& v) { w.u8(v ? 1 : 0); }
inline void field(WireReader& r, bool& v) { v = r.u8() != 0; }
inline void field(WireWriter& w, const std::string& s) { w.str(s); }
inline void field(WireReader& r, std::string& s) { s = r.str(); }
inline void field(WireWriter& w, const shm::FpStatus& s) { w.u8(static_cast<uint8_t>(s)); }
inline void field(WireReader& r, shm::FpStatus& s) {
  const uint8_t x = r.u8();
  s = x <= shm::kFpDone ? static_cast<shm::FpStatus>(x) : shm::kFpNone;  // hostile value: none
}
inline void pad_byte(WireWriter& w) { w.u8(0); }
inline void pad_byte(WireReader& r) { r.u8(); }

// Several fields of one kind in a row, in the order given (a fold over the comma operator is
// evaluated left to right).
template <typename IO, typename... T>
void fields(IO& io, T&... v) {
  (field(io, v), ...);
}
template <typename IO, typename... T>
void time_fields(IO& io, T&... t) {
  (time_field(io, t), ...);
}

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
  fields(io, s.func, s.nranks, s.comm_name);
}

// The fields of a record a drill-down carries (identity, metadata, progress, GPU times,
// fingerprints), in wire order; buffers, stream, thread and tuning choices do not travel.
template <typename IO, typename R>
void record_fields(IO& io, R& r) {
  fields(io, r.index, r.key, r.kind, r.func, r.datatype, r.api_datatype, r.flags, r.peer, r.count, r.api_count,
         r.bytes);
  time_fields(io, r.api_ns, r.enqueue_ns);
  fields(io, r.state, r.n_channels);
  pad_byte(io);
  fields(io, r.ch_started, r.ch_stopped);
  time_fields(io, r.gpu_start_ns, r.gpu_end_ns, r.complete_ns);
  fields(io, r.fp_send_status, r.fp_recv_status);
  hash_field(io, r.fp_send);
  hash_field(io, r.fp_recv);
  fields(io, r.send_nan, r.send_inf, r.fp_bytes, r.fp_version);
}

template <typename IO, typename M>
void mark_fields(IO& io, M& m) {
  fields(io, m.valid, m.cls, m.func, m.seq, m.src, m.dst);
  time_field(io, m.ns);
}

template <typename IO, typename P>
void proc_fields(IO& io, P& p) {
  fields(io, p.global_rank, p.local_rank, p.host, p.pid, p.gpu, p.cuda_dev, p.state);
  time_fields(io, p.last_event_ns, p.gone_ns);
}

// A communicator of a wait snapshot, without its member list.
template <typename IO, typename C>
void comm_wait_fields(IO& io, C& c) {
  hash_field(io, c.comm_hash);
  fields(io, c.nranks, c.name, c.nnodes);
  time_field(io, c.last_progress_ns);
  fields(io, c.stall_threshold_ns, c.stall_gaps, c.stall_p99_ns);
}

// The identity of a member (checked by the decoder before the rest is read).
template <typename IO, typename M>
void member_id_fields(IO& io, M& m) {
  fields(io, m.comm_rank, m.proc);
}

// A member after its identity, without its record list.
template <typename IO, typename M>
void member_fields(IO& io, M& m) {
  time_field(io, m.init_ns);
  field(io, m.finalized);
  for (size_t f = 0; f < std::size(m.issued); ++f) fields(io, m.issued[f], m.started[f], m.completed[f]);
  mark_fields(io, m.last_enqueued);
  mark_fields(io, m.last_started);
  mark_fields(io, m.last_completed);
}

template <typename IO, typename I>
void identity_fields(IO& io, I& id) {
  fields(io, id.global_rank, id.host, id.pid, id.gpu);
}

// Field lists as callables, for min_bytes and the list helpers.
#define SCOUT_FIELDS_FN(fields) [](auto& io, auto& v) { fields(io, v); }

inline constexpr uint64_t kCountBytes = 4;  // a list's u32 element count
inline const uint64_t kStreamBytes = min_bytes<StreamKeyInfo>(SCOUT_FIELDS_FN(stream_fields));
inline const uint64_t kRecordBytes = min_bytes<shm::RecordSnapshot>(SCOUT_FIELDS_FN(record_fields));
inline const uint64_t kProcBytes = min_bytes<ProcView>(SCOUT_FIELDS_FN(proc_fields));
inline const uint64_t kCommWaitBytes = min_bytes<CommWaitView>(SCOUT_FIELDS_FN(comm_wait_fields)) + kCountBytes;
inline const uint64_t kMemberBytes = min_bytes<MemberView>(SCOUT_FIELDS_FN(member_id_fields)) +
                                     min_bytes<MemberView>(SCOUT_FIELDS_FN(member_fields)) + kCountBytes;
inline const uint64_t kIdentityBytes = min_bytes<RankIdentity>(SCOUT_FIELDS_FN(identity_fields));
#undef SCOUT_FIELDS_FN

inline void put_record(WireWriter& w, const shm::RecordSnapshot& r) { record_fields(w, r); }
inline void get_record(WireReader& r, shm::RecordSnapshot* rec) { record_fields(r, *rec); }

// A communicator size another observer claims: false with *why outside [0, obs::kMaxCommRanks]
// (each rank costs state where the leader judges it; observer/model/limits.h).
inline bool comm_size_ok(int nranks, std::string* why) {
  if (nranks >= 0 && nranks <= obs::kMaxCommRanks) return true;
  *why = "communicator of " + std::to_string(nranks) + " ranks outside 0.." + std::to_string(obs::kMaxCommRanks);
  return false;
}

template <typename IO, typename R>
void run_fields(IO& io, R& r) {
  fields(io, r.comm_rank, r.global_rank, r.count, r.stride);
}

// A group's members (Group: `count` and `runs`): the count, the run count and the runs.
template <class Group>
void put_members(WireWriter& w, const Group& g) {
  w.var(g.count);
  w.var(g.runs.size());
  for (const RankRun& r : g.runs) run_fields(w, r);
}

// Reads what put_members wrote into `g`'s `count` and `runs`, checked against its communicator of
// `nranks` ranks: the runs ascending, disjoint and inside it, holding `count` members, and
// `*members` (the message's members so far, `count` added) within obs::kMaxRankSlots. Returns
// null, or what is wrong ("truncated runs", "run out of range", "group count differs from its
// runs", "members beyond the rank-slot bound").
template <class Group>
const char* get_members(WireReader& r, int nranks, uint64_t* members, Group* g) {
  g->count = uint32_t(std::min<uint64_t>(r.var(), UINT32_MAX));
  const uint64_t nr = r.var();
  if (!r.fits(nr, 4)) return "truncated runs";
  uint64_t in_runs = 0;
  int64_t end = 0;
  for (uint64_t j = 0; j < nr; ++j) {
    RankRun run;
    run_fields(r, run);
    if (run.comm_rank < end || run.count < 1 || run_end(run) > nranks) return "run out of range";
    end = run_end(run);
    in_runs += uint64_t(run.count);
    g->runs.push_back(run);
  }
  if (in_runs != g->count) return "group count differs from its runs";
  if ((*members += g->count) > uint64_t(obs::kMaxRankSlots)) return "members beyond the rank-slot bound";
  return nullptr;
}

// A group's identities (Group: `identities`, one per member or none): a byte (1: they follow,
// 0: none), then each identity's fields as `id_fields(io, identity)` lists them.
template <class Group, class IdFields>
void put_identities(WireWriter& w, const Group& g, IdFields id_fields) {
  w.u8(g.identities.empty() ? 0 : 1);
  for (const auto& id : g.identities) id_fields(w, id);
}

// Reads what put_identities wrote into `g->identities` (`g->count` read before). Returns null, or
// "identities of a large group" when they are announced for more than kIdentifiedMembers members
// (or the byte is neither 0 nor 1).
template <class Group, class IdFields>
const char* get_identities(WireReader& r, Group* g, IdFields id_fields) {
  const uint8_t has_ids = r.u8();
  if (has_ids > 1 || (has_ids && g->count > kIdentifiedMembers)) return "identities of a large group";
  if (has_ids) {
    g->identities.resize(g->count);
    for (auto& id : g->identities) id_fields(r, id);
  }
  return nullptr;
}

}  // namespace scout::net::wire
