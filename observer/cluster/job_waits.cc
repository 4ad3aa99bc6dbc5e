#include "observer/cluster/job_waits.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <type_traits>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scout::obs {

namespace {

net::MarkView mark_view(const OpMark& m) {
  return {m.valid, uint8_t(m.id.cls), m.id.func, m.id.seq, m.id.src, m.id.dst, m.ns};
}

OpMark mark_of(const net::MarkView& v) {
  return OpMark{OpId{OpClass(v.cls ? 1 : 0), v.func, v.seq, v.src, v.dst}, v.ns, v.valid};
}

ProcState proc_state(uint8_t s) {
  return s == 1 ? ProcState::kExited : s == 2 ? ProcState::kDead : ProcState::kRunning;
}

// Ring indexes of slots built from counters: far above any real one, distinct per operation.
constexpr uint64_t kCounterIndex = 1ull << 62;

}  // namespace

net::WaitSnapshot capture_waits(const Model& m) {
  net::WaitSnapshot w;
  std::map<int, int> proc_index;
  auto proc_of = [&](int id) {
    auto [it, added] = proc_index.try_emplace(id, int(w.procs.size()));
    if (added) {
      const Proc& p = m.proc(id);
      w.procs.push_back(net::ProcView{p.global_rank, p.local_rank, p.host, p.pid, p.gpu, p.cuda_dev, uint8_t(p.state),
                                      p.last_event_ns, p.gone_ns});
    }
    return it->second;
  };
  for (const auto& [key, c] : m.comms()) {
    if (c.finalized()) continue;
    if (c.known_ranks.empty()) continue;
    std::set<OpId> live;
    for (int r : c.known_ranks) {
      for (const auto& [idx, id] : c.ranks[r].inflight) live.insert(id);
    }
    net::CommWaitView cv;
    cv.comm_hash = key.hash;
    cv.nranks = key.nranks;
    cv.name = c.name;
    cv.nnodes = c.nnodes;
    cv.last_progress_ns = c.last_progress_ns;
    for (int r : c.known_ranks) {
      const RankProgress& rp = c.ranks[r];
      net::MemberView mv;
      mv.comm_rank = r;
      mv.proc = proc_of(rp.proc);
      mv.init_ns = rp.init_ns;
      mv.finalized = rp.finalized;
      for (int f = 0; f < shm::kNumNumberedFuncs; ++f) {
        mv.issued[f] = rp.issued[f];
        mv.started[f] = rp.started[f];
        mv.completed[f] = rp.completed[f];
      }
      mv.last_enqueued = mark_view(rp.last_enqueued);
      mv.last_started = mark_view(rp.last_started);
      mv.last_completed = mark_view(rp.last_completed);
      for (const OpId& id : live) {
        auto it = c.ops.find(id);
        if (it == c.ops.end()) continue;
        const OpSlot* s = it->second.slot(it->second.index_of(r));
        if (s && !s->lost) mv.records.push_back(s->rec);
      }
      cv.members.push_back(std::move(mv));
    }
    w.comms.push_back(std::move(cv));
  }
  return w;
}

namespace {

// Hash of a communicator's summary without times: its header's identity and stall rule, and each
// group's state, members and identities.
uint64_t content_hash(const net::CommSummary& cs) {
  XXH64_state_t st;
  XXH64_reset(&st, 0x70b5);
  auto add = [&](const void* p, size_t n) { XXH64_update(&st, p, n); };
  add(&cs.comm.comm_hash, sizeof(cs.comm.comm_hash));
  add(&cs.comm.nranks, sizeof(cs.comm.nranks));
  add(&cs.comm.stall_threshold_ns, sizeof(cs.comm.stall_threshold_ns));
  for (const net::MemberGroup& g : cs.groups) {
    const std::string k = net::state_key(g);
    const uint64_t n = k.size();
    add(&n, sizeof(n));
    add(k.data(), k.size());
    for (const net::RankRun& r : g.runs) add(&r, sizeof(r));
    for (const net::ProcView& p : g.identities) {
      add(p.host.data(), p.host.size());
      add(&p.pid, sizeof(p.pid));
    }
  }
  return XXH64_digest(&st);
}

}  // namespace

void JobWaits::clear() {
  m_ = Model();
  content_.clear();
  proc_of_.clear();
  unknown_ = 0;
}

int JobWaits::proc_for(int global_rank, const net::ProcView* identity, const net::MemberGroup& g, int64_t now_ns) {
  int id = -1;
  auto it = global_rank >= 0 ? proc_of_.find(global_rank) : proc_of_.end();
  if (it != proc_of_.end()) {
    id = it->second;
    // A process first seen without its identity gets it once a group carries it.
    if (identity && m_.proc(id).host.empty() && !identity->host.empty()) {
      Proc& q = m_.proc(id);
      q.host = identity->host;
      q.pid = identity->pid;
      q.gpu = identity->gpu;
      q.local_rank = identity->local_rank;
      q.cuda_dev = identity->cuda_dev;
    }
  } else {
    Proc p;
    p.global_rank = global_rank;
    p.node_rank = -1;
    if (identity) {
      p.local_rank = identity->local_rank;
      p.host = identity->host;
      p.pid = identity->pid;
      p.gpu = identity->gpu;
      p.cuda_dev = identity->cuda_dev;
    } else {
      p.pid = global_rank >= 0 ? -(global_rank + 1) : INT32_MIN + unknown_++;  // unique, never a real pid
    }
    id = m_.upsert_proc(p, now_ns);
    if (global_rank >= 0) proc_of_[global_rank] = id;
  }
  Proc& q = m_.proc(id);
  q.state = proc_state(g.proc_state);
  q.last_event_ns = std::max(q.last_event_ns, g.last_event_ns);
  q.gone_ns = g.gone_ns;
  return id;
}

