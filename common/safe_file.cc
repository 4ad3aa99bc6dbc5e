#include "common/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace scout::safe {

namespace {

Kind kind_of_mode(mode_t m) {
  if (S_ISREG(m)) return Kind::kRegular;
  if (S_ISDIR(m)) return Kind::kDirectory;
  if (S_ISLNK(m)) return Kind::kSymlink;
  if (S_ISFIFO(m)) return Kind::kFifo;
  if (S_ISCHR(m) || S_ISBLK(m)) return Kind::kDevice;
  if (S_ISSOCK(m)) return Kind::kSocket;
  return Kind::kOther;
}

std::string sys(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

Kind kind_of(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Kind::kMissing;
  return kind_of_mode(st.st_mode);
}

const char* to_string(Kind k) {
  switch (k) {
    case Kind::kMissing: return "missing";
    case Kind::kRegular: return "regular file";
    case Kind::kDirectory: return "directory";
    case Kind::kSymlink: return "symlink";
    case Kind::kFifo: return "FIFO";
    case Kind::kDevice: return "device";
    case Kind::kSocket: return "socket";
    case Kind::kOther: return "special file";
  }
  return "special file";
}

int open_regular(const std::string& path, std::string* error, bool follow) {
  int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  if (!follow) flags |= O_NOFOLLOW;
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    if (errno == ELOOP && !follow) {
      if (error) *error = path + " is a symlink, not a regular file";
    } else if (error) {
      *error = sys("cannot open", path);
    }
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    if (error) *error = sys("cannot stat", path);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    if (error) *error = path + " is a " + to_string(kind_of_mode(st.st_mode)) + ", not a regular file";
    ::close(fd);
    return -1;
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

bool read_regular(const std::string& path, size_t max_bytes, std::string* out, std::string* error, bool follow) {
  out->clear();
  const int fd = open_regular(path, error, follow);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0 || uint64_t(st.st_size) > max_bytes) {
    if (error)
      *error = path + " holds " + std::to_string(uint64_t(st.st_size)) + " bytes, more than the " +
               std::to_string(max_bytes) + " read from it";
    ::close(fd);
    return false;
  }
  out->resize(size_t(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = ::read(fd, &(*out)[done], out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (error) *error = sys("cannot read", path);
      ::close(fd);
      out->clear();
      return false;
    }
    if (n == 0) break;  // shrank meanwhile: what is there
    done += size_t(n);
  }
  out->resize(done);
  // Grew meanwhile beyond the cap: refuse rather than use a prefix.
  char extra;
  if (done == size_t(st.st_size) && uint64_t(st.st_size) == max_bytes && ::read(fd, &extra, 1) == 1) {
    if (error) *error = path + " holds more than the " + std::to_string(max_bytes) + " bytes read from it";
    ::close(fd);
    out->clear();
    return false;
  }
  ::close(fd);
  return true;
}

int open_append(const std::string& path, mode_t mode, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                        mode);
  if (fd < 0) {
    if (error) {
      const int e = errno;
      const Kind k = kind_of(path);  // a FIFO without a reader gives ENXIO: name what it is
      errno = e;
      *error = k != Kind::kMissing && k != Kind::kRegular && k != Kind::kDirectory
                   ? path + " is a " + to_string(k) + ", not a regular file"
                   : sys("cannot open", path);
    }
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    if (error) *error = sys("cannot stat", path);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    if (error)
      *error = !S_ISREG(st.st_mode) ? path + " is a " + to_string(kind_of_mode(st.st_mode)) + ", not a regular file"
                                    : path + " is owned by another user";
    ::close(fd);
    return -1;
  }
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

bool check_directory(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = errno == ENOTDIR ? path + " is not a directory" : sys("cannot open", path);
    return false;
  }
  ::close(fd);
  return true;
}

}  // namespace scout::safe
