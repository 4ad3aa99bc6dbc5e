// Reading the link table (link_reader.h).
#include "common/link_reader.h"

#include <algorithm>
#include <cstring>

namespace scout::shm {

const LinkTableHeader* link_table(const SegmentReader& rd, uint32_t* capacity) {
  uint32_t version = 0;
  uint64_t bytes = 0;
  const void* t = rd.table(kTableLinks, &version, &bytes);
  if (t == nullptr || version != kLinkTableVersion || bytes < link_table_bytes(1)) return nullptr;
  const auto* h = static_cast<const LinkTableHeader*>(t);
  uint64_t fit = (bytes - kLinkTableHeaderBytes) / kLinkEntryBytes;
  *capacity = uint32_t(std::min<uint64_t>({fit, h->capacity, 1u << 20}));
  return h;
}

void read_link_info(const LinkTableHeader* t, uint32_t capacity, LinkTableInfo* out) {
  LinkTableInfo& i = *out;
  i.capacity = capacity;
  i.claimed = std::min(t->claimed.load(std::memory_order_acquire), capacity);
  i.net_state = t->net_state.load(std::memory_order_relaxed);
  i.net_abi = t->net_abi.load(std::memory_order_relaxed);
  i.delegate_abi = t->delegate_abi.load(std::memory_order_relaxed);
  char name[sizeof(t->delegate) + 1] = {};
  std::memcpy(name, t->delegate, sizeof(t->delegate));
  i.delegate.assign(name, std::strlen(name));  // capacity reserved by the caller: no allocation here
  for (char& c : i.delegate)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';  // no terminal sequence reaches an output
  i.dropped_full = t->dropped_full.load(std::memory_order_relaxed);
  i.net_inits = t->net_inits.load(std::memory_order_relaxed);
  i.net_errors = t->net_errors.load(std::memory_order_relaxed);
  i.fault_delayed = t->fault_delayed.load(std::memory_order_relaxed);
  i.fault_stalled = t->fault_stalled.load(std::memory_order_relaxed);
  i.fault_flipped = t->fault_flipped.load(std::memory_order_relaxed);
  i.proxy_state = t->proxy_state.load(std::memory_order_relaxed);
  i.proxy_windows = t->proxy_windows.load(std::memory_order_relaxed);
  i.proxy_window_ns = t->proxy_window_ns.load(std::memory_order_relaxed);
  i.proxy_window_start_ns = t->proxy_window_start_ns.load(std::memory_order_relaxed);
  i.proxy_window_end_ns = t->proxy_window_end_ns.load(std::memory_order_relaxed);
  i.proxy_steps = t->proxy_steps.load(std::memory_order_relaxed);
  i.proxy_untimed = t->proxy_untimed.load(std::memory_order_relaxed);
  i.handle_full = t->handle_full.load(std::memory_order_relaxed);
}

void read_links(const LinkTableHeader* t, uint32_t capacity, std::vector<LinkSnapshot>* out) {
  uint32_t n = std::min(t->claimed.load(std::memory_order_acquire), capacity);
  const auto* e = reinterpret_cast<const LinkEntry*>(reinterpret_cast<const char*>(t) + kLinkTableHeaderBytes);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t st = e[i].state.load(std::memory_order_acquire);
    if (st == kLinkEmpty) continue;
    LinkSnapshot s;
    s.index = i;
    s.state = st;
    s.source = e[i].source;
    s.dir = e[i].dir;
    s.dev = e[i].dev;
    s.comm_hash = e[i].comm_hash;
    s.comm_nranks = e[i].comm_nranks;
    s.comm_rank = e[i].comm_rank;
    s.peer_rank = e[i].peer_rank;
    s.peer_global_rank = e[i].peer_global_rank;
    s.peer_pid = e[i].peer_pid;
    s.conn_id = e[i].conn_id;
    s.link_id = e[i].link_id;
    s.peer_host_hash = e[i].peer_host_hash;
    s.open_ns = e[i].open_ns;
    s.close_ns = e[i].close_ns.load(std::memory_order_relaxed);
    s.last_ns = e[i].last_ns.load(std::memory_order_relaxed);
    s.transfers = e[i].transfers.load(std::memory_order_relaxed);
    s.bytes = e[i].bytes.load(std::memory_order_relaxed);
    s.busy_ns = e[i].busy_ns.load(std::memory_order_relaxed);
    s.max_ns = e[i].max_ns.load(std::memory_order_relaxed);
    s.posted = e[i].posted.load(std::memory_order_relaxed);
    s.faults = e[i].faults.load(std::memory_order_relaxed);
    for (int b = 0; b < kLinkHistBuckets; ++b) s.hist[b] = e[i].hist[b].load(std::memory_order_relaxed);
    out->push_back(s);
  }
}

const char* link_source_name(uint8_t s) {
  return s == kLinkSourceNet ? "net" : s == kLinkSourceProxy ? "proxy" : "none";
}
const char* link_dir_name(uint8_t d) { return d == kLinkSend ? "send" : d == kLinkRecv ? "recv" : "none"; }
const char* link_state_name(uint32_t s) { return s == kLinkOpen ? "open" : s == kLinkClosed ? "closed" : "empty"; }
const char* net_state_name(uint32_t s) {
  switch (s) {
    case kNetActive: return "active";
    case kNetNoDelegate: return "no-delegate";
    case kNetDelegateFailed: return "delegate-failed";
    default: return "unused";
  }
}
const char* proxy_state_name(uint32_t s) { return s == kProxyWaiting ? "waiting" : s == kProxyOpen ? "open" : "off"; }

}  // namespace scout::shm
