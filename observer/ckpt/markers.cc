#include "observer/ckpt/markers.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include <nlohmann/json.hpp>

#include "common/safe_file.h"
#include "common/utf8.h"

namespace scout::ckpt {

namespace {

constexpr const char* kMegatronTracker = "latest_checkpointed_iteration.txt";
constexpr const char* kDeepSpeedLatest = "latest";
constexpr const char* kNemoUnfinished = "-unfinished";
constexpr const char* kCertificateName = "scout-certificate.json";
// Entries visited at most by the generic rule's walk of one directory.
constexpr int kMaxWalk = 10000;

int64_t ns_of(const struct stat& st) { return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec; }

// Wall ns of the last modification of the regular file `path` (not followed if a symlink); 0
// when it is missing or anything but a regular file.
int64_t file_mtime_ns(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return ns_of(st);
}

bool is_real_dir(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Name {
  std::string name;
  unsigned char type;  // DT_*
};

std::vector<Name> list(const std::string& dir) {
  std::vector<Name> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back({std::move(n), e->d_type});
  }
  ::closedir(d);
  std::sort(names.begin(), names.end(), [](const Name& a, const Name& b) { return a.name < b.name; });
  return names;
}

// The type of <dir>/<n.name>: d_type, else lstat (file systems that do not fill d_type).
unsigned char type_of(const std::string& dir, const Name& n) {
  if (n.type != DT_UNKNOWN) return n.type;
  struct stat st;
  if (::lstat((dir + "/" + n.name).c_str(), &st) != 0) return DT_UNKNOWN;
  if (S_ISDIR(st.st_mode)) return DT_DIR;
  if (S_ISREG(st.st_mode)) return DT_REG;
  if (S_ISLNK(st.st_mode)) return DT_LNK;
  return DT_FIFO;  // any other special file
}

// A small marker file, whitespace trimmed; "" when missing, not a regular file or too large.
std::string read_trimmed(const std::string& path) {
  std::string s, err;
  if (!safe::read_regular(path, kMaxTrackerBytes, &s, &err)) return "";
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

// Newest mtime of `path` and everything below it (bounded depth and count; symlinks not followed).
int64_t newest_mtime(const std::string& path, int depth, int* budget) {
  struct stat st;
  if (--*budget < 0 || ::lstat(path.c_str(), &st) != 0) return 0;
  int64_t t = ns_of(st);
  if (depth <= 0 || !S_ISDIR(st.st_mode)) return t;
  for (const Name& n : list(path)) {
    if (*budget < 0) break;
    t = std::max(t, newest_mtime(path + "/" + n.name, depth - 1, budget));
  }
  return t;
}

bool has_distcp(const std::string& dir) {
  for (const Name& n : list(dir))
    if (ends_with(n.name, ".distcp")) return true;
  return false;
}

// A run of digits as a step; -1 when empty or longer than 18 digits (would not fit).
int64_t parse_step(const std::string& digits) {
  if (digits.empty() || digits.size() > 18) return -1;
  int64_t v = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Step from a "...step=N..." name; -1 if none.
int64_t nemo_step(const std::string& name) {
  static const std::regex re("step=(\\d+)");
  std::smatch m;
  if (!std::regex_search(name, m, re)) return -1;
  return parse_step(m[1].str());
}

bool bookkeeping(const std::string& name) {
  return name == kMegatronTracker || name == kDeepSpeedLatest || name == "latest_universal" ||
         name == kCertificateName || name == "zero_to_fp32.py" || ends_with(name, kNemoUnfinished) ||
         ends_with(name, ".tmp") || name.empty() || name[0] == '.';
}

void complete_with(Entry* e, const std::string& marker, int64_t t) {
  if (t == 0) return;
  e->complete = true;
  e->marker = marker;
  e->marker_ns = t;
}

}  // namespace

bool plausible_name(const std::string& name) {
  std::string t = name;
  std::replace(t.begin(), t.end(), '\\', '_');  // a backslash is odd but printable (escaped)
  return is_printable(t);
}

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
  return parse_step(name.substr(begin, end - begin + 1));
}

std::vector<Entry> scan_root(const std::string& root, int64_t now_ns, const ScanOptions& o, ScanStats* stats) {
  static const std::regex megatron_re("iter_(\\d{7})");
  static const std::regex deepspeed_re("global_step(\\d+)");
  static const std::regex hf_re("checkpoint-(\\d+)");
  ScanStats local;
  ScanStats& st = stats ? *stats : local;
  st = ScanStats{};
  std::vector<Entry> out;
  // Candidate directories not known yet.
  std::vector<std::string> dirs;
  for (const Name& n : list(root)) {
    if (bookkeeping(n.name)) continue;
    if (!plausible_name(n.name)) {
      if (st.bad_names++ == 0) st.bad_name_example = n.name;
      continue;
    }
    if (type_of(root, n) != DT_DIR) {
      st.not_dirs++;
      continue;
    }
    if (o.known && o.known->count(root + "/" + n.name)) continue;
    dirs.push_back(n.name);
  }
  if (dirs.size() > o.max_new) {
    // Keep the newest: a flood of directories must not hide the checkpoint being written now.
    std::vector<std::pair<int64_t, std::string>> by_time;
    for (const std::string& n : dirs) {
      struct stat s;
      by_time.emplace_back(::lstat((root + "/" + n).c_str(), &s) == 0 ? ns_of(s) : 0, n);
    }
    std::sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    st.over_cap = int64_t(dirs.size() - o.max_new);
    by_time.resize(o.max_new);
    dirs.clear();
    for (auto& [t, n] : by_time) dirs.push_back(std::move(n));
    std::sort(dirs.begin(), dirs.end());
  }
  if (dirs.empty()) return out;
  const std::string tracker = read_trimmed(root + "/" + kMegatronTracker);
  const std::string ds_latest = read_trimmed(root + "/" + kDeepSpeedLatest);
  const int64_t tracker_ns = file_mtime_ns(root + "/" + kMegatronTracker);
  const int64_t ds_latest_ns = file_mtime_ns(root + "/" + kDeepSpeedLatest);
  // The tracker is written with a plain open/write (not atomic): an empty or partial read names
  // nothing this scan.
  const int64_t tracker_step =
      std::all_of(tracker.begin(), tracker.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })
          ? parse_step(tracker)
          : -1;
  for (const std::string& name : dirs) {
    const std::string path = root + "/" + name;
    Entry e;
    e.path = path;
    std::smatch m;
    if (std::regex_match(name, m, megatron_re)) {
      e.framework = "megatron";
      e.step = parse_step(m[1].str());
      if (const int64_t t = file_mtime_ns(path + "/metadata.json"))
        complete_with(&e, path + "/metadata.json", t);
      else if (tracker_step >= 0 && tracker_step == e.step)
        complete_with(&e, root + "/" + kMegatronTracker, tracker_ns);
    } else if (std::regex_match(name, m, deepspeed_re) || (!ds_latest.empty() && name == ds_latest)) {
      e.framework = "deepspeed";
      e.step = m.size() > 1 ? parse_step(m[1].str()) : last_number(name);
      if (ds_latest == name) complete_with(&e, root + "/" + kDeepSpeedLatest, ds_latest_ns);
    } else if (std::regex_match(name, m, hf_re)) {
      e.framework = "hf";
      e.step = parse_step(m[1].str());
      const std::string state = path + "/trainer_state.json";
      std::string text, err;
      if (safe::read_regular(state, kMaxStateBytes, &text, &err)) {
        nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_object()) {
          if (j.contains("global_step") && j["global_step"].is_number_integer())
            e.step = j["global_step"].get<int64_t>();
          complete_with(&e, state, file_mtime_ns(state));
        }
      }
    } else if (nemo_step(name) >= 0) {
      e.framework = "nemo";
      e.step = nemo_step(name);
      struct stat s;
      const bool unfinished = ::lstat((path + kNemoUnfinished).c_str(), &s) == 0;
      if (!unfinished) {
        if (!is_real_dir(path + "/weights")) {
          if (::lstat(path.c_str(), &s) == 0) complete_with(&e, path, ns_of(s));
        } else {
          complete_with(&e, path + "/weights/metadata.json", file_mtime_ns(path + "/weights/metadata.json"));
        }
      }
    } else if (file_mtime_ns(path + "/.metadata") != 0 || has_distcp(path)) {
      e.framework = "dcp";
      e.step = last_number(name);
      complete_with(&e, path + "/.metadata", file_mtime_ns(path + "/.metadata"));
    } else if (o.generic) {
      e.framework = "generic";
      e.step = last_number(name);
      int budget = kMaxWalk;
      const int64_t newest = newest_mtime(path, 4, &budget);
      if (newest != 0 && now_ns - newest >= o.quiet_ns) complete_with(&e, path, newest);
    } else {
      continue;  // no format's marker: not a checkpoint
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace scout::ckpt
