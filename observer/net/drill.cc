#include "observer/net/drill.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "observer/net/wire.h"

namespace scout::net {

namespace {

constexpr uint8_t kReportVersion = 1;
constexpr uint32_t kMaxFindingBytes = 1u << 20;

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

obs::Suspect suspect_of(int global_rank, int comm_rank, const Identities& ids) {
  obs::Suspect s;
  s.global_rank = global_rank;
  s.comm_rank = comm_rank;
  if (auto it = ids.find(global_rank); it != ids.end()) {
    s.host = it->second.host;
    s.pid = it->second.pid;
    s.gpu = it->second.gpu;
  }
  return s;
}

std::string rank_words(const std::vector<obs::Suspect>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += "rank " + std::to_string(s[i].global_rank);
    if (!s[i].host.empty()) out += " (" + s[i].host + (s[i].pid ? ", pid " + std::to_string(s[i].pid) : "") + ")";
  }
  return out;
}

std::string rank_key(const std::vector<obs::Suspect>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ",") + std::to_string(x.global_rank);
  return out;
}

obs::Finding base_finding(const StreamKeyInfo& st, uint64_t seq, int64_t now_ns) {
  obs::Finding f;
  f.comm_hash = st.comm_hash;
  f.comm_name = st.comm_name;
  f.comm_nranks = st.nranks;
  f.key = obs::OpKey{func_name(st.func), seq};
  f.first_seen_ns = now_ns;
  f.last_seen_ns = now_ns;
  return f;
}

// Consensus over one field of the votes of one operation. Returns nothing when every vote
// agrees. `value(v)` == 0 means "no vote" (e.g. no fingerprint).
template <typename F>
std::optional<obs::Finding> decide(const std::vector<RankVote>& votes, F value, obs::FindingKind kind,
                                   const char* field, const StreamKeyInfo& st, uint64_t seq,
                                   const Identities& ids, int64_t now_ns) {
  std::map<uint64_t, std::vector<const RankVote*>> groups;
  for (const RankVote& v : votes) {
    if (value(v) != 0) groups[value(v)].push_back(&v);
  }
  if (groups.size() <= 1) return std::nullopt;
  const int nranks = std::max<int>(st.nranks, static_cast<int>(votes.size()));
  const std::vector<const RankVote*>* majority = nullptr;
  uint64_t majority_value = 0;
  for (const auto& [val, g] : groups) {
    if (2 * static_cast<int>(g.size()) > nranks) {
      majority = &g;
      majority_value = val;
    }
  }
  obs::Finding f = base_finding(st, seq, now_ns);
  f.kind = kind;
  nlohmann::json jgroups = nlohmann::json::array();
  for (const auto& [val, g] : groups) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankVote* v : g) ranks.push_back(v->global_rank);
    jgroups.push_back({{"value", obs::hex64(val)}, {"ranks", ranks}});
  }
  f.evidence = {{"source", "cross-node drill-down"}, {"field", field}, {"seq", seq},
                {"groups", jgroups}, {"ranks_reporting", votes.size()}, {"nranks", st.nranks}};
  const std::string what = std::string(field) == "metadata" ? "metadata (func, datatype, count, root, op)"
                                                             : "received data (fingerprint)";
  const std::string op = func_name(st.func) + " #" + std::to_string(seq) + " of " +
                         (st.comm_name.empty() ? obs::hex64(st.comm_hash) : st.comm_name);
  if (majority) {
    f.verdict = obs::Verdict::kAttributed;
    for (const auto& [val, g] : groups) {
      if (val == majority_value) continue;
      for (const RankVote* v : g) f.suspects.push_back(suspect_of(v->global_rank, v->comm_rank, ids));
    }
    std::sort(f.suspects.begin(), f.suspects.end(),
              [](const obs::Suspect& a, const obs::Suspect& b) { return a.global_rank < b.global_rank; });
    f.summary = rank_words(f.suspects) + " disagree" + (f.suspects.size() == 1 ? "s" : "") +
                " with the majority (" + std::to_string(majority->size()) + " of " +
                std::to_string(nranks) + " ranks) on the " + what + " of " + op;
    f.evidence["majority"] = obs::hex64(majority_value);
  } else {
    f.verdict = obs::Verdict::kInconclusive;
    f.summary = "ranks disagree on the " + what + " of " + op + " without a strict majority (" +
                std::to_string(groups.size()) + " different values)";
  }
  f.dedup_key = std::string("net:") + obs::to_string(kind) + ":" + obs::hex64(st.comm_hash) + ":" +
                std::to_string(st.func) + ":" +
                (majority ? rank_key(f.suspects) : "inconclusive:" + std::to_string(seq));
  return f;
}

}  // namespace

