#include "common/hex.h"

#include <cinttypes>
#include <cstdio>

namespace scout::shm {

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

}  // namespace scout::shm
