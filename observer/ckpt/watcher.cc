#include "observer/ckpt/watcher.h"

#include <dirent.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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
  for (const std::string& root : o_.roots) {
    for (Entry& e : scan_root(root, now_ns, o_.quiet_ns)) {
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

namespace {
int64_t content_signature(const std::string& dir) {
  uint64_t sig = 1469598103934665603ull;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      struct stat st;
      if (::stat((dir + "/" + n).c_str(), &st) != 0) continue;
      for (uint64_t v : {uint64_t(st.st_size), uint64_t(st.st_mtim.tv_sec), uint64_t(st.st_mtim.tv_nsec)})
        sig = (sig ^ v) * 1099511628211ull;
    }
    ::closedir(d);
  }
  return int64_t(sig);
}
}  // namespace

}  // namespace scout::ckpt
