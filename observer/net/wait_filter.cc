#include "observer/net/wait_filter.h"

#include <array>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scout::net {

namespace {

constexpr int kBitsPerComm = 3;

// The bits of a communicator among the 64 x n bits of the vector (double hashing of one XXH64).
std::array<size_t, kBitsPerComm> bits_of(const CommWaitView& c, size_t n) {
  const uint64_t words[2] = {c.comm_hash, uint64_t(uint32_t(c.nranks))};
  const uint64_t h = XXH64(words, sizeof(words), 0x3a17);
  const uint64_t m = 64 * uint64_t(n), a = h % m, b = ((h >> 32) | 1) % m;
  std::array<size_t, kBitsPerComm> out;
  for (int i = 0; i < kBitsPerComm; ++i) out[size_t(i)] = size_t((a + uint64_t(i) * b) % m);
  return out;
}

bool marked(const std::vector<uint64_t>& v, size_t bit) { return (v[bit / 64] >> (bit % 64)) & 1; }

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
    for (size_t bit : bits_of(c, buckets->size())) (*buckets)[bit / 64] |= uint64_t(1) << (bit % 64);
  }
}

void keep_waited(const std::vector<uint64_t>& buckets, WaitSnapshot* w) {
  if (buckets.empty()) return;
  std::vector<CommWaitView> kept;
  std::vector<bool> named(w->procs.size(), false);
  for (CommWaitView& c : w->comms) {
    bool all = true;
    for (size_t bit : bits_of(c, buckets.size())) all = all && marked(buckets, bit);
    if (!all) continue;
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
