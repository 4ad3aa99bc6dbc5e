// The sampling rule of docs/fingerprint.md ("Sampling") written from the page, independently of
// plugin/fingerprint/sampling.cc, as the oracle of the sampling tests: XXH64 (libxxhash) of the
// 17 bytes LE64(commHash) || LE64(key) || func with seed "scoutsel" read big-endian; an operation
// is sampled at base period 2^p and level L iff the selector's low p + L bits are zero.
#pragma once

#include <xxhash.h>

#include <cstdint>

namespace scout::testing {

// "scoutsel" as a big-endian 64-bit integer.
inline uint64_t reference_selector_seed() {
  uint64_t seed = 0;
  for (char c : {'s', 'c', 'o', 'u', 't', 's', 'e', 'l'}) seed = (seed << 8) | static_cast<unsigned char>(c);
  return seed;
}

// The selector of operation (comm_hash, func, key): bytes laid out one by one, little-endian.
inline uint64_t reference_selector(uint64_t comm_hash, uint8_t func, uint64_t key) {
  unsigned char msg[17];
  for (int i = 0; i < 8; ++i) {
    msg[i] = static_cast<unsigned char>(comm_hash >> (8 * i));
    msg[8 + i] = static_cast<unsigned char>(key >> (8 * i));
  }
  msg[16] = func;
  return XXH64(msg, sizeof(msg), reference_selector_seed());
}

// Whether the operation is sampled at period 2^period_log2 and budget level `level` (p + L < 64).
inline bool reference_sampled(uint64_t comm_hash, uint8_t func, uint64_t key, uint32_t period_log2, uint32_t level) {
  const uint32_t bits = period_log2 + level;
  return (reference_selector(comm_hash, func, key) & ((uint64_t(1) << bits) - 1)) == 0;
}

}  // namespace scout::testing
