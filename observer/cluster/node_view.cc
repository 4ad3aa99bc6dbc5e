#include "observer/cluster/node_view.h"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "observer/cluster/job_waits.h"
#include "observer/detect/fingerprint_check.h"
#include "observer/detect/metadata_check.h"
#include "observer/detect/straggler.h"

namespace scout::obs {

NodeView::NodeView(const Model& model, std::mutex& pass_mu, NodeViewOptions opt)
    : model_(model), pass_mu_(pass_mu), opt_(opt), watch_(opt.hang_timeout_ns) {}

uint64_t NodeView::meta_hash(const shm::RecordSnapshot& r) {
  MetaValue v = meta_value(r, r.api_count != 0);
  // Fixed little-endian layout: func, datatype, count, root.
  uint8_t buf[1 + 1 + 8 + 4];
  buf[0] = r.func;
  buf[1] = v.datatype;
  for (int i = 0; i < 8; ++i) buf[2 + i] = uint8_t(v.count >> (8 * i));
  for (int i = 0; i < 4; ++i) buf[10 + i] = uint8_t(uint32_t(v.root) >> (8 * i));
  return XXH64(buf, sizeof(buf), 0);
}

bool NodeView::spans_nodes(const Comm& c) { return c.nnodes > 1 || !c.members_known(); }

net::RankOpView NodeView::rank_view(const Model& m, const Comm& c, const OpSlot& s) const {
  net::RankOpView v;
  v.comm_rank = s.index;
  const int proc = c.ranks[s.index].proc;
  v.global_rank = proc >= 0 ? m.proc(proc).global_rank : -1;
  v.meta = meta_hash(s.rec);
  v.fp_recv = recv_must_agree(s.rec.func) && s.rec.fp_recv_status == shm::kFpDone ? s.rec.fp_recv : 0;
  v.arrival_ns = s.rec.gpu_start_ns;
  v.end_ns = s.rec.state == shm::kStateComplete ? s.rec.gpu_end_ns : 0;
  if (proc >= 0 && v.arrival_ns > 0 && v.end_ns >= v.arrival_ns)
    v.gap_ns = gap_before(m.proc(proc), v.arrival_ns, v.end_ns, opt_.p2p_pass_ns);
  v.rec = s.rec;
  return v;
}

void NodeView::capture(int64_t now_ns, bool hung) {
  hung_ = hung;
  if (opt_.stall) {
    watch_.observe(model_, now_ns);
    stall_episodes_ = watch_.episodes();
    stalled_ = watch_.stalled();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, s] : streams_) s.seen = false;
  for (const auto& [key, c] : model_.comms()) {
    if (!spans_nodes(c)) continue;
    Stream* by_func[shm::kNumNumberedFuncs] = {};
    for (uint8_t f = 0; f < shm::kNumNumberedFuncs; ++f) {
      net::StreamView v;
      v.comm_hash = key.hash;
      v.func = f;
      v.nranks = key.nranks;
      v.comm_name = c.name;
      bool any = false, first = true;
      for (int r : c.known_ranks) {
        const RankProgress& rp = c.ranks[r];
        net::RankProgressView p;
        p.comm_rank = r;
        p.global_rank = model_.proc(rp.proc).global_rank;
        p.enqueued = rp.issued[f];
        p.started = rp.started[f];
        p.completed = rp.completed[f];
        p.last_event_ns = model_.proc(rp.proc).last_event_ns;
        any |= p.enqueued > 0;
        v.completed = first ? p.completed : std::min(v.completed, p.completed);
        v.enqueued = std::max(v.enqueued, p.enqueued);
        first = false;
        v.ranks.push_back(p);
      }
      if (!any) continue;
      Stream& s = streams_[{key.hash, f}];
      s.view = std::move(v);
      s.seen = true;
      by_func[f] = &s;
    }
    // Records of the operations the Model still holds (local ranks only: the communicator spans
    // nodes). An operation that left the Model keeps its last capture and is settled.
    const size_t local = c.known_ranks.size();
    for (const auto& [id, op] : c.ops) {
      if (id.cls != OpClass::kColl || id.func >= shm::kNumNumberedFuncs || !by_func[id.func]) continue;
      Stream& st = *by_func[id.func];
      Captured& cap = st.ops[id.seq];
      if (cap.settled) continue;
      cap.ranks.clear();
      bool final = op.slots.size() >= local;
      for (const OpSlot& s : op.slots) {
        final &= s.final;
        if (!s.lost) cap.ranks.push_back(rank_view(model_, c, s));
      }
      cap.settled = final || now_ns - op.first_seen_ns > opt_.settle_ns;
      if (cap.settled) {
        st.unsettled.erase(id.seq);
      } else {
        st.unsettled.insert(id.seq);
      }
    }
    // An unsettled capture whose operation left the Model keeps its last capture and is settled.
    for (Stream* s : by_func) {
      if (!s) continue;
      for (auto it = s->unsettled.begin(); it != s->unsettled.end();) {
        if (c.ops.count(OpId{OpClass::kColl, s->view.func, *it, -1, -1})) {
          ++it;
          continue;
        }
        s->ops[*it].settled = true;
        it = s->unsettled.erase(it);
      }
    }
  }
  for (auto it = streams_.begin(); it != streams_.end();) {
    Stream& s = it->second;
    if (!s.seen) {  // the communicator is gone (reclaimed)
      it = streams_.erase(it);
      continue;
    }
    while (!s.ops.empty() && s.ops.begin()->first + opt_.retain_ops < s.view.completed) {
      s.unsettled.erase(s.ops.begin()->first);
      s.ops.erase(s.ops.begin());
    }
    if (!s.unsettled.empty()) s.view.completed = std::min(s.view.completed, *s.unsettled.begin());
    ++it;
  }
  for (const Proc& p : model_.procs()) {
    auto& id = ids_[p.global_rank];
    if (id.pid != 0 && p.state != ProcState::kRunning) continue;  // keep the live incarnation
    id = net::RankIdentity{p.global_rank, p.host, p.pid, p.gpu};
  }
}

std::vector<net::StreamView> NodeView::streams() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<net::StreamView> out;
  out.reserve(streams_.size());
  for (const auto& [k, s] : streams_) out.push_back(s.view);
  return out;
}

bool NodeView::op(uint64_t comm_hash, uint8_t func, uint64_t seq, std::vector<net::RankOpView>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->clear();
  auto it = streams_.find({comm_hash, func});
  if (it == streams_.end()) return false;
  auto op = it->second.ops.find(seq);
  if (op == it->second.ops.end()) return false;
  *out = op->second.ranks;
  return !out->empty();
}

net::RankIdentity NodeView::identity(int global_rank) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(global_rank);
  if (it == ids_.end()) return net::RankIdentity{global_rank, "", 0, ""};
  return it->second;
}

net::WaitSnapshot NodeView::wait_snapshot() {
  std::lock_guard<std::mutex> lock(pass_mu_);
  net::WaitSnapshot w = capture_waits(model_);
  for (net::CommWaitView& c : w.comms) {
    const StallRule r = watch_.rule(CommKey{c.comm_hash, c.nranks});
    c.stall_threshold_ns = r.threshold_ns;
    c.stall_gaps = r.gaps;
    c.stall_p99_ns = r.p99_ns;
  }
  return w;
}

size_t NodeView::retained() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [k, s] : streams_) n += s.ops.size();
  return n;
}

}  // namespace scout::obs
