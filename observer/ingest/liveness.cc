#include "observer/ingest/liveness.h"

#include "common/liveness.h"

namespace scout::obs {

bool owner_running(int pid, uint64_t start_ticks) {
  char s = 0;  // one read of /proc/<pid>/stat for both the start time and the state
  if (!shm::process_alive(pid, start_ticks, &s)) return false;
  return s != 'Z' && s != 'X';
}

}  // namespace scout::obs
