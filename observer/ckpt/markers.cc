#include "observer/ckpt/markers.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

namespace scout::ckpt {

namespace {

constexpr const char* kMegatronTracker = "latest_checkpointed_iteration.txt";
constexpr const char* kDeepSpeedLatest = "latest";
constexpr const char* kNemoUnfinished = "-unfinished";
constexpr const char* kCertificateName = "scout-certificate.json";

// Wall ns of the last modification of `path`; 0 when it does not exist.
int64_t mtime_ns(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> list(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Whole small file, whitespace trimmed; "" when missing.
std::string read_trimmed(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

// Newest mtime of `path` and everything below it (bounded depth).
int64_t newest_mtime(const std::string& path, int depth) {
  int64_t t = mtime_ns(path);
  if (depth <= 0 || !is_dir(path)) return t;
  for (const std::string& n : list(path)) t = std::max(t, newest_mtime(path + "/" + n, depth - 1));
  return t;
}

bool has_distcp(const std::string& dir) {
  for (const std::string& n : list(dir))
    if (ends_with(n, ".distcp")) return true;
  return false;
}

// Step from a "...step=N..." name; -1 if none.
int64_t nemo_step(const std::string& name) {
  static const std::regex re("step=(\\d+)");
  std::smatch m;
  if (!std::regex_search(name, m, re)) return -1;
  return std::stoll(m[1].str());
}

bool bookkeeping(const std::string& name) {
  return name == kMegatronTracker || name == kDeepSpeedLatest || name == "latest_universal" ||
         name == kCertificateName || name == "zero_to_fp32.py" || ends_with(name, kNemoUnfinished) ||
         ends_with(name, ".tmp") || name.empty() || name[0] == '.';
}

void complete_with(Entry* e, const std::string& marker) {
  const int64_t t = mtime_ns(marker);
  if (t == 0) return;
  e->complete = true;
  e->marker = marker;
  e->marker_ns = t;
}

}  // namespace

int64_t last_number(const std::string& name) {
  int64_t end = -1;
  for (int64_t i = int64_t(name.size()) - 1; i >= 0; --i) {
    if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      end = i;
      break;
    }
  }
  if (end < 0) return -1;
  int64_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  if (end - begin >= 18) return -1;
  return std::stoll(name.substr(begin, end - begin + 1));
}

std::vector<Entry> scan_root(const std::string& root, int64_t now_ns, int64_t quiet_ns) {
  static const std::regex megatron_re("iter_(\\d{7})");
  static const std::regex deepspeed_re("global_step(\\d+)");
  static const std::regex hf_re("checkpoint-(\\d+)");
  std::vector<Entry> out;
  const std::vector<std::string> names = list(root);
  const std::string tracker = read_trimmed(root + "/" + kMegatronTracker);
  const std::string ds_latest = read_trimmed(root + "/" + kDeepSpeedLatest);
  // The tracker is written with a plain open/write (not atomic): an empty or partial read names
  // nothing this scan.
  int64_t tracker_step = -1;
  if (!tracker.empty() && tracker.size() < 18 &&
      std::all_of(tracker.begin(), tracker.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    tracker_step = std::stoll(tracker);
  for (const std::string& name : names) {
    if (bookkeeping(name)) continue;
    const std::string path = root + "/" + name;
    const bool dir = is_dir(path);
    Entry e;
    e.path = path;
    std::smatch m;
    if (dir && std::regex_match(name, m, megatron_re)) {
      e.framework = "megatron";
      e.step = std::stoll(m[1].str());
      if (mtime_ns(path + "/metadata.json") != 0)
        complete_with(&e, path + "/metadata.json");
      else if (tracker_step >= 0 && tracker_step == e.step)
        complete_with(&e, root + "/" + kMegatronTracker);
    } else if (dir && (std::regex_match(name, m, deepspeed_re) || (!ds_latest.empty() && name == ds_latest))) {
      e.framework = "deepspeed";
      e.step = m.size() > 1 ? std::stoll(m[1].str()) : last_number(name);
      if (ds_latest == name) complete_with(&e, root + "/" + kDeepSpeedLatest);
    } else if (dir && std::regex_match(name, m, hf_re)) {
      e.framework = "hf";
      e.step = std::stoll(m[1].str());
      const std::string state = path + "/trainer_state.json";
      std::ifstream in(state);
      if (in) {
        nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
        if (j.is_object()) {
          if (j.contains("global_step") && j["global_step"].is_number_integer())
            e.step = j["global_step"].get<int64_t>();
          complete_with(&e, state);
        }
      }
    } else if (dir && nemo_step(name) >= 0) {
      e.framework = "nemo";
      e.step = nemo_step(name);
      const bool unfinished = mtime_ns(path + kNemoUnfinished) != 0;
      const bool weights = is_dir(path + "/weights");
      if (!unfinished) {
        if (!weights) {
          complete_with(&e, path);
        } else if (mtime_ns(path + "/weights/metadata.json") != 0) {
          complete_with(&e, path + "/weights/metadata.json");
        }
      }
    } else if (dir && (mtime_ns(path + "/.metadata") != 0 || has_distcp(path))) {
      e.framework = "dcp";
      e.step = last_number(name);
      complete_with(&e, path + "/.metadata");
    } else {
      e.framework = "generic";
      e.step = last_number(name);
      const int64_t newest = newest_mtime(path, 4);
      if (newest != 0 && now_ns - newest >= quiet_ns) {
        e.complete = true;
        e.marker = path;
        e.marker_ns = newest;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace scout::ckpt
