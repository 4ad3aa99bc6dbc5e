#include "common/uuid.h"

#include <cstdio>

namespace scout::shm {

void format_gpu_uuid(const unsigned char b[16], char* out, unsigned cap) {
  if (!out || cap == 0) return;
  std::snprintf(out, cap, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

std::string gpu_uuid_text(const unsigned char bytes[16]) {
  char buf[48];
  format_gpu_uuid(bytes, buf, sizeof(buf));
  return buf;
}

}  // namespace scout::shm
