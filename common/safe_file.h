// Opening files named by someone else (an environment variable, a directory another user or a
// framework writes) without ever blocking or being redirected: O_NONBLOCK so a FIFO or a device
// cannot hang open(), O_NOFOLLOW so a final symlink is refused, then fstat so only what is
// expected (a regular file, a directory) is used, and a cap on what is read so /dev/zero or a
// huge file cannot exhaust memory. Used by the plugin (SCOUT_NET_DELEGATE, SCOUT_TRUTH,
// SCOUT_RECORD_CALLS, the segment directory), the observer's checkpoint watcher and replay
// request reader. Never throws beyond std::bad_alloc; allocates only the returned strings.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace scout::safe {

// What a path is, from lstat (a symlink is reported as such, not followed).
enum class Kind { kMissing, kRegular, kDirectory, kSymlink, kFifo, kDevice, kSocket, kOther };
Kind kind_of(const std::string& path);
// "regular file", "directory", "symlink", "FIFO", "device", "socket", "special file", "missing".
const char* to_string(Kind k);

// Opens `path` for reading (O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_NOCTTY|O_CLOEXEC; O_NOFOLLOW is left
// out when `follow` is true) and checks with fstat that it is a regular file. Returns the
// descriptor (blocking mode restored), or -1 with *error in words ("<path> is a FIFO, not a
// regular file", "cannot open <path>: <strerror>").
int open_regular(const std::string& path, std::string* error, bool follow = false);

// Reads the whole regular file `path` (opened as by open_regular) into *out. Fails with *error
// when it is not a regular file or holds more than `max_bytes` bytes (nothing is read then).
bool read_regular(const std::string& path, size_t max_bytes, std::string* out, std::string* error,
                  bool follow = false);

// Opens `path` for appending (O_WRONLY|O_APPEND|O_CREAT|O_NONBLOCK|O_NOFOLLOW|O_NOCTTY|O_CLOEXEC,
// created with `mode`) and checks that it is a regular file owned by this user. Returns the
// descriptor or -1 with *error. For files a training process appends to from the environment.
int open_append(const std::string& path, mode_t mode, std::string* error);

// True when `path` is a directory (followed when it is a symlink: a configured directory such as
// /dev/shm may be one) that open(O_DIRECTORY|O_NONBLOCK) accepts; else false with *error.
bool check_directory(const std::string& path, std::string* error);

}  // namespace scout::safe
