// Reading the progress table (progress_reader.h).
#include "common/progress_reader.h"

#include <algorithm>

namespace scout::shm {

const ProgressTableHeader* progress_table(const SegmentReader& rd, uint32_t* capacity) {
  uint32_t version = 0;
  uint64_t bytes = 0;
  const void* t = rd.table(kTableProgress, &version, &bytes);
  if (t == nullptr || version != kProgressTableVersion || bytes < progress_table_bytes(1)) return nullptr;
  const auto* h = static_cast<const ProgressTableHeader*>(t);
  const uint64_t fit = (bytes - kProgressHeaderBytes) / kProgressEntryBytes;
  *capacity = uint32_t(std::min<uint64_t>({fit, h->capacity, 1u << 20}));
  return h;
}

ProgressTableInfo read_progress_info(const ProgressTableHeader* t, uint32_t capacity) {
  ProgressTableInfo i;
  i.capacity = capacity;
  i.claimed = std::min(t->claimed.load(std::memory_order_acquire), capacity);
  i.request_seq = t->request_seq.load(std::memory_order_acquire);
  i.request_comm_hash = t->request_comm_hash.load(std::memory_order_relaxed);
  i.request_until_ns = t->request_until_ns.load(std::memory_order_relaxed);
  i.request_nranks = t->request_nranks.load(std::memory_order_relaxed);
  i.ack_seq = t->ack_seq.load(std::memory_order_acquire);
  i.trace_state = t->trace_state.load(std::memory_order_relaxed);
  i.ack_ns = t->ack_ns.load(std::memory_order_relaxed);
  i.trace_comm_hash = t->trace_comm_hash.load(std::memory_order_relaxed);
  i.trace_until_ns = t->trace_until_ns.load(std::memory_order_relaxed);
  i.requests = t->requests.load(std::memory_order_relaxed);
  i.traced_ops = t->traced_ops.load(std::memory_order_relaxed);
  i.dropped_full = t->dropped_full.load(std::memory_order_relaxed);
  return i;
}

namespace {
void copy_entry(const ProgressEntry& e, ProgressSnapshot* s) {
  s->op_gen = e.op_gen.load(std::memory_order_acquire);
  s->n_steps = e.n_steps.load(std::memory_order_relaxed);
  s->op_key = e.op_key.load(std::memory_order_relaxed);
  s->op_func = e.op_func.load(std::memory_order_relaxed);
  s->posted = e.posted.load(std::memory_order_relaxed);
  s->gpu_wait = e.gpu_wait.load(std::memory_order_relaxed);
  s->peer_wait = e.peer_wait.load(std::memory_order_relaxed);
  s->in_net = e.in_net.load(std::memory_order_relaxed);
  s->net_done = e.net_done.load(std::memory_order_relaxed);
  s->consumed = e.consumed.load(std::memory_order_relaxed);
  s->op_stopped = e.op_stopped.load(std::memory_order_relaxed) != 0;
  s->start_ns = e.start_ns.load(std::memory_order_relaxed);
  s->last_ns = e.last_ns.load(std::memory_order_relaxed);
}
}  // namespace

void read_progress(const ProgressTableHeader* t, uint32_t capacity, std::vector<ProgressSnapshot>* out) {
  const uint32_t n = std::min(t->claimed.load(std::memory_order_acquire), capacity);
  const auto* e = reinterpret_cast<const ProgressEntry*>(reinterpret_cast<const char*>(t) + kProgressHeaderBytes);
  for (uint32_t i = 0; i < n; ++i) {
    if (e[i].state.load(std::memory_order_acquire) != 1) continue;
    ProgressSnapshot s;
    s.index = i;
    s.dir = e[i].dir;
    s.channel = e[i].channel;
    s.comm_hash = e[i].comm_hash;
    s.comm_nranks = e[i].comm_nranks;
    s.comm_rank = e[i].comm_rank;
    s.peer = e[i].peer;
    copy_entry(e[i], &s);
    if (e[i].op_gen.load(std::memory_order_acquire) != s.op_gen) copy_entry(e[i], &s);
    out->push_back(s);
  }
}

const char* progress_dir_name(uint8_t d) {
  switch (d) {
    case kProgressSend: return "send";
    case kProgressRecv: return "recv";
    default: return "none";
  }
}

const char* trace_state_name(uint32_t s) {
  switch (s) {
    case kTraceActive: return "active";
    case kTraceExpired: return "expired";
    case kTraceNoComm: return "no-comm";
    default: return "none";
  }
}

}  // namespace scout::shm
