#include "test/sim/data.h"

#include <algorithm>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scout::sim {

void fill_input(float* dst, uint64_t n, uint64_t seed, int global_rank, uint64_t op) {
  uint64_t key[3] = {seed, static_cast<uint64_t>(global_rank), op};
  const uint32_t base = static_cast<uint32_t>(XXH64(key, sizeof(key), 0x51u));
  for (uint64_t e = 0; e < n; ++e) {
    uint32_t u = base + static_cast<uint32_t>(e) * 0x9E3779B9u;
    u ^= u >> 15;
    u *= 0x2C1B3C6Du;
    u ^= u >> 12;
    dst[e] = static_cast<float>(u >> 8) * (1.0f / 16777216.0f) - 0.5f;
  }
}

void reduce_sum(float* out, uint64_t out_n, const float* const* in, const uint64_t* counts, int n, uint64_t chunk) {
  std::fill(out, out + out_n, 0.0f);
  for (int j = 0; j < n; ++j) {
    const float* src = in[j] + chunk * counts[j];
    uint64_t m = std::min(out_n, counts[j]);
    for (uint64_t e = 0; e < m; ++e) out[e] += src[e];
  }
}

void copy_or_zero(float* dst, uint64_t n_dst, const float* src, uint64_t n_src) {
  uint64_t m = std::min(n_dst, n_src);
  if (dst != src) std::memcpy(dst, src, m * sizeof(float));
  if (n_dst > m) std::fill(dst + m, dst + n_dst, 0.0f);
}

}  // namespace scout::sim
