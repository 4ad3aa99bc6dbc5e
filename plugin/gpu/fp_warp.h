// The fingerprint kernel's per-thread and per-warp work as functions compiled for the host (g++)
// and the device (nvcc), so that the kernel (fp_kernel.cu) and its host replay (fp_emulate.cc,
// used by the tests) run the same code; only the memory access (a Mem policy: 16-byte loads on
// the GPU, bounded byte copies on the host) and the shuffles (__shfl_sync vs an array read) differ.
// docs/fingerprint.md, "GPU kernel", describes the mapping:
//
//   * a warp's work item is 16 consecutive leaves (4 KiB blocks) of one job; thread t hashes leaf
//     t / 2 of the item, XXH64 lanes 2h and 2h + 1 with h = t % 2: the 16 bytes of each 32-byte
//     stripe it needs are one aligned 16-byte load (two 8-byte words), kPairBatch stripes loaded
//     before any is used;
//   * the pair's two threads exchange their accumulators (one shuffle each way) and thread h = 0
//     finishes the leaf (fp_hash.h finish_message: converge, tail words, avalanche);
//   * a tree node over <= 64 digests uses the same pair scheme.
#pragma once

#include <cstdint>

#include "plugin/gpu/fp_hash.h"
#include "plugin/gpu/fp_job.h"

