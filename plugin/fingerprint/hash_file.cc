// `scout hash FILE`: the fingerprint of a file's bytes (docs/fingerprint.md).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "scout/fingerprint.h"
#include "scout/shm_format.h"

namespace scout::fp {

std::string to_hex(uint64_t fingerprint) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, fingerprint >>= 4) s[i] = kDigits[fingerprint & 0xf];
  return s;
}

std::string hash_file(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = path + ": " + why;
    return std::string();
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return fail(std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  const uint64_t len = uint64_t(st.st_size);
  if (len == 0) {
    ::close(fd);
    return to_hex(fingerprint(nullptr, 0, shm::kTypeUint8, nullptr));
  }
  void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) return fail(std::string("cannot map: ") + std::strerror(e));
  ::madvise(p, len, MADV_SEQUENTIAL);
  uint64_t fp = fingerprint(p, len, shm::kTypeUint8, nullptr);
  ::munmap(p, len);
  return to_hex(fp);
}

}  // namespace scout::fp
