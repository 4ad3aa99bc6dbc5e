#include "observer/net/vote_summary.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "observer/model/limits.h"
#include "observer/net/summary_merge.h"
#include "observer/net/wire.h"
#include "observer/net/wire_fields.h"

namespace scout::net {

namespace {

using namespace wire;

constexpr uint8_t kVotesVersion = 1;

// A member's identity as a vote group carries it (encode_votes, decode_votes).
constexpr auto known_fields = [](auto& io, auto& k) { fields(io, k.node, k.id.host, k.id.pid, k.id.gpu); };

// What makes two votes equal: the vote record without its times, as bytes.
std::string vote_key(const shm::RecordSnapshot& r) {
  shm::RecordSnapshot k = r;
  k.api_ns = k.enqueue_ns = k.gpu_start_ns = k.gpu_end_ns = k.complete_ns = 0;
  WireWriter w;
  record_fields(w, k);
  const std::vector<uint8_t>& b = w.bytes();
  return std::string(b.begin(), b.end());
}

// The earliest of two start times (0: unknown) and the latest of two end times.
int64_t earliest(int64_t a, int64_t b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

// `a` takes the earliest starts and latest ends of `a` and `b` (equal votes).
void widen(shm::RecordSnapshot& a, const shm::RecordSnapshot& b) {
  a.api_ns = earliest(a.api_ns, b.api_ns);
  a.enqueue_ns = earliest(a.enqueue_ns, b.enqueue_ns);
  a.gpu_start_ns = earliest(a.gpu_start_ns, b.gpu_start_ns);
  a.gpu_end_ns = std::max(a.gpu_end_ns, b.gpu_end_ns);
  a.complete_ns = std::max(a.complete_ns, b.complete_ns);
}

// Adds group `b` (the same vote) to `a`.
void merge_group(VoteGroup& a, VoteGroup b) {
  widen(a.rec, b.rec);
  merge_members(a, std::move(b));
}

void merge_op(OpVotes& a, OpVotes b) {
  std::unordered_map<std::string, size_t> by_vote;
  for (size_t i = 0; i < a.groups.size(); ++i) by_vote.emplace(vote_key(a.groups[i].rec), i);
  for (VoteGroup& g : b.groups) {
    std::string k = vote_key(g.rec);
    auto it = by_vote.find(k);
    if (it == by_vote.end()) {
      by_vote.emplace(std::move(k), a.groups.size());
      a.groups.push_back(std::move(g));
    } else {
      merge_group(a.groups[it->second], std::move(g));
    }
  }
}

bool op_less(const OpVotes& a, const OpVotes& b) { return a.seq < b.seq; }

bool stream_less(const StreamVotes& a, const StreamVotes& b) {
  return std::tie(a.stream.comm_hash, a.stream.func, a.from, a.to) <
         std::tie(b.stream.comm_hash, b.stream.func, b.from, b.to);
}

void merge_stream(StreamVotes& a, StreamVotes b) {
  if (a.stream.comm_name.empty()) a.stream.comm_name = b.stream.comm_name;
  a.ops = merge_sorted(std::move(a.ops), std::move(b.ops), op_less,
                       [](OpVotes& x, OpVotes y) { merge_op(x, std::move(y)); });
}

}  // namespace

uint64_t VoteSummary::members() const {
  uint64_t n = 0;
  for (const StreamVotes& s : streams) {
    for (const OpVotes& op : s.ops) {
      for (const VoteGroup& g : op.groups) n += g.count;
    }
  }
  return n;
}

shm::RecordSnapshot vote_record(const shm::RecordSnapshot& r) {
  shm::RecordSnapshot v;
  v.key = r.key;
  v.kind = r.kind;
  v.func = r.func;
  v.datatype = r.datatype;
  v.api_datatype = r.api_datatype;
  v.peer = r.peer;
  v.count = r.count;
  v.api_count = r.api_count;
  v.bytes = r.bytes;
  v.state = r.state;
  v.fp_recv_status = r.fp_recv_status;
  v.fp_recv = r.fp_recv;
  v.fp_bytes = r.fp_bytes;
  v.fp_version = r.fp_version;
  v.api_ns = r.api_ns;
  v.enqueue_ns = r.enqueue_ns;
  v.gpu_start_ns = r.gpu_start_ns;
  v.gpu_end_ns = r.gpu_end_ns;
  v.complete_ns = r.complete_ns;
  return v;
}

VoteSummary one_vote(const StreamKeyInfo& stream, uint64_t from, uint64_t to, uint64_t seq, int comm_rank,
                     int global_rank, int node, const RankIdentity& id, const shm::RecordSnapshot& rec) {
  VoteGroup g;
  g.rec = vote_record(rec);
  g.count = 1;
  g.runs.push_back(RankRun{comm_rank, global_rank, 1, 1});
  g.identities.push_back({node, id});
  OpVotes op;
  op.seq = seq;
  op.groups.push_back(std::move(g));
  StreamVotes s;
  s.stream = stream;
  s.from = from;
  s.to = to;
  s.ops.push_back(std::move(op));
  VoteSummary out;
  out.streams.push_back(std::move(s));
  return out;
}

void merge(VoteSummary& a, VoteSummary b) {
  a.streams = merge_sorted(std::move(a.streams), std::move(b.streams), stream_less,
                           [](StreamVotes& x, StreamVotes y) { merge_stream(x, std::move(y)); });
}

std::vector<DigestDrill> expand(const VoteSummary& s, Identities* ids) {
  std::vector<DigestDrill> out;
  for (const StreamVotes& sv : s.streams) {
    DigestDrill d;
    d.stream = sv.stream;
    d.from = sv.from;
    d.to = sv.to;
    for (const OpVotes& op : sv.ops) {
      std::vector<RankVote>& votes = d.votes[op.seq];
      std::vector<char> taken(size_t(std::max(sv.stream.nranks, 0)), 0);
      for (const VoteGroup& g : op.groups) {
        size_t k = 0;  // member index in run order (identities)
        for (const auto& [cr, gr] : run_ranks(g.runs)) {
          const size_t at = k++;
          if (cr < 0 || cr >= sv.stream.nranks || taken[size_t(cr)]) continue;  // an earlier group's claim
          taken[size_t(cr)] = 1;
          RankVote v{cr, gr, -1, g.rec};
          if (at < g.identities.size()) {
            v.node = g.identities[at].node;
            RankIdentity id = g.identities[at].id;
            id.global_rank = gr;
            (*ids)[gr] = std::move(id);
          }
          votes.push_back(std::move(v));
        }
      }
      std::sort(votes.begin(), votes.end(),
                [](const RankVote& a, const RankVote& b) { return a.comm_rank < b.comm_rank; });
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<uint8_t> encode_votes(const VoteSummary& s) {
  WireWriter w;
  w.u8(kVotesVersion);
  w.var(s.streams.size());
  for (const StreamVotes& sv : s.streams) {
    stream_fields(w, sv.stream);
    w.var(sv.from);
    w.var(sv.to);
    w.var(sv.ops.size());
    for (const OpVotes& op : sv.ops) {
      w.var(op.seq);
      w.var(op.groups.size());
      for (const VoteGroup& g : op.groups) {
        put_members(w, g);
        put_record(w, g.rec);
        put_identities(w, g, known_fields);
      }
    }
  }
  return w.take();
}

bool decode_votes(std::span<const uint8_t> bytes, VoteSummary* out, std::string* error) {
  auto fail = [&](const std::string& m) {
    if (error) *error = m;
    return false;
  };
  WireReader r(bytes);
  VoteSummary s;
  if (r.u8() != kVotesVersion) return fail("unknown vote summary version");
  const uint64_t ns = r.var();
  if (!r.fits(ns, kStreamBytes + 3)) return fail("truncated streams");  // then from, to, op count
  uint64_t members = 0;
  for (uint64_t i = 0; i < ns; ++i) {
    StreamVotes sv;
    stream_fields(r, sv.stream);
    if (std::string why; !comm_size_ok(sv.stream.nranks, &why)) return fail(why);
    sv.from = r.var();
    sv.to = r.var();
    if (!s.streams.empty() && !stream_less(s.streams.back(), sv)) return fail("streams out of order");
    const uint64_t nops = r.var();
    if (!r.fits(nops, 2)) return fail("truncated operations");  // seq, group count
    for (uint64_t q = 0; q < nops; ++q) {
      OpVotes op;
      op.seq = r.var();
      if (!sv.ops.empty() && sv.ops.back().seq >= op.seq) return fail("operations out of order");
      const uint64_t ng = r.var();
      if (!r.fits(ng, 3 + kRecordBytes)) return fail("truncated groups");  // count, run count, record, flag
      std::unordered_set<std::string> votes;  // an encoder writes one group per vote (merge_op)
      for (uint64_t k = 0; k < ng; ++k) {
        VoteGroup g;
        if (const char* why = get_members(r, sv.stream.nranks, &members, &g)) return fail(why);
        get_record(r, &g.rec);
        if (const char* why = get_identities(r, &g, known_fields)) return fail(why);
        if (!r.ok()) return fail("truncated group");
        if (!votes.insert(vote_key(g.rec)).second) return fail("two groups of one operation with the same vote");
        op.groups.push_back(std::move(g));
      }
      sv.ops.push_back(std::move(op));
    }
    s.streams.push_back(std::move(sv));
  }
  if (!r.ok()) return fail("truncated vote summary");
  if (!r.at_end()) return fail("trailing bytes after vote summary");
  *out = std::move(s);
  return true;
}

std::vector<uint8_t> merge_encoded_votes(std::vector<uint8_t> a, std::vector<uint8_t> b, int* bad, std::string* error) {
  return merge_encoded_summaries<VoteSummary>(std::move(a), std::move(b), bad, error, decode_votes, encode_votes);
}

}  // namespace scout::net
