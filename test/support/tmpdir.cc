#include "test/support/tmpdir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace scout::testing {

TempDir::TempDir(const std::string& base) {
  std::string root = base;
  if (root.empty()) root = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string tmpl = root + "/scout-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed in " + root);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string build_path(const std::string& rel) {
  const char* env = std::getenv("SCOUT_BUILD_DIR");
  std::string dir = env && *env ? env : SCOUT_BUILD_DIR;
  return dir + "/" + rel;
}

std::string source_path(const std::string& rel) { return std::string(SCOUT_SOURCE_DIR) + "/" + rel; }

}  // namespace scout::testing
