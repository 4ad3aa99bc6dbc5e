#include "observer/net/wait_summary.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "observer/model/limits.h"
#include "observer/net/summary_merge.h"
#include "observer/net/wire.h"
#include "observer/net/wire_fields.h"

namespace scout::net {

namespace {

using namespace wire;

constexpr uint8_t kSummaryVersion = 2;

// A member's process as a group carries it (its global rank is in the runs, its state and times
// are the group's; encode_summary, decode_summary).
constexpr auto member_proc_fields = [](auto& io, auto& p) {
  fields(io, p.local_rank, p.host, p.pid, p.gpu, p.cuda_dev);
};

// What makes two members interchangeable (MemberGroup): their state without comm rank, process,
// times and ring indexes, as bytes.
std::string state_key(const MemberView& m, uint8_t proc_state) {
  WireWriter w;
  w.u8(proc_state);
  MemberView k = m;
  k.init_ns = 0;
  for (MarkView* mk : {&k.last_enqueued, &k.last_started, &k.last_completed}) mk->ns = 0;
  member_fields(w, k);
  w.var(k.records.size());
  for (shm::RecordSnapshot r : k.records) {
    r.index = 0;
    r.api_ns = r.launch_ns = r.enqueue_ns = r.gpu_start_ns = r.gpu_end_ns = r.complete_ns = 0;
    record_fields(w, r);
  }
  const std::vector<uint8_t>& b = w.bytes();
  return std::string(b.begin(), b.end());
}

// The fields of a group's state that state_key leaves out (times, ring indexes), in wire order:
// they travel as differences from the state table's entry (encode_summary).
std::vector<int64_t*> varying(MemberView& m) {
  std::vector<int64_t*> out = {&m.init_ns, &m.last_enqueued.ns, &m.last_started.ns, &m.last_completed.ns};
  for (shm::RecordSnapshot& r : m.records) {
    out.insert(out.end(), {reinterpret_cast<int64_t*>(&r.index), &r.api_ns, &r.enqueue_ns, &r.gpu_start_ns,
                           &r.gpu_end_ns, &r.complete_ns});
  }
  return out;
}

void merge_comm(CommSummary& a, CommSummary b) {
  CommWaitView& x = a.comm;
  const CommWaitView& y = b.comm;
  x.last_progress_ns = std::max(x.last_progress_ns, y.last_progress_ns);
  if (y.stall_threshold_ns > x.stall_threshold_ns) {
    x.stall_threshold_ns = y.stall_threshold_ns;
    x.stall_gaps = y.stall_gaps;
    x.stall_p99_ns = y.stall_p99_ns;
  }
  if (x.name.empty()) x.name = y.name;
  if (x.nnodes == 0) x.nnodes = y.nnodes;
  std::unordered_map<std::string, size_t> by_state;
  for (size_t i = 0; i < a.groups.size(); ++i)
    by_state.emplace(state_key(a.groups[i].state, a.groups[i].proc_state), i);
  for (MemberGroup& g : b.groups) {
    auto it = by_state.find(state_key(g.state, g.proc_state));
    if (it == by_state.end()) {
      by_state.emplace(state_key(g.state, g.proc_state), a.groups.size());
      a.groups.push_back(std::move(g));
    } else {
      merge_members(a.groups[it->second], std::move(g));
    }
  }
  // A comm rank in two groups (a hostile or inconsistent summary) is expanded once: expand()
  // keeps the first group's claim.
}

bool comm_less(const CommSummary& a, const CommSummary& b) {
  return std::tie(a.comm.comm_hash, a.comm.nranks) < std::tie(b.comm.comm_hash, b.comm.nranks);
}

}  // namespace

std::string state_key(const MemberGroup& g) { return state_key(g.state, g.proc_state); }

WaitSummary summarize(const std::vector<NodeWaits>& nodes) {
  WaitSummary all;
  for (const NodeWaits& n : nodes) merge(all, summarize(n.waits));
  return all;
}

uint64_t WaitSummary::members() const {
  uint64_t n = 0;
  for (const CommSummary& c : comms) {
    for (const MemberGroup& g : c.groups) n += g.count;
  }
  return n;
}

WaitSummary summarize(const WaitSnapshot& w) {
  WaitSummary s;
  for (const CommWaitView& c : w.comms) {
    CommSummary cs;
    cs.comm = c;
    cs.comm.members.clear();
    std::unordered_map<std::string, size_t> by_state;
    std::vector<MemberView> members = c.members;
    std::sort(members.begin(), members.end(),
              [](const MemberView& a, const MemberView& b) { return a.comm_rank < b.comm_rank; });
    for (const MemberView& m : members) {
      if (m.proc < 0 || m.proc >= int(w.procs.size())) continue;
      const ProcView& p = w.procs[size_t(m.proc)];
      const std::string key = state_key(m, p.state);
      auto [it, added] = by_state.try_emplace(key, cs.groups.size());
      if (added) {
        MemberGroup g;
        g.state = m;
        g.state.comm_rank = -1;
        g.state.proc = -1;
        g.proc_state = p.state;
        g.last_event_ns = p.last_event_ns;
        g.gone_ns = p.gone_ns;
        cs.groups.push_back(std::move(g));
      }
      MemberGroup& g = cs.groups[it->second];
      g.runs.push_back(RankRun{m.comm_rank, p.global_rank, 1, 1});
      g.identities.push_back(p);
    }
    for (MemberGroup& g : cs.groups) {
      g.runs = normalize_runs(std::move(g.runs));
      g.count = run_members(g.runs);
      if (g.count > kIdentifiedMembers || g.identities.size() != g.count) g.identities.clear();
    }
    s.comms.push_back(std::move(cs));
  }
  std::sort(s.comms.begin(), s.comms.end(), comm_less);
  return s;
}

void merge(WaitSummary& a, WaitSummary b) {
  a.comms = merge_sorted(std::move(a.comms), std::move(b.comms), comm_less,
                         [](CommSummary& x, CommSummary y) { merge_comm(x, std::move(y)); });
}

WaitSnapshot expand(const WaitSummary& s) {
  WaitSnapshot w;
  std::unordered_map<int, int> proc_of;  // global rank (known ones) -> index into w.procs
  std::vector<bool> identified;
  int unknown = 0;  // members whose global rank no node knew: one process each
  for (const CommSummary& cs : s.comms) {
    CommWaitView c = cs.comm;
    c.members.clear();
    std::vector<char> taken(size_t(std::max(c.nranks, 0)), 0);
    for (const MemberGroup& g : cs.groups) {
      size_t k = 0;  // member index in run order (identities)
      for (const RankRun& r : g.runs) {
        for (int32_t i = 0; i < r.count; ++i, ++k) {
          const int cr = r.comm_rank + i;
          if (cr < 0 || cr >= c.nranks || taken[size_t(cr)]) continue;  // claimed by an earlier group
          taken[size_t(cr)] = 1;
          const int gr = int(int64_t(r.global_rank) + int64_t(i) * r.stride);
          const bool has_id = k < g.identities.size();
          auto [it, added] =
              gr >= 0 ? proc_of.try_emplace(gr, int(w.procs.size())) : std::make_pair(proc_of.end(), true);
          const int index = added ? int(w.procs.size()) : it->second;
          if (added || (has_id && !identified[size_t(index)])) {
            ProcView p;
            if (has_id) {
              p = g.identities[k];
            } else {
              p.host = "";
              p.pid = gr >= 0 ? -(gr + 1) : INT32_MIN + unknown++;  // unique per rank, never a real pid
            }
            p.global_rank = gr;
            p.state = g.proc_state;
            p.last_event_ns = g.last_event_ns;
            p.gone_ns = g.gone_ns;
            if (added) {
              w.procs.push_back(std::move(p));
              identified.push_back(has_id);
            } else {
              w.procs[size_t(index)] = std::move(p);
              identified[size_t(index)] = true;
            }
          }
          MemberView m = g.state;
          m.comm_rank = cr;
          m.proc = index;
          c.members.push_back(std::move(m));
        }
      }
    }
    std::sort(c.members.begin(), c.members.end(),
              [](const MemberView& a, const MemberView& b) { return a.comm_rank < b.comm_rank; });
    w.comms.push_back(std::move(c));
  }
  return w;
}

std::vector<uint8_t> encode_summary(const WaitSummary& s) {
  // The table of distinct states (state_key: without times and ring indexes), each with the times
  // of its first group; every group names its entry and sends its own times as differences from
  // it. 4,096 model-parallel communicators whose ranks wait alike share a handful of entries.
  std::unordered_map<std::string, uint32_t> index;
  std::vector<const MemberGroup*> table;
  std::vector<uint32_t> entry;  // per group, in order
  for (const CommSummary& cs : s.comms) {
    for (const MemberGroup& g : cs.groups) {
      auto [it, added] = index.try_emplace(state_key(g), uint32_t(table.size()));
      if (added) table.push_back(&g);
      entry.push_back(it->second);
    }
  }
  WireWriter w;
  w.u8(kSummaryVersion);
  w.var(table.size());
  for (const MemberGroup* g : table) {
    w.u8(g->proc_state);
    member_fields(w, g->state);
    w.var(g->state.records.size());
    for (const shm::RecordSnapshot& r : g->state.records) put_record(w, r);
  }
  w.var(s.comms.size());
  size_t at = 0;
  for (const CommSummary& cs : s.comms) {
    comm_wait_fields(w, cs.comm);
    w.var(cs.groups.size());
    for (const MemberGroup& g : cs.groups) {
      const uint32_t e = entry[at++];
      w.var(e);
      MemberView mine = g.state, base = table[e]->state;
      const std::vector<int64_t*> x = varying(mine), y = varying(base);
      for (size_t i = 0; i < x.size(); ++i) w.svar(int64_t(uint64_t(*x[i]) - uint64_t(*y[i])));
      put_members(w, g);
      time_field(w, g.last_event_ns);
      time_field(w, g.gone_ns);
      put_identities(w, g, member_proc_fields);
    }
  }
  return w.take();
}

bool decode_summary(std::span<const uint8_t> bytes, WaitSummary* out, std::string* error) {
  auto fail = [&](const std::string& m) {
    if (error) *error = m;
    return false;
  };
  WireReader r(bytes);
  WaitSummary s;
  if (r.u8() != kSummaryVersion) return fail("unknown wait summary version");
  struct Entry {
    uint8_t proc_state = 0;
    MemberView state;
  };
  // An entry: process state, the member fields, a record count.
  static const uint64_t kEntryBytes = min_bytes<MemberView>([](auto& io, auto& v) { member_fields(io, v); }) + 2;
  const uint64_t nt = r.var();
  if (!r.fits(nt, kEntryBytes)) return fail("truncated state table");
  std::vector<Entry> table(nt);
  for (Entry& e : table) {
    e.proc_state = r.u8();
    if (e.proc_state > 2) return fail("unknown process state");
    member_fields(r, e.state);
    const uint64_t nrec = r.var();
    if (!r.fits(nrec, kRecordBytes)) return fail("truncated records");
    e.state.records.resize(nrec);
    for (auto& rec : e.state.records) get_record(r, &rec);
    if (!r.ok()) return fail("truncated state table");
  }
  // Distinct states, and one group per state in a communicator (as summarize and merge make them):
  // a summary merged with itself then keeps its members once.
  {
    std::unordered_map<std::string, int> keys;
    for (const Entry& e : table) {
      if (!keys.emplace(state_key(e.state, e.proc_state), 0).second) return fail("a state twice in the table");
    }
  }
  std::vector<uint64_t> used(table.size(), ~0ull);  // per entry: the communicator that used it last
  const uint64_t nc = r.var();
  if (!r.fits(nc, 8 + 6)) return fail("truncated communicators");  // hash, then a byte per field at least
  uint64_t members = 0;
  for (uint64_t i = 0; i < nc; ++i) {
    CommSummary cs;
    comm_wait_fields(r, cs.comm);
    if (std::string why; !comm_size_ok(cs.comm.nranks, &why)) return fail(why);
    if (!s.comms.empty() && !comm_less(s.comms.back(), cs)) return fail("communicators out of order");
    const uint64_t ng = r.var();
    if (!r.fits(ng, 6)) return fail("truncated groups");
    for (uint64_t k = 0; k < ng; ++k) {
      MemberGroup g;
      const uint64_t e = r.var();
      if (e >= table.size()) return fail("state outside the table");
      if (used[e] == i) return fail("two groups of one state in a communicator");
      used[e] = i;
      g.proc_state = table[e].proc_state;
      g.state = table[e].state;
      const std::vector<int64_t*> x = varying(g.state);
      if (!r.fits(x.size(), 1)) return fail("truncated group");
      for (int64_t* v : x) *v = int64_t(uint64_t(*v) + uint64_t(r.svar()));
      if (const char* why = get_members(r, cs.comm.nranks, &members, &g)) return fail(why);
      time_field(r, g.last_event_ns);
      time_field(r, g.gone_ns);
      if (const char* why = get_identities(r, &g, member_proc_fields)) return fail(why);
      if (!r.ok()) return fail("truncated group");
      cs.groups.push_back(std::move(g));
    }
    s.comms.push_back(std::move(cs));
  }
  if (!r.ok()) return fail("truncated wait summary");
  if (!r.at_end()) return fail("trailing bytes after wait summary");
  *out = std::move(s);
  return true;
}

std::vector<uint8_t> merge_encoded(std::vector<uint8_t> a, std::vector<uint8_t> b, int* bad, std::string* error) {
  return merge_encoded_summaries<WaitSummary>(std::move(a), std::move(b), bad, error, decode_summary, encode_summary);
}

}  // namespace scout::net
