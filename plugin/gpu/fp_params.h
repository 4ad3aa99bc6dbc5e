// The fingerprint definition's parameters and its pure integer rules (docs/fingerprint.md):
// block size, tree fan-out, seeds, the root message, and the capped block selection.
//
// Usable from host code (g++) and device code (nvcc): the CPU reference
// (plugin/fingerprint/cpu_reference.cc) and the GPU kernel (plugin/gpu/fp_kernel.cu) both take
// every rule from here, so only the XXH64 implementation and the thread mapping differ.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SCOUT_HD __host__ __device__ __forceinline__
#else
#define SCOUT_HD inline
#endif

namespace scout::fp {

// Bytes per leaf block. Every leaf is XXH64 of one block (the last block may be shorter).
// 4 KiB = 128 XXH64 stripes: long enough that XXH64's per-call setup and finalisation cost
// ~1% on a CPU core, short enough that a GPU has thousands of independent leaves per MiB.
constexpr uint64_t kBlockBytes = 4096;
// Tree fan-out: a node of level k+1 hashes up to kFanout consecutive level-k digests
// (512 bytes). 64 leaves = 256 KiB: one CTA of the GPU kernel builds a level-1 node on chip.
constexpr uint32_t kFanout = 64;
// Levels a tree can have: 2^52 blocks need ceil(52/6) = 9 levels above the leaves.
constexpr uint32_t kMaxLevels = 12;
// Seed of the root hash ("scout-fp" read as a big-endian integer); its top byte (0x73) is above
// any level number, so the root never shares a seed with a tree node.
constexpr uint64_t kRootSeed = 0x73636f75742d6670ull;
// At most this many blocks are hashed by a capped fingerprint (keeps the selection arithmetic
// exact in 64 bits: j * (n % m) < m^2 <= 2^62).
constexpr uint64_t kMaxCappedBlocks = 1ull << 31;

// Seed of node `index` of tree level `level` (0 = leaves: the seed of a leaf is the index of the
// block it hashes in the buffer, so every leaf digest depends on the block's position).
SCOUT_HD constexpr uint64_t node_seed(uint32_t level, uint64_t index) {
  return (uint64_t(level) << 56) | (index & ((1ull << 56) - 1));
}

// Number of blocks of a buffer of `len` bytes; an empty buffer has one empty block.
SCOUT_HD constexpr uint64_t num_blocks(uint64_t len) { return len == 0 ? 1 : (len + kBlockBytes - 1) / kBlockBytes; }

// Bytes of block `b` of a buffer of `len` bytes.
SCOUT_HD constexpr uint64_t block_len(uint64_t b, uint64_t len) {
  uint64_t start = b * kBlockBytes;
  return start >= len ? 0 : (len - start < kBlockBytes ? len - start : kBlockBytes);
}

// Number of digests of level k+1 given n digests at level k.
SCOUT_HD constexpr uint64_t parent_count(uint64_t n) { return (n + kFanout - 1) / kFanout; }

// Leaves a capped fingerprint hashes: all blocks when len <= max_bytes, else
// m = min(floor(max_bytes / kBlockBytes), kMaxCappedBlocks), at least 1.
SCOUT_HD constexpr uint64_t hashed_leaves(uint64_t len, uint64_t max_bytes) {
  if (len <= max_bytes) return num_blocks(len);
  uint64_t m = max_bytes / kBlockBytes;
  if (m < 1) m = 1;
  if (m > kMaxCappedBlocks) m = kMaxCappedBlocks;
  return m;
}

// Start of stratum j when n blocks are split into m strata: floor(j * n / m), exact for
// j < m <= kMaxCappedBlocks without 128-bit arithmetic.
SCOUT_HD constexpr uint64_t stratum_start(uint64_t j, uint64_t n, uint64_t m) {
  return j * (n / m) + (j * (n % m)) / m;
}

// Block hashed by leaf j of a capped fingerprint (n = num_blocks(len) > m = hashed_leaves):
// stratum j is blocks [stratum_start(j), stratum_start(j+1)), never empty because n > m;
// the block inside it is chosen by `pick` = XXH64(LE64(j), seed = selector), so the choice is
// the same on every rank that uses the same selector.
SCOUT_HD constexpr uint64_t capped_block(uint64_t j, uint64_t n, uint64_t m, uint64_t pick) {
  uint64_t lo = stratum_start(j, n, m);
  uint64_t hi = stratum_start(j + 1, n, m);
  return lo + pick % (hi - lo);
}

}  // namespace scout::fp
