// libFuzzer target: checkpoint discovery (observer/ckpt/markers.h) and the files manifest
// (observer/ckpt/manifest.h) over a hostile checkpoint directory. The input describes up to 64
// entries of a small tree, each `kind byte, name length, name, content length, content`: a
// directory, a regular file with that content, a FIFO, or a symlink to the content (as a path,
// possibly absolute: /dev/zero). scan_root, take_manifest and compare_manifest must never crash,
// block or follow a link, and every entry reported must have a plausible name and be a directory
// inside the root. `make fuzz` runs it.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "observer/ckpt/manifest.h"
#include "observer/ckpt/markers.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* tmp = std::getenv("TMPDIR");
  static const std::string root = std::string(tmp && *tmp ? tmp : "/tmp") + "/scout-fuzz-ckpt." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root, ec);
  size_t p = 0;
  auto take = [&](size_t n) {
    std::string s(reinterpret_cast<const char*>(data) + p, std::min(n, size - p));
    p += s.size();
    return s;
  };
  for (int i = 0; i < 64 && p + 3 <= size; ++i) {
    const uint8_t kind = data[p++];
    std::string name = take(data[p++] % 48);
    const std::string content = take(p < size ? data[p++] : 0);
    for (char& c : name)
      if (c == '\0') c = '_';
    if (name.empty() || name == "." || name == ".." || name.find("..") != std::string::npos || name[0] == '/') continue;
    const std::string path = root + "/" + name;
    fs::create_directories(fs::path(path).parent_path(), ec);
    switch (kind % 4) {
      case 0: fs::create_directories(path, ec); break;
      case 1: std::ofstream(path, std::ios::binary) << content; break;
      case 2: ::mkfifo(path.c_str(), 0600); break;
      case 3: ::symlink(content.empty() ? "/dev/zero" : content.c_str(), path.c_str()); break;
    }
  }
  scout::ckpt::ScanOptions o;
  o.generic = size % 2 == 0;
  o.quiet_ns = 0;
  o.max_new = 16;
  scout::ckpt::ScanStats st;
  for (const scout::ckpt::Entry& e : scout::ckpt::scan_root(root, int64_t(1) << 62, o, &st)) {
    const std::string name = e.path.substr(root.size() + 1);
    if (e.path.compare(0, root.size() + 1, root + "/") != 0 || !scout::ckpt::plausible_name(name)) std::abort();
    struct stat s;
    if (::lstat(e.path.c_str(), &s) != 0 || !S_ISDIR(s.st_mode)) std::abort();
    const scout::ckpt::Manifest m = scout::ckpt::take_manifest(e.path);
    const scout::ckpt::Manifest back = scout::ckpt::manifest_from_json(scout::ckpt::to_json(m));
    if (!back.present) std::abort();
    (void)scout::ckpt::compare_manifest(e.path, back);
  }
  (void)scout::ckpt::take_manifest(root);
  return 0;
}
