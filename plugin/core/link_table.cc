// The plugin's writer of the link table (link_table.h).
#include "plugin/core/link_table.h"

namespace scout::core {

bool LinkTable::attach(shm::LinkTableHeader* hdr, uint64_t bytes) {
  if (hdr == nullptr || bytes < shm::link_table_bytes(1)) return false;
  uint64_t cap = (bytes - shm::kLinkTableHeaderBytes) / shm::kLinkEntryBytes;
  if (cap > (1u << 20)) cap = 1u << 20;
  hdr_ = hdr;
  entries_ = reinterpret_cast<shm::LinkEntry*>(reinterpret_cast<char*>(hdr) + shm::kLinkTableHeaderBytes);
  capacity_ = uint32_t(cap);
  if (hdr->capacity == 0) {  // fresh table
    hdr->capacity = capacity_;
    hdr->entry_bytes = shm::kLinkEntryBytes;
  }
  return true;
}

shm::LinkEntry* LinkTable::claim(const LinkIdentity& id, int64_t now_ns) {
  if (hdr_ == nullptr) return nullptr;
  uint32_t i = hdr_->claimed.fetch_add(1, std::memory_order_acq_rel);
  if (i >= capacity_) {
    hdr_->claimed.store(capacity_, std::memory_order_relaxed);  // keeps the counter from wrapping
    hdr_->dropped_full.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  shm::LinkEntry* e = &entries_[i];
  e->source = id.source;
  e->dir = id.dir;
  e->dev = id.dev;
  e->comm_hash = id.comm_hash;
  e->comm_nranks = id.comm_nranks;
  e->comm_rank = id.comm_rank;
  e->peer_rank = id.peer_rank;
  e->peer_global_rank = id.peer_global_rank;
  e->peer_pid = id.peer_pid;
  e->conn_id = id.conn_id;
  e->link_id = id.link_id;
  e->peer_host_hash = id.peer_host_hash;
  e->open_ns = now_ns;
  e->state.store(shm::kLinkOpen, std::memory_order_release);
  return e;
}

}  // namespace scout::core
