// Our own XXH64 and the fingerprint's per-lane, per-block and per-node functions, compiled for
// the host (g++: plain inline) and the device (nvcc: __host__ __device__). XXH64 is the public
// algorithm by Yann Collet (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md); this
// is our own code from that description.
//
// The GPU kernel (fp_kernel.cu) computes every XXH64 as four lane accumulators, one per thread
// (lane l reads the 8-byte words l, l+4, l+8, ... of the message), then one thread merges them
// and hashes the tail. The host emulation (fp_emulate.h) and the tests call exactly these
// functions with the same decomposition, so the only GPU-specific part is which thread runs
// which call. test/unit/fp_hash_test.cc proves bit equality with libxxhash.
#pragma once

#include <cstdint>

#include "plugin/gpu/fp_nonfinite.h"
#include "plugin/gpu/fp_params.h"

#if defined(__CUDACC__)
#define SCOUT_UNROLL _Pragma("unroll")
#define SCOUT_NO_UNROLL _Pragma("unroll 1")
#else
#define SCOUT_UNROLL
#define SCOUT_NO_UNROLL
#endif

namespace scout::fp::hash {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;
constexpr uint32_t kLanes = 4;                                            // XXH64 accumulators
constexpr uint32_t kStripeBytes = 32;                                     // one 8-byte word per lane
constexpr uint32_t kBlockStripes = uint32_t(kBlockBytes / kStripeBytes);  // 128

SCOUT_HD constexpr uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// One accumulation step of a lane: acc = rotl(acc + word * P2, 31) * P1.
SCOUT_HD constexpr uint64_t round64(uint64_t acc, uint64_t word) { return rotl64(acc + word * kP2, 31) * kP1; }

// Initial accumulator of lane 0..3 for `seed`.
SCOUT_HD constexpr uint64_t lane_init(uint64_t seed, uint32_t lane) {
  return lane == 0 ? seed + kP1 + kP2 : lane == 1 ? seed + kP2 : lane == 2 ? seed : seed - kP1;
}

SCOUT_HD constexpr uint64_t merge_round(uint64_t h, uint64_t lane_acc) {
  return (h ^ round64(0, lane_acc)) * kP1 + kP4;
}

// The state after the stripes: converged lanes (messages of >= 32 bytes) or seed + P5.
SCOUT_HD constexpr uint64_t converge(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  uint64_t h = rotl64(a0, 1) + rotl64(a1, 7) + rotl64(a2, 12) + rotl64(a3, 18);
  h = merge_round(h, a0);
  h = merge_round(h, a1);
  h = merge_round(h, a2);
  return merge_round(h, a3);
}

SCOUT_HD constexpr uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

// Finishes an XXH64: `h` from converge() (or seed + P5 for messages under 32 bytes), `len` the
// whole message length, t0..t3 the last (len % 32) bytes as up to 4 little-endian words, the
// last one zero-padded (unused words 0). Straight-line code: no dynamically indexed arrays, so
// a GPU thread keeps everything in registers.
SCOUT_HD constexpr uint64_t finish(uint64_t h, uint64_t len, uint64_t t0, uint64_t t1, uint64_t t2, uint64_t t3) {
  h += len;
  uint32_t rest = uint32_t(len & 31);
  uint64_t cur = t0;
  SCOUT_UNROLL
  for (int i = 0; i < 3; ++i) {
    if (rest >= 8) {
      h = rotl64(h ^ round64(0, cur), 27) * kP1 + kP4;
      cur = i == 0 ? t1 : i == 1 ? t2 : t3;
      rest -= 8;
    }
  }
  if (rest >= 4) {
    h = rotl64(h ^ ((cur & 0xffffffffull) * kP1), 23) * kP2 + kP3;
    cur >>= 32;
    rest -= 4;
  }
  SCOUT_UNROLL
  for (int i = 0; i < 3; ++i) {
    if (rest > 0) {
      h = rotl64(h ^ ((cur & 0xff) * kP5), 11) * kP1;
      cur >>= 8;
      --rest;
    }
  }
  return avalanche(h);
}

// ---- word loaders: Load(i) returns the i-th 8-byte little-endian word of a message; a word
// that runs past the message end must come back zero-padded.

// Host loader over plain memory (any alignment; reads only the message bytes).
struct HostBytes {
  const unsigned char* p;
  uint64_t len;
  SCOUT_HD uint64_t operator()(uint64_t i) const {
    uint64_t w = 0, off = i * 8;
    uint64_t n = off >= len ? 0 : (len - off < 8 ? len - off : 8);
    for (uint32_t k = 0; k < 8; ++k) {
      if (k < n) w |= uint64_t(p[off + k]) << (8 * k);
    }
    return w;
  }
};

// Loader over words that are already 8-byte aligned in memory (tree nodes, aligned buffers);
// the word past a partial end is zero-padded by masking.
struct AlignedWords {
  const uint64_t* w;
  uint64_t len;
  SCOUT_HD uint64_t operator()(uint64_t i) const {
    uint64_t off = i * 8;
    if (off + 8 <= len) return w[i];
    if (off >= len) return 0;
    return w[i] & ((1ull << (8 * (len - off))) - 1);
  }
};

// Loader for a message that starts `shift` bytes (1..7) past an 8-byte boundary: word i is
// funnel-shifted from the aligned words i and i+1 (the GPU's misaligned path). Reads aligned
// words only, never past the aligned word holding the message's last byte.
struct FunnelWords {
  const uint64_t* aligned;  // the aligned word holding the message's first byte
  uint32_t shift;           // message start - aligned start, 1..7
  uint64_t len;
  SCOUT_HD uint64_t operator()(uint64_t i) const {
    uint64_t off = i * 8;
    if (off >= len) return 0;
    uint64_t lo = aligned[i] >> (8 * shift);
    // Bytes of word i that live in aligned word i+1: only read it if the message reaches it.
    uint64_t hi = (off + 8 - shift < len) ? aligned[i + 1] << (64 - 8 * shift) : 0;
    uint64_t w = lo | hi;
    return off + 8 <= len ? w : w & ((1ull << (8 * (len - off))) - 1);
  }
};

// ---- lane work

// Words a lane loads before it uses any of them: 16 x 8 bytes in flight per GPU thread.
constexpr uint32_t kBatch = 16;

// Lane `lane` of an XXH64 over `stripes` full stripes of the message read by `load`: the
// accumulator after all of them. Also counts the non-finite elements of the words it read.
// Loads are issued in batches of kBatch independent words, then consumed in order. Messages
// here are blocks, nodes and roots (at most 4 KiB), so `stripes` fits 32 bits.
template <FloatKind kKind, class Load>
SCOUT_HD uint64_t lane_stripes(const Load& load, uint32_t stripes, uint32_t lane, uint64_t seed, uint64_t* nan,
                               uint64_t* inf) {
  uint64_t acc = lane_init(seed, lane);
  uint32_t s = 0;
  for (; s + kBatch <= stripes; s += kBatch) {
    uint64_t w[kBatch];
    SCOUT_UNROLL
    for (uint32_t k = 0; k < kBatch; ++k) w[k] = load((s + k) * kLanes + lane);
    SCOUT_UNROLL
    for (uint32_t k = 0; k < kBatch; ++k) {
      acc = round64(acc, w[k]);
      if (kKind != kNotFloat) count_nonfinite_word(w[k], kKind, nan, inf);
    }
  }
  for (; s < stripes; ++s) {
    uint64_t w = load(s * kLanes + lane);
    acc = round64(acc, w);
    if (kKind != kNotFloat) count_nonfinite_word(w, kKind, nan, inf);
  }
  return acc;
}

// The finishing step lane 0 runs once it holds all four accumulators: reads the tail words
// (counting their non-finite elements) and returns the message's XXH64.
template <FloatKind kKind, class Load, class C>
SCOUT_HD uint64_t finish_message(const Load& load, uint64_t len, uint64_t seed, const uint64_t acc[4], C* nan, C* inf) {
  const uint64_t stripes = len / kStripeBytes;
  const uint64_t h = stripes ? converge(acc[0], acc[1], acc[2], acc[3]) : seed + kP5;
  const uint32_t tail_words = uint32_t(((len & 31) + 7) / 8);
  const uint64_t first = stripes * kLanes;
  const uint64_t t0 = tail_words > 0 ? load(first) : 0;
  const uint64_t t1 = tail_words > 1 ? load(first + 1) : 0;
  const uint64_t t2 = tail_words > 2 ? load(first + 2) : 0;
  const uint64_t t3 = tail_words > 3 ? load(first + 3) : 0;
  if (kKind != kNotFloat) {
    count_nonfinite_word(t0, kKind, nan, inf);  // zero words count nothing
    count_nonfinite_word(t1, kKind, nan, inf);
    count_nonfinite_word(t2, kKind, nan, inf);
    count_nonfinite_word(t3, kKind, nan, inf);
  }
  return finish(h, len, t0, t1, t2, t3);
}

// XXH64 of a message (len < 2^37) computed the way the kernel does (four lanes, then lane 0
// finishes), serially. The host emulation and tests use it; equal to XXH64(message, len, seed).
template <FloatKind kKind, class Load>
SCOUT_HD uint64_t xxh64_lanes(const Load& load, uint64_t len, uint64_t seed, uint64_t* nan, uint64_t* inf) {
  uint64_t acc[4];
  for (uint32_t l = 0; l < kLanes; ++l)
    acc[l] = lane_stripes<kKind>(load, uint32_t(len / kStripeBytes), l, seed, nan, inf);
  return finish_message<kKind>(load, len, seed, acc, nan, inf);
}

// XXH64 of `n` 8-byte words (the root message, small nodes), one thread.
SCOUT_HD uint64_t xxh64_words(const uint64_t* w, uint32_t n, uint64_t seed) {
  uint64_t none = 0;
  return xxh64_lanes<kNotFloat>(AlignedWords{w, uint64_t(n) * 8}, uint64_t(n) * 8, seed, &none, &none);
}

// XXH64 of one 8-byte word (a capped leaf's stratum pick), straight-line: no array, so a GPU
// thread keeps it in registers. Equal to xxh64_words(&w, 1, seed).
SCOUT_HD uint64_t xxh64_word(uint64_t w, uint64_t seed) {
  uint64_t h = seed + kP5 + 8;
  h = rotl64(h ^ round64(0, w), 27) * kP1 + kP4;
  return avalanche(h);
}

// The root of the definition: XXH64 of (top, len, version, capped leaves or 0), one stripe,
// straight-line. Equal to xxh64_words({top, len, version, capped_leaves}, 4, kRootSeed).
SCOUT_HD uint64_t root_hash(uint64_t top, uint64_t len, uint64_t version, uint64_t capped_leaves) {
  const uint64_t h = converge(round64(lane_init(kRootSeed, 0), top), round64(lane_init(kRootSeed, 1), len),
                              round64(lane_init(kRootSeed, 2), version),
                              round64(lane_init(kRootSeed, 3), capped_leaves));
  return avalanche(h + 32);
}

// Block hashed by leaf j of a buffer with n blocks of which m are hashed (m == n: all).
SCOUT_HD uint64_t leaf_block(uint64_t j, uint64_t n, uint64_t m, uint64_t selector) {
  if (m == n) return j;
  return capped_block(j, n, m, xxh64_word(j, selector));
}

}  // namespace scout::fp::hash
