#include "observer/ingest/liveness.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "plugin/shm/segment.h"

namespace scout::obs {

namespace {
// State letter of /proc/<pid>/stat (field 3), or 0 if unreadable.
char proc_state(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces and ')'
  if (!p || p[1] != ' ') return 0;
  return p[2];
}
}  // namespace

bool owner_running(int pid, uint64_t start_ticks) {
  if (!shm::process_alive(pid, start_ticks)) return false;
  char s = proc_state(pid);
  return s != 'Z' && s != 'X';
}

}  // namespace scout::obs
