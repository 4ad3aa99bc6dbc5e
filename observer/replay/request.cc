#include "observer/replay/request.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <tuple>

#include <nlohmann/json.hpp>

namespace scout::obs {
namespace {

constexpr size_t kMaxRequestBytes = 64 * 1024;

std::string dir_of(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? "." : s == 0 ? "/" : path.substr(0, s);
}

std::string base_of(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

bool parse_request(const std::string& text, ReplayRequest* out, std::string* why) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return *why = "not a JSON object", false;
  ReplayRequest r;
  if (!j.contains("id") || !j["id"].is_string() || !valid_request_id(j["id"].get<std::string>()))
    return *why = "no valid id", false;
  r.id = j["id"].get<std::string>();
  if (j.contains("ranks")) {
    if (!j["ranks"].is_array() || j["ranks"].size() > 65536) return *why = "ranks is not a list", false;
    for (const auto& v : j["ranks"]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 24))
        return *why = "ranks holds a value that is not a global rank", false;
      r.ranks.push_back(v.get<int>());
    }
  }
  if (j.contains("recipes")) {
    if (!j["recipes"].is_array()) return *why = "recipes is not a list", false;
    for (const auto& v : j["recipes"]) {
      if (!v.is_string() || (v != "gemm" && v != "coll" && v != "link"))
        return *why = "recipes holds a kind other than gemm, coll, link", false;
      r.recipes.push_back(v.get<std::string>());
    }
  }
  *out = std::move(r);
  return true;
}

}  // namespace

bool valid_request_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '-'; });
}

std::string replay_request_prefix(const std::string& store_path) { return store_path + ".replay-request."; }

bool write_replay_request(const std::string& prefix, const ReplayRequest& r, std::string* error) {
  if (!valid_request_id(r.id)) return *error = "invalid request id '" + r.id + "'", false;
  nlohmann::json j = {{"id", r.id}, {"ranks", r.ranks}, {"recipes", r.recipes}};
  const std::string text = j.dump() + "\n";
  const std::string path = prefix + r.id + ".json", tmp = prefix + r.id + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return *error = "cannot create " + tmp + ": " + std::strerror(errno), false;
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::optional<ReplayRequest> take_replay_request(const std::string& prefix, std::string* error) {
  const std::string dir = dir_of(prefix), stem = base_of(prefix);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return std::nullopt;
  std::vector<std::tuple<int64_t, std::string>> found;  // (mtime ns, name)
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= stem.size() + 5 || name.compare(0, stem.size(), stem) != 0 ||
        name.compare(name.size() - 5, 5, ".json") != 0)
      continue;
    struct stat st;
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    // A directory named like a request is not one: it cannot be removed, so taking it would
    // block every later request and be reported at every pass. Ignored.
    if (S_ISDIR(st.st_mode)) continue;
    found.emplace_back(int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec, name);
    if (found.size() >= 1024) break;
  }
  ::closedir(d);
  std::sort(found.begin(), found.end());
  for (const auto& [mtime, name] : found) {
    const std::string path = dir + "/" + name;
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    std::string why;
    std::string text;
    struct stat st;
    if (fd < 0) {
      why = std::string("cannot open: ") + std::strerror(errno);
    } else if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      why = "not a regular file owned by this user";
    } else if (size_t(st.st_size) > kMaxRequestBytes) {
      why = "larger than 64 KiB";
    } else {
      text.resize(size_t(st.st_size));
      ssize_t n = ::read(fd, text.data(), text.size());
      if (n != ssize_t(text.size())) why = "short read";
    }
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());
    ReplayRequest r;
    if (why.empty() && parse_request(text, &r, &why)) return r;
    if (error) *error = "replay request " + path + " ignored: " + why;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace scout::obs
