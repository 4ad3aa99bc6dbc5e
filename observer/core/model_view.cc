#include "observer/core/model_view.h"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "observer/detect/fingerprint_check.h"
#include "observer/detect/metadata_check.h"

namespace scout::obs {

uint64_t ModelView::meta_hash(const shm::RecordSnapshot& r) {
  MetaValue v = meta_value(r, r.api_count != 0);
  // Fixed little-endian layout: func, datatype, count, root.
  uint8_t buf[1 + 1 + 8 + 4];
  buf[0] = r.func;
  buf[1] = v.datatype;
  for (int i = 0; i < 8; ++i) buf[2 + i] = uint8_t(v.count >> (8 * i));
  for (int i = 0; i < 4; ++i) buf[10 + i] = uint8_t(uint32_t(v.root) >> (8 * i));
  return XXH64(buf, sizeof(buf), 0);
}

bool ModelView::spans_nodes(const Comm& c) { return c.nnodes > 1 || !c.members_known(); }

std::vector<net::StreamView> ModelView::streams() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<net::StreamView> out;
  for (const auto& [key, c] : model_.comms()) {
    if (!spans_nodes(c)) continue;
    for (uint8_t f = 0; f < shm::kNumNumberedFuncs; ++f) {
      net::StreamView s;
      s.comm_hash = key.hash;
      s.func = f;
      s.nranks = key.nranks;
      s.comm_name = c.name;
      bool any = false, first = true;
      for (int r = 0; r < int(c.ranks.size()); ++r) {
        const RankProgress& rp = c.ranks[r];
        if (rp.proc < 0) continue;
        net::RankProgressView v;
        v.comm_rank = r;
        v.global_rank = model_.proc(rp.proc).global_rank;
        v.enqueued = rp.issued[f];
        v.started = rp.started[f];
        v.completed = rp.completed[f];
        v.last_event_ns = model_.proc(rp.proc).last_event_ns;
        any |= v.enqueued > 0;
        s.completed = first ? v.completed : std::min(s.completed, v.completed);
        s.enqueued = std::max(s.enqueued, v.enqueued);
        first = false;
        s.ranks.push_back(v);
      }
      if (any) out.push_back(std::move(s));
    }
  }
  return out;
}

bool ModelView::op(uint64_t comm_hash, uint8_t func, uint64_t seq, std::vector<net::RankOpView>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->clear();
  OpId id{OpClass::kColl, func, seq, -1, -1};
  for (const auto& [key, c] : model_.comms()) {
    if (key.hash != comm_hash) continue;
    auto it = c.ops.find(id);
    if (it == c.ops.end()) continue;
    for (const OpSlot& s : it->second.slots) {
      if (s.lost) continue;
      net::RankOpView v;
      v.comm_rank = s.index;
      int proc = c.ranks[s.index].proc;
      v.global_rank = proc >= 0 ? model_.proc(proc).global_rank : -1;
      v.meta = meta_hash(s.rec);
      v.fp_recv = recv_must_agree(func) && s.rec.fp_recv_status == shm::kFpDone ? s.rec.fp_recv : 0;
      v.arrival_ns = s.rec.gpu_start_ns;
      v.end_ns = s.rec.state == shm::kStateComplete ? s.rec.gpu_end_ns : 0;
      out->push_back(v);
    }
    return !out->empty();
  }
  return false;
}

net::RankIdentity ModelView::identity(int global_rank) {
  std::lock_guard<std::mutex> lock(mu_);
  net::RankIdentity id;
  id.global_rank = global_rank;
  for (const Proc& p : model_.procs()) {
    if (p.global_rank != global_rank) continue;
    id.host = p.host;
    id.pid = p.pid;
    id.gpu = p.gpu;
    if (p.state == ProcState::kRunning) break;  // prefer the live incarnation
  }
  return id;
}

}  // namespace scout::obs
