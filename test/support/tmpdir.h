// Test helper: a fresh temporary directory removed (recursively) when the object dies.
#pragma once

#include <string>

namespace scout::testing {

class TempDir {
 public:
  // Creates a directory under `base` (default: /dev/shm if writable, else /tmp).
  explicit TempDir(const std::string& base = "");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Path of a built artifact: SCOUT_BUILD_DIR (environment, else the compile-time default) + rel.
std::string build_path(const std::string& rel);
// Path inside the source tree.
std::string source_path(const std::string& rel);

}  // namespace scout::testing
