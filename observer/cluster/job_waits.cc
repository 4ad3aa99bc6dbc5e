#include "observer/cluster/job_waits.h"

#include <algorithm>
#include <map>
#include <set>

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

}  // namespace scout::obs