namespace scout::fp::gpu {

using hash::kLanes;
using hash::kStripeBytes;

// Stripes a thread loads before it uses the first of them: 4 independent 16-byte loads in flight
// (64 bytes per thread, 64 KiB per SM at 4 CTAs). 6 or 8 spill at the 64-register limit.
constexpr uint32_t kPairBatch = 4;

// The two 8-byte little-endian words of stripe s that lanes 2h and 2h + 1 consume.
struct WordPair {
  uint64_t a;
  uint64_t b;
};

// a >> 8k | b << (64 - 8k): the 8 bytes starting k bytes into the 16 bytes a, b (k = 0..7).
SCOUT_HD constexpr uint64_t funnel64(uint64_t lo, uint64_t hi, uint32_t k) {
  return k == 0 ? lo : (lo >> (8 * k)) | (hi << (64 - 8 * k));
}

// Pair loader over a message whose first byte is `shift` (1..15) bytes past a 16-byte boundary:
// stripe s, half h is funnel-shifted out of the aligned 16-byte chunks 2s + h and 2s + h + 1 of
// `chunks` (chunk i = the 16 bytes at aligned start + 16 i, as a WordPair). Used only over full
// stripes, so both chunks hold message bytes.
template <class Chunks>
struct FunnelPairs {
  Chunks chunks;
  uint32_t shift;
  SCOUT_HD WordPair operator()(uint32_t s, uint32_t h) const {
    const uint64_t c = 2 * uint64_t(s) + h;
    const WordPair c0 = chunks(c), c1 = chunks(c + 1);
    if (shift < 8) return WordPair{funnel64(c0.a, c0.b, shift), funnel64(c0.b, c1.a, shift)};
    return WordPair{funnel64(c0.b, c1.a, shift - 8), funnel64(c1.a, c1.b, shift - 8)};
  }
};

// Lanes 2h and 2h + 1 of an XXH64 over `stripes` full stripes read by `load` (load(s, h) returns
// the pair of stripe s): acc[0], acc[1] after all of them. Adds the non-finite elements of the
// words it read to *nan, *inf. Loads are issued kPairBatch at a time, then consumed in order.
template <FloatKind kKind, class Load>
SCOUT_HD void pair_stripes(const Load& load, uint32_t stripes, uint32_t h, uint64_t seed, uint64_t acc[2],
                           uint32_t* nan, uint32_t* inf) {
  uint64_t a0 = hash::lane_init(seed, 2 * h), a1 = hash::lane_init(seed, 2 * h + 1);
  uint32_t s = 0;
  SCOUT_NO_UNROLL  // one batch of loads in flight at a time: registers stay <= 64
  for (; s + kPairBatch <= stripes; s += kPairBatch) {
    WordPair w[kPairBatch];
    SCOUT_UNROLL
    for (uint32_t k = 0; k < kPairBatch; ++k) w[k] = load(s + k, h);
    SCOUT_UNROLL
    for (uint32_t k = 0; k < kPairBatch; ++k) {
      a0 = hash::round64(a0, w[k].a);
      a1 = hash::round64(a1, w[k].b);
      if (kKind != kNotFloat) {
        count_nonfinite_word(w[k].a, kKind, nan, inf);
        count_nonfinite_word(w[k].b, kKind, nan, inf);
      }
    }
  }
  SCOUT_NO_UNROLL
  for (; s < stripes; ++s) {
    const WordPair w = load(s, h);
    a0 = hash::round64(a0, w.a);
    a1 = hash::round64(a1, w.b);
    if (kKind != kNotFloat) {
      count_nonfinite_word(w.a, kKind, nan, inf);
      count_nonfinite_word(w.b, kKind, nan, inf);
    }
  }
  acc[0] = a0;
  acc[1] = a1;
}

// What thread t of a work item computes for its leaf before the pair exchange.
struct LeafThread {
  bool valid;     // the item has a leaf for this thread (k < m)
  uint64_t k;     // leaf index in the job
  uint64_t b;     // block it hashes (capped buffers: a block of stratum k)
  uint64_t blen;  // its bytes
  uint64_t acc[2];
  uint32_t nan, inf;  // non-finite elements this thread read (<= 4 per word: fits 32 bits)
};

// Thread t (0..31) of work item `item` of job `job` (n blocks, m hashed leaves): which leaf, and
// its two lane accumulators. `mem` gives the loaders (see DevMem in fp_kernel.cu and HostMem in
// fp_emulate.cc): mem.pairs(p, len) for a 16-byte aligned block, mem.chunks(aligned, p, len) for
// the aligned chunks around a misaligned one.
template <FloatKind kKind, class Mem>
SCOUT_HD LeafThread leaf_thread(const Mem& mem, const FpJob& job, uint64_t n, uint64_t m, uint64_t item, uint32_t t) {
  LeafThread th{};
  const uint32_t h = t & 1;
  th.k = item * kWarpLeaves + (t >> 1);
  th.valid = th.k < m;
  th.acc[0] = th.acc[1] = 0;
  if (!th.valid) return th;
  th.b = hash::leaf_block(th.k, n, m, job.selector);
  th.blen = block_len(th.b, job.len);
  const uint64_t p = job.buf + th.b * kBlockBytes;
  const uint32_t stripes = uint32_t(th.blen / kStripeBytes);
  const uint32_t shift = uint32_t(p & 15);
  if (shift == 0) {
    pair_stripes<kKind>(mem.pairs(p, th.blen), stripes, h, th.b, th.acc, &th.nan, &th.inf);
  } else {
    FunnelPairs<decltype(mem.chunks(p - shift, p, th.blen))> fp{mem.chunks(p - shift, p, th.blen), shift};
    pair_stripes<kKind>(fp, stripes, h, th.b, th.acc, &th.nan, &th.inf);
  }
  return th;
}

// The leaf digest, in thread h = 0 of the pair once it holds the partner's accumulators:
// converge, the tail words (mem.words(p, len): 8-byte words, zero-padded), avalanche. Adds the
// tail's non-finite elements to *nan, *inf.
template <FloatKind kKind, class Mem>
SCOUT_HD uint64_t leaf_finish(const Mem& mem, const FpJob& job, const LeafThread& th, uint64_t partner0,
                              uint64_t partner1, uint32_t* nan, uint32_t* inf) {
  const uint64_t lanes[4] = {th.acc[0], th.acc[1], partner0, partner1};
  const uint64_t p = job.buf + th.b * kBlockBytes;
  return hash::finish_message<kKind>(mem.words(p, th.blen), th.blen, th.b, lanes, nan, inf);
}

// Node digests (levels >= 1): XXH64 of `count` (<= 64) consecutive 8-byte digests at `digests`
// with `seed`, by one thread pair: pair part (both threads) then finish (h = 0).
template <class Mem>
SCOUT_HD void node_pair(const Mem& mem, const uint64_t* digests, uint64_t count, uint32_t h, uint64_t seed,
                        uint64_t acc[2]) {
  uint32_t none = 0;
  pair_stripes<kNotFloat>(mem.digest_pairs(digests), uint32_t(count * 8 / kStripeBytes), h, seed, acc, &none, &none);
}
template <class Mem>
SCOUT_HD uint64_t node_finish(const Mem& mem, const uint64_t* digests, uint64_t count, uint64_t seed,
                              const uint64_t acc[2], uint64_t partner0, uint64_t partner1) {
  uint32_t none = 0;
  const uint64_t lanes[4] = {acc[0], acc[1], partner0, partner1};
  return hash::finish_message<kNotFloat>(mem.digest_words(digests, count * 8), count * 8, seed, lanes, &none, &none);
}

// Leaves in tile `tile` of a job of m leaves, and the work items that cover them.
SCOUT_HD constexpr uint64_t tile_leaves(uint64_t tile, uint64_t m) {
  return m - tile * kLeafGroups < kLeafGroups ? m - tile * kLeafGroups : kLeafGroups;
}
SCOUT_HD constexpr uint32_t tile_items(uint64_t tile, uint64_t m) {
  return uint32_t((tile_leaves(tile, m) + kWarpLeaves - 1) / kWarpLeaves);
}

// Digests at level `depth` (1 = level-1 nodes) of a job of m leaves, and the next level's count.
SCOUT_HD constexpr uint64_t level_parent_count(uint64_t count) { return (count + kLeafGroups - 1) / kLeafGroups; }

}  // namespace scout::fp::gpu
