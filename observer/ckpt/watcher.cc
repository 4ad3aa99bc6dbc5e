#include "observer/ckpt/watcher.h"

#include <dirent.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/utf8.h"

namespace scout::ckpt {

namespace {

// Hash of the sizes and mtimes of the files directly in `dir`: changes
// while any rank is still writing.
int64_t content_signature(const std::string& dir);

}  // namespace

Watcher::Watcher(WatchOptions o) : o_(std::move(o)) {
  if (o_.inotify) fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  for (const std::string& r : o_.roots) watch(r);
}

Watcher::~Watcher() {
  if (fd_ >= 0) ::close(fd_);
}

void Watcher::watch(const std::string& dir) {
  if (fd_ < 0 || watches_.count(dir)) return;
  if (watches_.size() >= o_.roots.size() + kMaxEntryWatches) return;  // polled instead
  const int wd =
      ::inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_ONLYDIR);
  if (wd >= 0) watches_[dir] = wd;
}

bool Watcher::drain_events() {
  if (fd_ < 0) return false;
  bool any = false;
  alignas(inotify_event) char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: nothing more
    any = true;
  }
  return any;
}

bool Watcher::watch_new_roots() {
  if (fd_ < 0) return false;
  bool any = false;
  for (const std::string& r : o_.roots) {
    if (watches_.count(r)) continue;
    watch(r);
    any |= watches_.count(r) > 0;
  }
  return any;
}

std::vector<Entry> Watcher::poll(int64_t now_ns) {
  std::vector<Entry> out;
  const bool appeared = watch_new_roots();
  const bool changed = drain_events() || appeared;
  const bool due = scans_ == 0 || now_ns - last_scan_ns_ >= o_.poll_ns || !settling_.empty();
  if (!changed && !due) return out;
  last_scan_ns_ = now_ns;
  scans_++;
  ScanOptions so;
  so.quiet_ns = o_.quiet_ns;
  so.generic = o_.generic;
  so.known = &known_;
  for (const std::string& root : o_.roots) {
    ScanStats st;
    std::vector<Entry> entries = scan_root(root, now_ns, so, &st);
    note(root, st);
    for (Entry& e : entries) {
      if (known_.count(e.path)) continue;
      if (!e.complete) {
        watch(e.path);
        if (e.framework == "nemo") watch(e.path + "/weights");
        continue;
      }
      if (e.framework == "deepspeed" || e.framework == "hf") {
        const int64_t sig = content_signature(e.path);
        auto it = settling_.find(e.path);
        if (it == settling_.end() || it->second != sig) {
          settling_[e.path] = sig;
          continue;
        }
        settling_.erase(it);
      }
      auto w = watches_.find(e.path);
      if (w != watches_.end()) {
        ::inotify_rm_watch(fd_, w->second);
        watches_.erase(w);
      }
      known_.insert(e.path);
      out.push_back(std::move(e));
    }
  }
  return out;
}

void Watcher::note(const std::string& root, const ScanStats& st) {
  auto once = [&](const char* kind, const std::string& line) {
    if (said_.insert(std::string(kind) + "|" + root).second) notes_.push_back(line);
  };
  const std::string r = printable(root);
  if (st.bad_names > 0)
    once("names", "checkpoint directory " + r + ": " + std::to_string(st.bad_names) +
                      " entries whose names are not valid UTF-8 or hold control characters are ignored (e.g. '" +
                      printable(st.bad_name_example) + "')");
  if (st.not_dirs > 0)
    once("files", "checkpoint directory " + r + ": " + std::to_string(st.not_dirs) +
                      " files, symlinks or special files at its top level are not checkpoints (only directories "
                      "with a framework's completion marker are)");
  if (st.over_cap > 0)
    once("cap", "checkpoint directory " + r + ": more than " + std::to_string(kMaxNewEntriesPerRoot) +
                    " new directories; only the newest " + std::to_string(kMaxNewEntriesPerRoot) +
                    " are examined per scan (" + std::to_string(st.over_cap) + " left out)");
}

std::vector<std::string> Watcher::take_notes() {
  std::vector<std::string> v;
  v.swap(notes_);
  return v;
}

namespace {
int64_t content_signature(const std::string& dir) {
  uint64_t sig = 1469598103934665603ull;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      struct stat st;
      if (::lstat((dir + "/" + n).c_str(), &st) != 0) continue;
      for (uint64_t v : {uint64_t(st.st_size), uint64_t(st.st_mtim.tv_sec), uint64_t(st.st_mtim.tv_nsec)})
        sig = (sig ^ v) * 1099511628211ull;
    }
    ::closedir(d);
  }
  return int64_t(sig);
}
}  // namespace

}  // namespace scout::ckpt
