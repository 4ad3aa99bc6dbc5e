// Opening another plugin's library (library.h).
#include "plugin/core/library.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/safe_file.h"

namespace scout::core {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Whether the file dlopen would read for `name` is not known to be anything but a regular file
// (false with *last_error when it is a FIFO, a device, a directory...).
bool loadable(const std::string& name, std::string* last_error) {
  if (name.find('/') != std::string::npos) {
    const int fd = safe::open_regular(name, last_error, /*follow=*/true);
    if (fd < 0) return false;
    ::close(fd);
    return true;
  }
  const char* dirs = std::getenv("LD_LIBRARY_PATH");
  for (std::string rest = dirs ? dirs : ""; !rest.empty();) {
    const size_t colon = rest.find(':');
    const std::string dir = rest.substr(0, colon);
    rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
    const std::string p = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      *last_error = p + " is not a regular file";
      return false;
    }
  }
  return true;
}

void* try_open(const std::string& name, std::string* last_error) {
  if (!loadable(name, last_error)) return nullptr;
  void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = ::dlerror();
    *last_error = e != nullptr ? e : "dlopen failed";
  }
  return h;
}

}  // namespace

void* open_library(const std::string& spec, const char* prefix, std::string* opened, std::string* error) {
  *opened = spec;
  void* h = try_open(spec, error);
  if (h == nullptr && spec.find('/') == std::string::npos && !(spec.rfind("lib", 0) == 0 && ends_with(spec, ".so"))) {
    *opened = prefix + spec + ".so";
    h = try_open(*opened, error);
  }
  return h;
}

uintptr_t library_of(const void* addr) {
  Dl_info info;
  if (::dladdr(addr, &info) == 0) return 0;
  return reinterpret_cast<uintptr_t>(info.dli_fbase);
}

}  // namespace scout::core
