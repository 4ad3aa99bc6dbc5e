#include "observer/export/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace scout::exporter {

bool write_file_atomic(const std::string& path, std::string_view text, std::string* error) {
  auto fail = [&](const std::string& what, int e) {
    if (error) *error = "cannot write " + path + ": " + what + ": " + std::strerror(e);
    return false;
  };
  // mkostemp opens O_CREAT|O_EXCL (a symbolic link at the name fails with EEXIST and the next
  // random name is tried), mode 0600, in the target's own directory so rename() stays atomic.
  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return fail("cannot create a temporary file beside it", errno);
  std::string tmp(name.data());
  auto abandon = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail(what, e);
  };
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0644 & ~mask) != 0) return abandon("chmod", errno);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return abandon("write", errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return abandon("fsync", errno);
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail("close", e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail("rename", e);
  }
  return true;
}

}  // namespace scout::exporter
