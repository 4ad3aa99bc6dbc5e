// Sampling decisions every rank of a communicator makes identically (docs/fingerprint.md,
// "Sampling").
#include <cstring>

#include "scout/fingerprint.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scout::fp {

namespace {
// Seed of op_selector ("scoutsel" read as a big-endian integer).
constexpr uint64_t kSelectorSeed = 0x73636f757473656cull;
}  // namespace

uint64_t op_selector(uint64_t comm_hash, uint8_t func, uint64_t key) {
  // 17 bytes: LE64(comm_hash) || LE64(key) || func.
  unsigned char msg[17];
  std::memcpy(msg, &comm_hash, 8);
  std::memcpy(msg + 8, &key, 8);
  msg[16] = func;
  return XXH64(msg, sizeof(msg), kSelectorSeed);
}

bool sampled(uint64_t comm_hash, uint8_t func, uint64_t key, uint32_t period_log2, uint32_t level) {
  const uint32_t bits = period_log2 + level;
  if (bits == 0) return true;
  if (bits >= 64) return false;
  return (op_selector(comm_hash, func, key) & ((1ull << bits) - 1)) == 0;
}

}  // namespace scout::fp
