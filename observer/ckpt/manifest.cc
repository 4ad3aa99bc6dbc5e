#include "observer/ckpt/manifest.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "common/safe_file.h"
#include "common/utf8.h"
#include "observer/ckpt/sha256.h"

namespace scout::ckpt {

namespace {

int64_t ns_of(const struct stat& st) { return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec; }

// SHA-256 of the regular file `path` if it holds at most kHashMaxBytes; "" otherwise.
std::string small_file_sha256(const std::string& path) {
  std::string text, err;
  if (!safe::read_regular(path, kHashMaxBytes, &text, &err)) return "";
  return sha256_hex(text);
}

void walk(const std::string& root, const std::string& rel, int depth, const std::string& exclude, Manifest* m) {
  const std::string dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    if (rel.empty() && n == exclude) continue;
    if (m->files.size() >= kMaxFiles) {
      m->truncated = true;
      return;
    }
    const std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::lstat((root + "/" + r).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (depth + 1 >= kMaxDepth) {
        m->truncated = true;
        continue;
      }
      walk(root, r, depth + 1, exclude, m);
      continue;
    }
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) continue;  // FIFOs, devices: never opened
    ManifestFile f;
    f.path = r;
    f.link = S_ISLNK(st.st_mode);
    f.size = uint64_t(st.st_size);
    f.mtime_ns = ns_of(st);
    if (!f.link && f.size <= kHashMaxBytes) f.sha256 = small_file_sha256(root + "/" + r);
    if (!f.link) m->bytes += f.size;
    m->files.push_back(std::move(f));
  }
}

}  // namespace

Manifest take_manifest(const std::string& dir, const std::string& exclude) {
  Manifest m;
  m.present = true;
  walk(dir, "", 0, exclude, &m);
  std::sort(m.files.begin(), m.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  return m;
}

nlohmann::json to_json(const Manifest& m) {
  nlohmann::json files = nlohmann::json::array();
  for (const ManifestFile& f : m.files) files.push_back({utf8_clean(f.path), f.size, f.mtime_ns, f.sha256, f.link});
  return {{"count", m.files.size()}, {"bytes", m.bytes}, {"truncated", m.truncated}, {"files", files}};
}

Manifest manifest_from_json(const nlohmann::json& j) {
  Manifest m;
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array()) return m;
  for (const auto& f : j["files"]) {
    if (!f.is_array() || f.size() != 5 || !f[0].is_string() || !f[1].is_number_unsigned() ||
        !f[2].is_number_integer() || !f[3].is_string() || !f[4].is_boolean())
      return Manifest{};
    ManifestFile mf;
    mf.path = f[0].get<std::string>();
    mf.size = f[1].get<uint64_t>();
    mf.mtime_ns = f[2].get<int64_t>();
    mf.sha256 = f[3].get<std::string>();
    mf.link = f[4].get<bool>();
    m.files.push_back(std::move(mf));
  }
  if (j.contains("truncated") && j["truncated"].is_boolean()) m.truncated = j["truncated"].get<bool>();
  if (j.contains("bytes") && j["bytes"].is_number_unsigned()) m.bytes = j["bytes"].get<uint64_t>();
  m.present = true;
  return m;
}

std::string compare_manifest(const std::string& dir, const Manifest& recorded, const std::string& exclude) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0)
    return "the checkpoint directory " + printable(dir) + " is missing (" + std::strerror(errno) + ")";
  if (!S_ISDIR(st.st_mode)) return printable(dir) + " is no longer a directory";
  if (!recorded.present) return "";
  const Manifest now = take_manifest(dir, exclude);
  std::map<std::string, const ManifestFile*> have;
  for (const ManifestFile& f : now.files) have[utf8_clean(f.path)] = &f;
  for (const ManifestFile& r : recorded.files) {
    auto it = have.find(r.path);
    const std::string name = printable(r.path);
    if (it == have.end()) {
      if (recorded.truncated) continue;  // beyond the walk's bound when recorded: not checked
      return name + " is missing";
    }
    const ManifestFile& f = *it->second;
    if (f.link != r.link)
      return name + " changed kind (" + (r.link ? "symlink" : "file") + " -> " + (f.link ? "symlink" : "file") + ")";
    if (f.size != r.size)
      return name + " changed size (" + std::to_string(r.size) + " -> " + std::to_string(f.size) + " bytes)";
    if (f.mtime_ns != r.mtime_ns) return name + " was modified after it was certified";
    if (!r.sha256.empty() && f.sha256 != r.sha256) return name + " changed content (SHA-256 differs)";
    have.erase(it);
  }
  if (!have.empty() && !recorded.truncated && !now.truncated)
    return printable(have.begin()->first) + " was added after the checkpoint was certified";
  return "";
}

}  // namespace scout::ckpt