std::string func_name(uint8_t func) {
  static const char* const kNames[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
  return func < 5 ? kNames[func] : "func" + std::to_string(func);
}

std::vector<uint8_t> encode_report(const NodeReport& r) {
  WireWriter w;
  w.u8(kReportVersion);
  w.u32(static_cast<uint32_t>(r.findings.size()));
  for (const obs::Finding& f : r.findings) {
    nlohmann::json j = obs::to_json(f);
    j["dedup_key"] = f.dedup_key;
    w.str(j.dump());
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
        w.u64(op.meta);
        w.u64(op.fp);
      } else {
        for (size_t i = 0; i < d.ranks.size(); ++i) {
          const NodeOpValues::Value v = i < op.per_rank.size() ? op.per_rank[i] : NodeOpValues::Value{};
          w.u8(v.present ? 1 : 0);
          w.u64(v.meta);
          w.u64(v.fp);
        }
      }
    }
  }
  w.u32(static_cast<uint32_t>(r.stalls.size()));
  for (const NodeStall& s : r.stalls) {
    put_stream(w, s.stream);
    w.u64(s.completed);
    w.u32(static_cast<uint32_t>(s.ranks.size()));
    for (const RankProgressView& p : s.ranks) {
      w.i32(p.comm_rank);
      w.i32(p.global_rank);
      w.u64(p.enqueued);
      w.u64(p.started);
      w.u64(p.completed);
      w.i64(p.last_event_ns);
    }
  }
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
      if (!obs::from_json(nlohmann::json::parse(text), &f, &why)) return fail("bad finding: " + why);
    } catch (const std::exception& e) {
      return fail(std::string("bad finding: ") + e.what());
    }
    f.id = 0;
    rep.findings.push_back(std::move(f));
  }
  const uint32_t nd = r.u32();
  if (!r.fits(nd, 13 + 4 + 16 + 8)) return fail("truncated digest drill-down");
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
        op.meta = r.u64();
        op.fp = r.u64();
      } else {
        if (!r.fits(nr, 17)) return fail("truncated per-rank values");
        for (uint32_t q = 0; q < nr; ++q) {
          NodeOpValues::Value v;
          v.present = r.u8() != 0;
          v.meta = r.u64();
          v.fp = r.u64();
          op.per_rank.push_back(v);
        }
      }
      if (!r.ok()) return fail("truncated operation");
      d.ops.push_back(std::move(op));
    }
    rep.digests.push_back(std::move(d));
  }
  const uint32_t ns = r.u32();
  if (!r.fits(ns, 13 + 8 + 4)) return fail("truncated stall drill-down");
  for (uint32_t i = 0; i < ns; ++i) {
    NodeStall s;
    get_stream(r, &s.stream);
    s.completed = r.u64();
    const uint32_t nr = r.u32();
    if (!r.fits(nr, 40)) return fail("truncated stall ranks");
    for (uint32_t k = 0; k < nr; ++k) {
      RankProgressView p;
      p.comm_rank = r.i32();
      p.global_rank = r.i32();
      p.enqueued = r.u64();
      p.started = r.u64();
      p.completed = r.u64();
      p.last_event_ns = r.i64();
      s.ranks.push_back(p);
    }
    rep.stalls.push_back(std::move(s));
  }
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
  std::map<std::pair<uint64_t, uint8_t>, StallDrill> stalls;
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
          RankVote rv{d.ranks[i].first, d.ranks[i].second, c.rank, op.meta, op.fp};
          if (!op.agree) {
            if (i >= op.per_rank.size() || !op.per_rank[i].present) continue;
            rv.meta = op.per_rank[i].meta;
            rv.fp = op.per_rank[i].fp;
          }
          votes.push_back(rv);
        }
      }
    }
    for (const NodeStall& s : r.stalls) {
      StallDrill& sd = stalls[{s.stream.comm_hash, s.stream.func}];
      sd.stream = s.stream;
      sd.completed = s.completed;
      for (const RankProgressView& p : s.ranks) sd.ranks.emplace_back(c.rank, p);
    }
  }
  for (auto& [k, d] : digests) in.digests.push_back(std::move(d));
  for (auto& [k, s] : stalls) in.stalls.push_back(std::move(s));
  return in;
}

