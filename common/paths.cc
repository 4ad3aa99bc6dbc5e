#include "common/paths.h"

#include <cstdlib>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "scout/shm_format.h"

namespace scout::shm {

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string encode_component(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (ok) {
      out.push_back(ch);
    } else {
      out.push_back('_');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (out.empty()) return "_";
  if (out.size() > kMaxComponentChars) {
    static_assert(kMaxComponentChars > 18);
    uint64_t h = fnv1a64(s);
    out.resize(kMaxComponentChars - 18);
    out += "_h";
    for (int i = 15; i >= 0; --i) out.push_back(kHex[(h >> (4 * i)) & 15]);
  }
  return out;
}

std::string segment_name(std::string_view job, std::string_view host, int pid) {
  return std::string(kSegmentPrefix) + encode_component(job) + "." + encode_component(host) + "." + std::to_string(pid);
}

bool parse_segment_name(std::string_view name, std::string* job, std::string* host, int* pid) {
  std::string_view prefix = kSegmentPrefix;
  if (name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  size_t a = name.find('.');
  if (a == std::string_view::npos) return false;
  size_t b = name.find('.', a + 1);
  if (b == std::string_view::npos || name.find('.', b + 1) != std::string_view::npos) return false;
  std::string_view pid_text = name.substr(b + 1);
  if (pid_text.empty() || pid_text.size() > 10) return false;
  long v = 0;
  for (char c : pid_text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v <= 0 || v > 0x7fffffff) return false;
  if (job) *job = std::string(name.substr(0, a));
  if (host) *host = std::string(name.substr(a + 1, b - a - 1));
  if (pid) *pid = static_cast<int>(v);
  return true;
}

std::vector<std::string> list_segments(const std::string& dir, std::string_view job, std::string_view host) {
  std::vector<std::string> out;
  std::string prefix = std::string(kSegmentPrefix) + encode_component(job) + ".";
  if (!host.empty()) prefix += encode_component(host) + ".";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!parse_segment_name(name, nullptr, nullptr, nullptr)) continue;
    out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string shm_dir_problem(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return "segment directory " + dir + " (SCOUT_SHM_DIR): " + std::strerror(errno) +
           "; the plugin cannot create segments";
  }
  if (!S_ISDIR(st.st_mode)) return "segment directory " + dir + " (SCOUT_SHM_DIR) is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return "segment directory " + dir + " (SCOUT_SHM_DIR) is not writable (" + std::strerror(errno) +
           "); the plugin cannot create segments";
  }
  // Full (ENOSPC at the plugin's posix_fallocate): less room than the smallest segment.
  struct statvfs vfs;
  constexpr uint64_t kMinSegmentBytes = 1u << 20;
  if (::statvfs(dir.c_str(), &vfs) == 0 && uint64_t(vfs.f_bavail) * vfs.f_frsize < kMinSegmentBytes) {
    return "segment directory " + dir + " (SCOUT_SHM_DIR) is full (" +
           std::to_string(uint64_t(vfs.f_bavail) * vfs.f_frsize) +
           " bytes free): the plugin cannot create segments (No space left on device)";
  }
  return "";
}

}  // namespace scout::shm

namespace scout::store {

std::string default_store_path(std::string_view state_dir, std::string_view job, int node_rank, std::string* error) {
  auto fail = [&](const char* why) {
    if (error) *error = why;
    return std::string();
  };
  if (state_dir.empty()) return fail("empty state directory (SCOUT_STATE_DIR)");
  if (job.empty()) return fail("empty job id");
  if (node_rank < 0) return fail("negative node rank");
  std::string dir(state_dir);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/" + shm::encode_component(job) + "/node-" + std::to_string(node_rank) + ".db";
}

}  // namespace scout::store
