// Process liveness from /proc (liveness.h).
#include "common/liveness.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace scout::shm {

namespace {
// Fields of /proc/<pid>/stat: the state letter (field 3) and the start time in clock ticks
// (field 22). False when the file cannot be read or parsed.
bool read_proc_stat(int pid, char* state, uint64_t* start_ticks) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may contain spaces: start after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ') return false;
  *state = p[2];
  p++;
  // Fields after ')' start at field 3; starttime is field 22.
  int field = 2;
  while (*p && field < 22) {
    while (*p == ' ') p++;
    field++;
    if (field == 22) break;
    while (*p && *p != ' ') p++;
  }
  if (field != 22) return false;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + uint64_t(*p++ - '0');
  *start_ticks = v;
  return true;
}
}  // namespace

uint64_t process_start_ticks(int pid) {
  char state = 0;
  uint64_t ticks = 0;
  return read_proc_stat(pid, &state, &ticks) ? ticks : 0;
}

bool process_alive(int pid, uint64_t start_ticks, char* state) {
  if (state) *state = 0;
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  if (start_ticks == 0 && state == nullptr) return true;
  char s = 0;
  uint64_t now = 0;
  if (!read_proc_stat(pid, &s, &now)) return true;  // unreadable /proc (other pid namespace): trust kill()
  if (state) *state = s;
  return start_ticks == 0 || now == start_ticks;
}

}  // namespace scout::shm
