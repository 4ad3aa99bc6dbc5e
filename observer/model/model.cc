#include "observer/model/model.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "common/names.h"

namespace scout::obs {

using namespace scout::shm;

namespace {
// Adds a call to the process's program-order history (Proc::calls): ordered by call time (a pass
// may read the communicators of one process in any order), the oldest dropped past kCallHistoryLen.
void note_call(Proc& p, const CommKey& comm, const OpId& id, int64_t api_ns) {
  if (api_ns <= 0) return;
  auto pos = p.calls.end();
  while (pos != p.calls.begin() && std::prev(pos)->api_ns > api_ns) --pos;
  p.calls.insert(pos, IssuedCall{comm, id, api_ns});
  if (p.calls.size() > kCallHistoryLen) p.calls.pop_front();
}
}  // namespace

const char* to_string(ProcState s) {
  switch (s) {
    case ProcState::kRunning: return "running";
    case ProcState::kExited: return "exited";
    case ProcState::kDead: return "dead";
  }
  return "unknown";
}

std::string describe(const OpId& id) {
  if (id.cls == OpClass::kColl) return std::string(shm::func_name(id.func)) + " #" + std::to_string(id.seq);
  return "Send " + std::to_string(id.src) + "->" + std::to_string(id.dst) + " #" + std::to_string(id.seq);
}

int Op::n_final() const {
  int k = 0;
  for (const OpSlot& s : slots) k += s.final;
  return k;
}

int Op::n_complete() const {
  int k = 0;
  for (const OpSlot& s : slots) k += s.rec.state == kStateComplete;
  return k;
}

const OpSlot* Op::slot(int index) const {
  auto it = std::lower_bound(slots.begin(), slots.end(), index, [](const OpSlot& s, int i) { return s.index < i; });
  return it != slots.end() && it->index == index ? &*it : nullptr;
}

OpSlot* Op::slot(int index) { return const_cast<OpSlot*>(std::as_const(*this).slot(index)); }

OpSlot& Op::add(int index) {
  auto it = std::lower_bound(slots.begin(), slots.end(), index, [](const OpSlot& s, int i) { return s.index < i; });
  if (it != slots.end() && it->index == index) return *it;
  OpSlot s;
  s.index = index;
  return *slots.insert(it, s);
}

int Op::index_of(int rank) const {
  if (id.cls == OpClass::kColl) return rank >= 0 && rank < n ? rank : -1;
  if (rank == id.src) return 0;
  if (rank == id.dst) return 1;
  return -1;
}

int Model::upsert_proc(const Proc& p, int64_t now_ns) {
  auto key = std::make_pair(p.host, p.pid);
  auto it = proc_index_.find(key);
  if (it != proc_index_.end()) return it->second;
  Proc q = p;
  q.id = static_cast<int>(procs_.size());
  q.first_seen_ns = now_ns;
  procs_.push_back(q);
  proc_index_[key] = q.id;
  return q.id;
}

Comm& Model::upsert_comm(const CommKey& key, const std::string& name, int nnodes) {
  auto [it, added] = comms_.try_emplace(key);
  Comm& c = it->second;
  if (added) {
    c.key = key;
    c.ranks.resize(static_cast<size_t>(std::max(key.nranks, 0)));
  }
  if (c.name.empty() && !name.empty()) c.name = name;
  if (c.nnodes == 0) c.nnodes = nnodes;
  return c;
}

void Model::set_member(Comm& c, int rank, int proc, int64_t init_ns, bool finalized) {
  if (rank < 0 || rank >= int(c.ranks.size())) return;
  RankProgress& r = c.ranks[rank];
  if (r.proc != proc && r.proc >= 0 && init_ns < r.init_ns) return;  // older process: keep newer
  const bool was_known = r.proc >= 0, was_finalized = r.finalized, changed = r.proc != proc || r.finalized != finalized;
  if (r.proc != proc) {
    RankProgress fresh;
    fresh.proc = proc;
    r = fresh;
  }
  r.init_ns = init_ns;
  r.finalized = finalized;
  const bool known = proc >= 0;
  if (known != was_known) {
    auto it = std::lower_bound(c.known_ranks.begin(), c.known_ranks.end(), rank);
    if (known) {
      c.known_ranks.insert(it, rank);
    } else {
      c.known_ranks.erase(it);
    }
  }
  c.n_finalized += int(finalized) - int(was_finalized);
  if (changed) c.members_version++;
}

Comm* Model::find_comm(const CommKey& k) {
  auto it = comms_.find(k);
  return it == comms_.end() ? nullptr : &it->second;
}

bool Model::is_final(const RecordSnapshot& r) {
  bool done = r.state == kStateComplete || r.state == kStateApiOnly ||
              ((r.flags & kFlagNoKernelCh) && r.state >= kStateEnqueued);
  return done && r.fp_send_status != kFpPending && r.fp_recv_status != kFpPending;
}

bool Model::is_inflight(const RecordSnapshot& r) {
  return (r.state == kStateEnqueued || r.state == kStateRunning) && !(r.flags & kFlagNoKernelCh);
}

int64_t Model::follow_sequence(RankProgress& rp, const RecordSnapshot& r) {
  if (rp.seq_started && r.index < rp.seq_next_index) return -1;  // an update of a record already seen
  if (r.index != (rp.seq_started ? rp.seq_next_index : 0)) {
    rp.seq_known = 0;  // records lost in between (or before the first read): counts unknown
    rp.seq_gaps++;
  }
  rp.seq_started = true;
  rp.seq_next_index = r.index + 1;
  if (r.kind != kKindColl || r.func >= kNumNumberedFuncs || (r.flags & kFlagUnmatched)) return -1;
  rp.seq_count[r.func] = r.key;  // the seqNumber is the rank's count of earlier calls of this function
  rp.seq_known |= uint8_t(1u << r.func);
  int64_t pos = -1;
  if (rp.seq_synced()) {
    SeqEntry e;
    e.pos = rp.seq_next_pos();
    e.id = OpId{OpClass::kColl, r.func, r.key, -1, -1};
    e.datatype = r.datatype;
    e.api_datatype = r.api_datatype;
    e.count = r.count;
    e.api_count = r.api_count;
    e.root = r.func == kFuncBroadcast || r.func == kFuncReduce ? r.peer : -1;
    e.enqueue_ns = r.enqueue_ns;
    rp.seq_window.push_back(e);
    if (rp.seq_window.size() > kSeqWindow) {
      rp.seq_window.pop_front();
      rp.seq_evicted++;
    }
    pos = int64_t(e.pos);
  }
  rp.seq_count[r.func] = r.key + 1;
  return pos;
}

bool Model::op_of(const Comm& c, int rank, const RecordSnapshot& r, OpId* id, int* slot) {
  const int n = int(c.ranks.size());
  if (rank < 0 || rank >= n || (r.flags & kFlagUnmatched)) return false;
  if (r.kind == kKindColl && r.func < kNumNumberedFuncs) {
    *id = OpId{OpClass::kColl, r.func, r.key, -1, -1};
    *slot = rank;
    return true;
  }
  if ((r.kind == kKindSend || r.kind == kKindRecv) && r.peer >= 0 && r.peer < n) {
    const bool send = r.kind == kKindSend;
    *id = OpId{OpClass::kP2p, kFuncSend, r.key, send ? rank : r.peer, send ? r.peer : rank};
    *slot = send ? 0 : 1;
    return true;
  }
  return false;
}

Op* Model::place(Comm& c, int rank, const RecordSnapshot& r, int64_t now_ns) {
  OpId id;
  int slot = 0;
  if (!op_of(c, rank, r, &id, &slot)) return nullptr;
  auto it = c.ops.find(id);
  if (it == c.ops.end()) {
    Op op;
    op.id = id;
    op.n = id.cls == OpClass::kColl ? int(c.ranks.size()) : 2;
    op.first_seen_ns = op.last_change_ns = now_ns;
    it = c.ops.emplace(id, std::move(op)).first;
  }
  OpSlot& s = it->second.add(slot);
  s.rec = r;
  s.lost = false;
  s.final = is_final(r);
  RankProgress& rp = c.ranks[rank];
  if (is_inflight(r)) rp.inflight[r.index] = id;
  return &it->second;
}

Op* Model::apply(Comm& c, int rank, const RecordSnapshot& r, int64_t now_ns) {
  const int n = int(c.ranks.size());
  int64_t pos = -1;
  if (rank >= 0 && rank < n) {
    c.ranks[rank].last_record_api_ns = std::max(c.ranks[rank].last_record_api_ns, r.api_ns);
    const uint64_t before = c.ranks[rank].seq_next_index;
    pos = follow_sequence(c.ranks[rank], r);
    if (c.ranks[rank].seq_next_index != before) c.seq_stamp++;
  }
  OpId id;
  int slot = 0;
  if (!op_of(c, rank, r, &id, &slot)) {
    unmatched_++;
    return nullptr;
  }

  auto it = c.ops.find(id);
  if (it == c.ops.end()) {
    if (c.ops.size() >= kMaxLiveOps && !c.by_age.empty()) {
      // Bound: drop the operation seen first (it is the stalest; ties: the smallest id).
      drop(c, c.by_age.begin()->second);
      c.ops_dropped++;
    }
    Op op;
    op.id = id;
    op.n = id.cls == OpClass::kColl ? n : 2;
    op.first_seen_ns = now_ns;
    it = c.ops.emplace(id, std::move(op)).first;
    c.by_age.emplace(now_ns, id);
  }
  Op& op = it->second;
  bool existed = op.slot(slot) != nullptr;
  OpSlot& s = op.add(slot);
  bool fresh = !existed || s.rec.index != r.index;
  if (fresh) s.pos = pos;
  bool changed = fresh || s.rec.state != r.state || s.rec.ch_started != r.ch_started ||
                 s.rec.ch_stopped != r.ch_stopped || s.rec.fp_send_status != r.fp_send_status ||
                 s.rec.fp_recv_status != r.fp_recv_status;
  if (!changed) return &op;
  bool newly_complete = r.state == kStateComplete && (fresh || s.rec.state != kStateComplete);

  // Progress time: when it happened if the record says so (a new observer sees the true age of
  // a stall), else when we saw it change.
  int64_t t = now_ns;
  if (fresh) {
    t = std::max({r.api_ns, r.enqueue_ns, r.complete_ns});
  } else if (newly_complete && r.complete_ns > 0) {
    t = r.complete_ns;
  }
  if (t <= 0 || t > now_ns) t = now_ns;
  c.last_progress_ns = std::max(c.last_progress_ns, t);
  op.last_change_ns = now_ns;

  RankProgress& rp = c.ranks[rank];
  if (is_inflight(r)) {
    rp.inflight[r.index] = id;
  } else {
    rp.inflight.erase(r.index);
  }
  if (r.enqueue_ns > 0 && (!rp.last_enqueued.valid || r.enqueue_ns >= rp.last_enqueued.ns)) {
    rp.last_enqueued = OpMark{id, r.enqueue_ns, true};
  }
  if (r.state >= kStateRunning && r.state != kStateApiOnly && r.gpu_start_ns > 0 &&
      (!rp.last_started.valid || r.gpu_start_ns >= rp.last_started.ns)) {
    rp.last_started = OpMark{id, r.gpu_start_ns, true};
  }
  if (r.state == kStateComplete) {
    int64_t end = r.gpu_end_ns > 0 ? r.gpu_end_ns : r.complete_ns;
    if (!rp.last_completed.valid || end >= rp.last_completed.ns) rp.last_completed = OpMark{id, end, true};
  }
  if (id.cls == OpClass::kColl) {
    rp.issued[id.func] = std::max(rp.issued[id.func], id.seq + 1);
    if (r.state == kStateRunning || r.state == kStateComplete)
      rp.started[id.func] = std::max(rp.started[id.func], id.seq + 1);
    if (r.state == kStateComplete) rp.completed[id.func] = std::max(rp.completed[id.func], id.seq + 1);
  }
  if (newly_complete) {
    const int64_t from = r.enqueue_ns > 0 ? r.enqueue_ns : r.api_ns;
    const int64_t to = r.complete_ns > 0 ? r.complete_ns : r.gpu_end_ns;
    if (from > 0 && to >= from) {
      c.held_max_ns = std::max(c.held_max_ns, to - from);
      c.held_ops++;
    }
  }
  if (fresh && rp.proc >= 0) note_call(procs_[rp.proc], c.key, id, r.api_ns > 0 ? r.api_ns : r.enqueue_ns);
  if (newly_complete && r.gpu_start_ns > 0 && r.gpu_end_ns >= r.gpu_start_ns && rp.proc >= 0) {
    auto& tl = procs_[rp.proc].timeline;
    GpuInterval iv{r.gpu_start_ns, r.gpu_end_ns, -1};
    if (id.cls == OpClass::kP2p) {
      int64_t posted = r.launch_ns > 0 ? r.launch_ns : r.enqueue_ns > 0 ? r.enqueue_ns : r.gpu_start_ns;
      iv.p2p_held_ns = r.gpu_end_ns - std::min(posted, r.gpu_start_ns);
    }
    auto pos = tl.end();  // usually the newest: insert from the back, keeping ends ordered
    while (pos != tl.begin() && std::prev(pos)->end_ns > r.gpu_end_ns) --pos;
    tl.insert(pos, iv);
    if (tl.size() > kTimelineLen) tl.pop_front();
  }

  s.rec = r;
  s.lost = false;
  s.final = is_final(r);
  return &op;
}

void Model::lost(Comm& c, int rank, uint64_t index) {
  if (rank < 0 || rank >= int(c.ranks.size())) return;
  c.records_lost++;
  auto& inflight = c.ranks[rank].inflight;
  auto it = inflight.find(index);
  if (it == inflight.end()) return;
  auto op = c.ops.find(it->second);
  if (op != c.ops.end()) {
    OpSlot* s = op->second.slot(op->second.index_of(rank));
    if (s && s->rec.index == index) {
      s->lost = true;
      s->final = true;
    }
  }
  inflight.erase(it);
}

void Model::drop(Comm& c, const OpId& id) {
  auto it = c.ops.find(id);
  if (it == c.ops.end()) return;
  // A dropped op can no longer be followed as in flight on any rank.
  for (const OpSlot& s : it->second.slots) {
    int r = it->second.comm_rank(s.index);
    if (r >= 0 && r < int(c.ranks.size())) c.ranks[r].inflight.erase(s.rec.index);
  }
  c.by_age.erase({it->second.first_seen_ns, id});
  c.ops.erase(it);
}

}  // namespace scout::obs
