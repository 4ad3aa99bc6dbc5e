// Synthetic identifiers for emulated jobs (communicator hashes, metadata hashes, fingerprints).
#pragma once

#include <cstdint>

namespace scout::testing {

// MurmurHash3's 64-bit finalizer of `x`, with the low bit set: distinct inputs give well-spread,
// never-zero values (0 means "unknown" in records).
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x | 1;
}

}  // namespace scout::testing
