#include "observer/cluster/job_waits.h"

#include <algorithm>
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

void merge_waits(const std::vector<net::NodeWaits>& nodes, int64_t now_ns, Model* out) {
  Model& m = *out;
  std::map<CommKey, int64_t> progress;
  for (const net::NodeWaits& nw : nodes) {
    std::vector<int> procs;
    for (const net::ProcView& pv : nw.waits.procs) {
      Proc p;
      p.global_rank = pv.global_rank;
      p.local_rank = pv.local_rank;
      p.host = pv.host;
      p.pid = pv.pid;
      p.gpu = pv.gpu;
      p.cuda_dev = pv.cuda_dev;
      p.node_rank = nw.node;
      const int id = m.upsert_proc(p, now_ns);
      Proc& q = m.proc(id);
      q.state = proc_state(pv.state);
      q.last_event_ns = std::max(q.last_event_ns, pv.last_event_ns);
      q.gone_ns = pv.gone_ns;
      procs.push_back(id);
    }
    for (const net::CommWaitView& cv : nw.waits.comms) {
      const CommKey key{cv.comm_hash, cv.nranks};
      Comm& c = m.upsert_comm(key, cv.name, cv.nnodes);
      auto [pit, first] = progress.try_emplace(key, cv.last_progress_ns);
      if (!first) pit->second = std::max(pit->second, cv.last_progress_ns);
      for (const net::MemberView& mv : cv.members) {
        if (mv.proc < 0 || mv.proc >= int(procs.size()) || mv.comm_rank < 0 || mv.comm_rank >= int(c.ranks.size()))
          continue;
        m.set_member(c, mv.comm_rank, procs[mv.proc], mv.init_ns, mv.finalized);
        RankProgress& rp = c.ranks[mv.comm_rank];
        for (const shm::RecordSnapshot& r : mv.records) m.apply(c, mv.comm_rank, r, now_ns);
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
  for (auto& [key, c] : m.comms()) {
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
    // Last progress: the latest any node saw (records applied above may not say when).
    c.last_progress_ns = progress[key];
  }
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
  void add(const net::MarkView& m) {
    add(m.valid);
    add(m.cls);
    add(m.func);
    add(m.seq);
    add(m.src);
    add(m.dst);
  }
  // A record without its times.
  void add(const shm::RecordSnapshot& r) {
    add(r.index);
    add(r.key);
    add(r.kind);
    add(r.func);
    add(r.datatype);
    add(r.flags);
    add(r.peer);
    add(r.count);
    add(r.state);
    add(r.ch_started);
    add(r.ch_stopped);
  }
  uint64_t digest() { return XXH64_digest(&st_); }

 private:
  XXH64_state_t st_;
};

}  // namespace

uint64_t waits_signature(const std::vector<net::NodeWaits>& nodes, int64_t now_ns, int64_t timeout_ns, bool* dead) {
  *dead = false;
  std::vector<const net::NodeWaits*> order;
  for (const net::NodeWaits& nw : nodes) order.push_back(&nw);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->node < b->node; });
  Hasher h;
  for (const net::NodeWaits* nw : order) {
    h.add(nw->node);
    h.add(uint64_t(nw->waits.procs.size()));
    for (const net::ProcView& p : nw->waits.procs) {
      h.add(p.global_rank);
      h.add(p.host);
      h.add(p.pid);
      h.add(p.state);
      *dead |= proc_state(p.state) == ProcState::kDead;
    }
    h.add(uint64_t(nw->waits.comms.size()));
    for (const net::CommWaitView& c : nw->waits.comms) {
      h.add(c.comm_hash);
      h.add(c.nranks);
      h.add(now_ns - c.last_progress_ns > timeout_ns);
      h.add(uint64_t(c.members.size()));
      for (const net::MemberView& m : c.members) {
        h.add(m.comm_rank);
        h.add(m.proc);
        h.add(m.finalized);
        h.add(m.issued);
        h.add(m.started);
        h.add(m.completed);
        h.add(m.last_enqueued);
        h.add(m.last_started);
        h.add(m.last_completed);
        h.add(uint64_t(m.records.size()));
        for (const shm::RecordSnapshot& r : m.records) h.add(r);
      }
    }
  }
  return h.digest();
}

}  // namespace scout::obs