void JobWaits::build(const net::CommSummary& cs, int64_t now_ns) {
  const net::CommWaitView& cv = cs.comm;
  const CommKey key{cv.comm_hash, cv.nranks};
  m_.comms().erase(key);
  Comm& c = m_.upsert_comm(key, cv.name, cv.nnodes);
  for (const net::MemberGroup& g : cs.groups) {
    const net::MemberView& mv = g.state;
    size_t k = 0;  // member index in run order (identities)
    for (const net::RankRun& run : g.runs) {
      for (int32_t i = 0; i < run.count; ++i, ++k) {
        const int cr = run.comm_rank + i;
        if (cr < 0 || cr >= int(c.ranks.size()) || c.ranks.stored(cr)) continue;  // claimed by an earlier group
        const int gr = int(int64_t(run.global_rank) + int64_t(i) * run.stride);
        const int proc = proc_for(gr, k < g.identities.size() ? &g.identities[k] : nullptr, g, now_ns);
        m_.set_member(c, cr, proc, mv.init_ns, mv.finalized);
        RankProgress& rp = c.ranks[cr];
        for (const shm::RecordSnapshot& r : mv.records) m_.place(c, cr, r, now_ns);
        for (int f = 0; f < shm::kNumNumberedFuncs; ++f) {
          rp.issued[f] = std::max(rp.issued[f], mv.issued[f]);
          rp.started[f] = std::max(rp.started[f], mv.started[f]);
          rp.completed[f] = std::max(rp.completed[f], mv.completed[f]);
        }
        rp.last_enqueued = mark_of(mv.last_enqueued);
        rp.last_started = mark_of(mv.last_started);
        rp.last_completed = mark_of(mv.last_completed);
      }
    }
  }
  // Collectives: members without a record of an operation they have issued (by their counters).
  for (auto& [id, op] : c.ops) {
    if (id.cls != OpClass::kColl || id.func >= shm::kNumNumberedFuncs) continue;
    for (int r : c.known_ranks) {
      RankProgress& rp = c.ranks[r];
      if (op.slot(r) || rp.issued[id.func] <= id.seq) continue;
      OpSlot& s = op.add(r);
      s.rec.index = kCounterIndex + id.seq * shm::kNumNumberedFuncs + id.func;
      s.rec.kind = shm::kKindColl;
      s.rec.func = id.func;
      s.rec.key = id.seq;
      s.rec.state = rp.completed[id.func] > id.seq ? shm::kStateComplete
                    : rp.started[id.func] > id.seq ? shm::kStateRunning
                                                   : shm::kStateEnqueued;
      s.final = s.rec.state == shm::kStateComplete;
      if (!s.final) rp.inflight[s.rec.index] = id;
    }
  }
}

size_t JobWaits::update(const net::WaitSummary& job, int64_t now_ns) {
  size_t built = 0;
  m_.procs().reserve(m_.procs().size() + size_t(job.members()));  // a process per member at most
  std::map<CommKey, uint64_t> seen;
  for (const net::CommSummary& cs : job.comms) {
    const CommKey key{cs.comm.comm_hash, cs.comm.nranks};
    const uint64_t h = content_hash(cs);
    auto old = content_.find(key);
    if (old == content_.end() || old->second != h || !m_.find_comm(key)) {
      build(cs, now_ns);
      ++built;
    }
    seen.emplace(key, h);
    // Last progress: the latest any node saw (records do not say when).
    Comm* c = m_.find_comm(key);
    c->last_progress_ns = cs.comm.last_progress_ns;
  }
  for (auto it = m_.comms().begin(); it != m_.comms().end();) {
    it = seen.count(it->first) ? std::next(it) : m_.comms().erase(it);
  }
  content_ = std::move(seen);
  return built;
}

namespace {

// Feeds values to one XXH64 state.
class Hasher {
 public:
  Hasher() { XXH64_reset(&st_, 0x9a17); }
  template <typename T>
  void add(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    XXH64_update(&st_, &v, sizeof(v));
  }
  void add(const std::string& s) {
    add(uint64_t(s.size()));
    XXH64_update(&st_, s.data(), s.size());
  }
  uint64_t digest() { return XXH64_digest(&st_); }

 private:
  XXH64_state_t st_;
};

}  // namespace

uint64_t waits_signature(const net::WaitSummary& job, int64_t now_ns, int64_t timeout_ns, bool* dead) {
  *dead = false;
  Hasher h;
  h.add(uint64_t(job.comms.size()));
  for (const net::CommSummary& cs : job.comms) {
    h.add(content_hash(cs));
    // Stalled past the timeout: now - last > timeout, written so that another observer's time
    // (any value on the wire) cannot overflow it.
    h.add(cs.comm.last_progress_ns < now_ns - timeout_ns);
    for (const net::MemberGroup& g : cs.groups) *dead |= proc_state(g.proc_state) == ProcState::kDead;
  }
  return h.digest();
}

}  // namespace scout::obs
