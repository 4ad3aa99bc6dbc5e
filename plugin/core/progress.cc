// The progress table and the observer's trace requests (progress.h).
#include "plugin/core/progress.h"

#include "plugin/core/process.h"
#include "plugin/core/proxy_steps.h"

namespace scout::core {

bool ProgressTable::attach(shm::ProgressTableHeader* hdr, uint64_t bytes) {
  if (hdr == nullptr || bytes < shm::progress_table_bytes(1)) return false;
  const uint64_t fit = (bytes - shm::kProgressHeaderBytes) / shm::kProgressEntryBytes;
  if (hdr->capacity == 0) {
    hdr->capacity = uint32_t(fit < shm::kProgressEntries ? fit : shm::kProgressEntries);
    hdr->entry_bytes = shm::kProgressEntryBytes;
  }
  hdr_ = hdr;
  capacity_ = hdr->capacity < fit ? hdr->capacity : uint32_t(fit);
  if (capacity_ > shm::kProgressEntries) capacity_ = shm::kProgressEntries;  // handles carry 12-bit indices
  entries_ = reinterpret_cast<shm::ProgressEntry*>(reinterpret_cast<char*>(hdr) + shm::kProgressHeaderBytes);
  seen_.store(hdr->ack_seq.load(std::memory_order_relaxed), std::memory_order_relaxed);
  return true;
}

int32_t ProgressTable::claim(uint64_t comm_hash, int32_t nranks, int32_t rank, int32_t peer, uint8_t channel,
                             uint8_t dir) {
  if (hdr_ == nullptr) return -1;
  uint32_t i = hdr_->claimed.fetch_add(1, std::memory_order_acq_rel);
  if (i >= capacity_) {
    hdr_->dropped_full.fetch_add(1, std::memory_order_relaxed);
    return -1;
  }
  shm::ProgressEntry& e = entries_[i];
  e.dir = dir;
  e.channel = channel;
  e.comm_hash = comm_hash;
  e.comm_nranks = nranks;
  e.comm_rank = rank;
  e.peer = peer;
  e.op_key.store(~0ull, std::memory_order_relaxed);
  e.op_func.store(255, std::memory_order_relaxed);
  e.state.store(1, std::memory_order_release);
  return int32_t(i);
}

void trace_request(Process* p, int64_t now_ns) {
  shm::ProgressTableHeader* h = p->progress.header();
  const uint64_t seq = h->request_seq.load(std::memory_order_acquire);
  const uint64_t hash = h->request_comm_hash.load(std::memory_order_relaxed);
  const int32_t nranks = h->request_nranks.load(std::memory_order_relaxed);
  const int64_t until = h->request_until_ns.load(std::memory_order_relaxed);
  CommState* target = nullptr;
  for (uint32_t r = 0; r < p->max_comms && target == nullptr; ++r) {
    CommState* c = p->comms[r].load(std::memory_order_acquire);
    if (c != nullptr && c->live.load(std::memory_order_relaxed) == kCommLiveActive && c->comm_hash == hash &&
        (nranks == 0 || c->nranks == nranks) && c->proxy != nullptr)
      target = c;
  }
  if (target == nullptr) {
    h->trace_state.store(shm::kTraceNoComm, std::memory_order_relaxed);
  } else if (!p->proxy.trace(now_ns, until, &target->proxy->traced, h)) {
    return;  // a window is switching on another thread: acted on at the next call
  }
  h->trace_comm_hash.store(target != nullptr ? hash : 0, std::memory_order_relaxed);
  h->trace_until_ns.store(target != nullptr ? until : 0, std::memory_order_relaxed);
  h->requests.fetch_add(1, std::memory_order_relaxed);
  h->ack_ns.store(now_ns, std::memory_order_relaxed);
  h->ack_seq.store(seq, std::memory_order_release);
  p->progress.seen(seq);
}

}  // namespace scout::core
