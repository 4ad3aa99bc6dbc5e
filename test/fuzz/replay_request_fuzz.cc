// libFuzzer target: on-demand replay request files (observer/replay/request.h). The input is the
// content of a request file beside a store; take_replay_request must take it or refuse it (and
// remove it) without crashing, and what it takes must be a valid request: an id of
// [A-Za-z0-9-]{1,64}, ranks 0..2^24, kinds gemm, coll or link. `make fuzz` runs it.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "observer/replay/request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* tmp = std::getenv("TMPDIR");
  static const std::string dir = std::string(tmp && *tmp ? tmp : "/tmp");
  static const std::string prefix =
      scout::obs::replay_request_prefix(dir + "/scout-fuzz-req." + std::to_string(::getpid()) + ".db");
  const std::string path = prefix + "x.json";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) std::abort();
  if (size > 0 && ::write(fd, data, size) != ssize_t(size)) std::abort();
  ::close(fd);
  std::string err;
  auto r = scout::obs::take_replay_request(prefix, &err);
  if (::access(path.c_str(), F_OK) == 0) std::abort();  // taken or refused: removed either way
  if (r) {
    if (!scout::obs::valid_request_id(r->id)) std::abort();
    for (int g : r->ranks)
      if (g < 0 || g > (1 << 24)) std::abort();
    for (const std::string& k : r->recipes)
      if (k != "gemm" && k != "coll" && k != "link") std::abort();
  } else if (err.empty()) {
    std::abort();  // a refused file is always reported
  }
  return 0;
}