std::vector<obs::Finding> MajorityJudge::judge_digest(const DigestDrill& d, const Identities& ids,
                                                      int64_t now_ns) {
  for (const auto& [seq, votes] : d.votes) {
    if (auto f = decide(votes, [](const RankVote& v) { return v.meta; }, obs::FindingKind::kDesync,
                        "metadata", d.stream, seq, ids, now_ns)) {
      return {*f};
    }
    if (auto f = decide(votes, [](const RankVote& v) { return v.fp; }, obs::FindingKind::kSdc,
                        "fingerprint", d.stream, seq, ids, now_ns)) {
      return {*f};
    }
  }
  return {};
}

std::vector<obs::Finding> MajorityJudge::judge_stall(const StallDrill& d, const Identities& ids,
                                                     int64_t now_ns) {
  const uint64_t next = d.completed;  // the operation nobody completed
  std::vector<const std::pair<int, RankProgressView>*> absent, inside;
  for (const auto& e : d.ranks) {
    (e.second.enqueued <= next ? absent : inside).push_back(&e);
  }
  if (inside.empty()) return {};  // nobody waits: idle, not hung
  obs::Finding f = base_finding(d.stream, next, now_ns);
  f.kind = obs::FindingKind::kHang;
  int64_t since = 0;
  for (const auto* e : inside) since = std::max(since, e->second.last_event_ns);
  const std::string op = func_name(d.stream.func) + " #" + std::to_string(next) + " of " +
                         (d.stream.comm_name.empty() ? obs::hex64(d.stream.comm_hash) : d.stream.comm_name);
  nlohmann::json waiting = nlohmann::json::array(), missing = nlohmann::json::array();
  for (const auto* e : inside) waiting.push_back(e->second.global_rank);
  for (const auto* e : absent) missing.push_back(e->second.global_rank);
  f.evidence = {{"source", "cross-node drill-down"}, {"seq", next}, {"waiting", waiting},
                {"absent", missing}, {"ranks_reporting", d.ranks.size()}, {"nranks", d.stream.nranks}};
  if (!absent.empty()) {
    f.verdict = obs::Verdict::kAttributed;
    f.evidence["class"] = "absent rank";
    for (const auto* e : absent) f.suspects.push_back(suspect_of(e->second.global_rank, e->second.comm_rank, ids));
    std::sort(f.suspects.begin(), f.suspects.end(),
              [](const obs::Suspect& a, const obs::Suspect& b) { return a.global_rank < b.global_rank; });
    f.summary = rank_words(f.suspects) + " never entered " + op + "; " + std::to_string(inside.size()) +
                " rank" + (inside.size() == 1 ? "" : "s") + " wait in it";
  } else {
    f.verdict = obs::Verdict::kInconclusive;
    f.evidence["class"] = "stuck in the collective";
    f.summary = "every reporting rank entered " + op + " and none completed it";
  }
  if (static_cast<int>(d.ranks.size()) < d.stream.nranks) {
    f.summary += " (" + std::to_string(d.ranks.size()) + " of " + std::to_string(d.stream.nranks) +
                 " ranks reported)";
  }
  f.dedup_key = "net:hang:" + obs::hex64(d.stream.comm_hash) + ":" + std::to_string(d.stream.func) + ":" +
                std::to_string(next);
  return {f};
}

}  // namespace scout::net
