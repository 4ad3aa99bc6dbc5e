// CPU reference of the fingerprint definition (docs/fingerprint.md): libxxhash (inlined, so the
// plugin has no runtime dependency) for every XXH64, the tree and selection rules from
// fp_params.h. The GPU kernel must give the same bits (test/unit/fp_hash_test.cc).
#include <bit>
#include <cstring>

#include "plugin/gpu/fp_nonfinite.h"
#include "plugin/gpu/fp_params.h"
#include "scout/fingerprint.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

static_assert(std::endian::native == std::endian::little,
              "fingerprints hash digests as little-endian words; port the word encoding first");

namespace scout::fp {
namespace {

// Builds the fixed fan-out tree over a known number of leaf digests pushed in order, using
// O(kMaxLevels * kFanout) stack memory (no allocation).
class TreeBuilder {
 public:
  explicit TreeBuilder(uint64_t leaves) {
    count_[0] = leaves;
    top_level_ = 0;
    while (count_[top_level_] > 1) {
      count_[top_level_ + 1] = parent_count(count_[top_level_]);
      ++top_level_;
    }
  }

  void push(uint32_t level, uint64_t digest) {
    if (level == top_level_) {
      top_ = digest;
      return;
    }
    buf_[level][fill_[level]++] = digest;
    ++pushed_[level];
    if (fill_[level] == kFanout || pushed_[level] == count_[level]) {
      const uint64_t node = (pushed_[level] - 1) / kFanout;
      uint64_t d = XXH64(buf_[level], fill_[level] * sizeof(uint64_t), node_seed(level + 1, node));
      fill_[level] = 0;
      push(level + 1, d);
    }
  }

  uint64_t top() const { return top_; }

 private:
  uint64_t count_[kMaxLevels + 1] = {};
  uint64_t pushed_[kMaxLevels + 1] = {};
  uint32_t fill_[kMaxLevels + 1] = {};
  uint64_t buf_[kMaxLevels + 1][kFanout];
  uint32_t top_level_ = 0;
  uint64_t top_ = 0;
};

// Root: XXH64 of four little-endian words (top, len, version, capped leaves or 0).
uint64_t root_hash(uint64_t top, uint64_t len, uint64_t capped_leaves) {
  const uint64_t words[4] = {top, len, kFormatVersion, capped_leaves};
  return XXH64(words, sizeof(words), kRootSeed);
}

// Adds the NaN/Inf elements of `n` <= kBlockBytes bytes at `p` (a block, element-aligned) to
// *counts. The same arithmetic as count_nonfinite_word() (fp_nonfinite.h), reorganised for a
// CPU core: per-lane indicator bits are summed lane-wise over the block (at most 512 words, so
// 16-bit lanes cannot overflow) and reduced once, which the compiler vectorises.
template <FloatKind kKind>
void count_block(const unsigned char* p, uint64_t n, Counts* counts) {
  uint64_t nonfinite = 0, nans = 0;
  auto word = [&](uint64_t w) {
    if constexpr (kKind == kF16 || kKind == kBF16) {
      constexpr uint64_t kInf = kKind == kF16 ? 0x0400040004000400ull : 0x0080008000800080ull;
      constexpr uint64_t kNan = kKind == kF16 ? 0x03FF03FF03FF03FFull : 0x007F007F007F007Full;
      const uint64_t abs = w & 0x7FFF7FFF7FFF7FFFull, top = 0x8000800080008000ull;
      nonfinite += ((abs + kInf) & top) >> 15;
      nans += ((abs + kNan) & top) >> 15;
    } else if constexpr (kKind == kF32) {
      const uint64_t abs = w & 0x7FFFFFFF7FFFFFFFull, top = 0x8000000080000000ull;
      nonfinite += ((abs + 0x0080000000800000ull) & top) >> 31;
      nans += ((abs + 0x007FFFFF007FFFFFull) & top) >> 31;
    } else {
      const uint64_t abs = w & 0x7FFFFFFFFFFFFFFFull;
      nonfinite += abs >= 0x7FF0000000000000ull;
      nans += abs > 0x7FF0000000000000ull;
    }
  };
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    word(w);
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    word(w);
  }
  auto lanes = [](uint64_t v) -> uint64_t {
    if constexpr (kKind == kF16 || kKind == kBF16)
      return (v & 0xffff) + ((v >> 16) & 0xffff) + ((v >> 32) & 0xffff) + (v >> 48);
    if constexpr (kKind == kF32) return (v & 0xffffffff) + (v >> 32);
    return v;
  };
  const uint64_t nan = lanes(nans);
  counts->nan += nan;
  counts->inf += lanes(nonfinite) - nan;
}

void count_block_any(const unsigned char* p, uint64_t n, FloatKind kind, Counts* counts) {
  switch (kind) {
    case kF16: count_block<kF16>(p, n, counts); break;
    case kBF16: count_block<kBF16>(p, n, counts); break;
    case kF32: count_block<kF32>(p, n, counts); break;
    case kF64: count_block<kF64>(p, n, counts); break;
    case kNotFloat: break;
  }
}

// Hashes leaf `b` (a block index) into the tree and counts its non-finite elements.
inline void add_block(TreeBuilder& tree, const unsigned char* base, uint64_t len, uint64_t b, FloatKind kind,
                      Counts* counts, uint64_t* bytes) {
  uint64_t n = block_len(b, len);
  const unsigned char* p = base + b * kBlockBytes;
  tree.push(0, XXH64(n ? p : nullptr, n, node_seed(0, b)));
  if (kind != kNotFloat && counts) count_block_any(p, n, kind, counts);
  *bytes += n;
}

}  // namespace

uint64_t fingerprint(const void* data, uint64_t len, uint8_t dtype, Counts* counts) {
  return fingerprint_capped(data, len, ~0ull, 0, dtype, counts, nullptr);
}

uint64_t fingerprint_capped(const void* data, uint64_t len, uint64_t max_bytes, uint64_t selector, uint8_t dtype,
                            Counts* counts, uint64_t* bytes_hashed) {
  const auto* base = static_cast<const unsigned char*>(data);
  if (data == nullptr) len = 0;
  const FloatKind kind = float_kind(dtype);
  Counts local;
  const uint64_t n = num_blocks(len);
  const uint64_t m = hashed_leaves(len, max_bytes);
  TreeBuilder tree(m);
  uint64_t bytes = 0;
  if (m == n) {
    for (uint64_t b = 0; b < n; ++b) add_block(tree, base, len, b, kind, &local, &bytes);
  } else {
    for (uint64_t j = 0; j < m; ++j) {
      const uint64_t jle = j;  // little-endian on every supported host (static_assert above)
      uint64_t b = capped_block(j, n, m, XXH64(&jle, sizeof(jle), selector));
      add_block(tree, base, len, b, kind, &local, &bytes);
    }
  }
  if (counts) *counts = local;
  if (bytes_hashed) *bytes_hashed = bytes;
  return root_hash(tree.top(), len, m == n ? 0 : m);
}

}  // namespace scout::fp
