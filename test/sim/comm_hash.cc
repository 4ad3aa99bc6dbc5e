#include "test/sim/comm_hash.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scout::sim {
namespace {

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

UniqueId make_unique_id(uint64_t seed) {
  UniqueId id{};
  uint64_t state = seed ^ 0x5C0D7E5115EEDull;
  for (size_t i = 0; i < id.size(); i += 8) {
    uint64_t v = splitmix64(&state);
    std::memcpy(id.data() + i, &v, 8);
  }
  return id;
}

uint64_t root_comm_hash(const UniqueId& id) { return XXH64(id.data(), id.size(), 0); }

uint64_t split_comm_hash(uint64_t parent_hash, uint64_t split_count, int64_t color) {
  uint64_t words[3] = {parent_hash, split_count, static_cast<uint64_t>(color)};
  return XXH64(words, sizeof(words), 0);
}

std::string hash_hex(uint64_t h) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, h);
  return buf;
}

}  // namespace scout::sim
