#include "observer/net/wait_filter.h"

#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scout::net {

namespace {

// The two buckets of a communicator.
std::pair<size_t, size_t> buckets_of(const CommWaitView& c, size_t n) {
  const uint64_t words[2] = {c.comm_hash, uint64_t(uint32_t(c.nranks))};
  const uint64_t h = XXH64(words, sizeof(words), 0x3a17);
  return {size_t(h % n), size_t((h >> 32) % n)};
}

}  // namespace

bool waits_in(const CommWaitView& c) {
  for (const MemberView& m : c.members) {
    if (!m.records.empty()) return true;
    for (size_t f = 0; f < std::size(m.issued); ++f) {
      if (m.issued[f] > m.completed[f]) return true;
    }
  }
  return false;
}

void mark_waited(const WaitSnapshot& w, std::vector<uint64_t>* buckets) {
  if (buckets->empty()) return;
  for (const CommWaitView& c : w.comms) {
    if (!waits_in(c)) continue;
    const auto [a, b] = buckets_of(c, buckets->size());
    (*buckets)[a] = 1;
    (*buckets)[b] = 1;
  }
}

void keep_waited(const std::vector<uint64_t>& buckets, WaitSnapshot* w) {
  if (buckets.empty()) return;
  std::vector<CommWaitView> kept;
  std::vector<bool> named(w->procs.size(), false);
  for (CommWaitView& c : w->comms) {
    const auto [a, b] = buckets_of(c, buckets.size());
    if (!buckets[a] || !buckets[b]) continue;
    for (const MemberView& m : c.members) {
      if (m.proc >= 0 && m.proc < int(named.size())) named[size_t(m.proc)] = true;
    }
    kept.push_back(std::move(c));
  }
  // The processes keep their order (the leader numbers them in the order they arrive).
  std::vector<int> new_index(w->procs.size(), -1);
  std::vector<ProcView> procs;
  for (size_t i = 0; i < w->procs.size(); ++i) {
    if (!named[i]) continue;
    new_index[i] = int(procs.size());
    procs.push_back(std::move(w->procs[i]));
  }
  for (CommWaitView& c : kept) {
    for (MemberView& m : c.members) {
      if (m.proc >= 0 && m.proc < int(new_index.size())) m.proc = new_index[size_t(m.proc)];
    }
  }
  w->comms = std::move(kept);
  w->procs = std::move(procs);
}

}  // namespace scout::net
