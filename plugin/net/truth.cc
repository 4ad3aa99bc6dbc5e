// Ground-truth lines of net drills (truth.h).
#include "plugin/net/truth.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/safe_file.h"

namespace scout::net {

size_t truth_json(const TruthLine& t, char* buf, size_t cap) {
  char peer[16];
  if (t.peer >= 0) {
    std::snprintf(peer, sizeof(peer), "%d", t.peer);
  } else {
    std::snprintf(peer, sizeof(peer), "null");
  }
  int n =
      std::snprintf(buf, cap,
                    "{\"kind\":\"%s\",\"global_rank\":%d,\"peer\":%s,\"comm\":{\"hash\":\"0x%016llx\",\"name\":\"\","
                    "\"nranks\":0,\"rank\":-1},\"key\":null,\"step\":-1,\"op\":-1,\"ms\":%lld,\"time_ns\":%lld,"
                    "\"detail\":{\"source\":\"net\",\"drill\":\"%s\",\"conn\":%u}}",
                    t.kind, t.global_rank, peer, static_cast<unsigned long long>(t.comm_hash),
                    static_cast<long long>(t.ms), static_cast<long long>(t.time_ns), t.drill, t.conn_id);
  return n > 0 && size_t(n) < cap ? size_t(n) : 0;
}

bool write_truth(const std::string& path, const TruthLine& t) {
  if (path.empty()) return false;
  char line[640];
  size_t n = truth_json(t, line, sizeof(line) - 1);
  if (n == 0) return false;
  line[n++] = '\n';
  // A FIFO, device or symlink named by SCOUT_TRUTH is refused without blocking (common/safe_file.h).
  std::string err;
  int fd = safe::open_append(path, 0644, &err);
  if (fd < 0) return false;
  bool ok = ::write(fd, line, n) == ssize_t(n);
  ::close(fd);
  return ok;
}

}  // namespace scout::net
