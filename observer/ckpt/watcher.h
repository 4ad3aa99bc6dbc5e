// Watches checkpoint directories and reports each checkpoint once, when its marker appears
// (observer/ckpt/markers.h has the rules). inotify on the roots and on directories still being
// written makes a new marker visible at the next observer pass; a full scan every poll period
// runs regardless, because network file systems do not deliver other hosts' writes to inotify.
// Bounded whatever the roots hold: scan_root examines at most kMaxNewEntriesPerRoot new entries
// per root and scan, and at most kMaxEntryWatches incomplete entries are watched with inotify
// (the rest are seen by the full scans).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "observer/ckpt/markers.h"

namespace scout::ckpt {

// Incomplete checkpoint directories watched with inotify at most (beyond: polling only).
constexpr size_t kMaxEntryWatches = 256;

struct WatchOptions {
  std::vector<std::string> roots;     // --ckpt-dir / SCOUT_CKPT_DIR
  int64_t quiet_ns = 60'000'000'000;  // SCOUT_CKPT_QUIET_S: generic rule
  bool generic = false;               // SCOUT_CKPT_GENERIC: the generic rule at all
  int64_t poll_ns = 5'000'000'000;    // SCOUT_CKPT_POLL_S: full scan at least this often
  bool inotify = true;                // false: polling only
};

class Watcher {
 public:
  explicit Watcher(WatchOptions o);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Paths already reported (e.g. loaded from the store after a restart) are never reported again.
  void mark_known(const std::string& path) { known_.insert(path); }
  // Reported but not kept (the store rolled back the pass that recorded it): reported again.
  void forget(const std::string& path) { known_.erase(path); }

  // Checks the roots at wall time `now_ns`: scans when inotify saw a change, when a root
  // appeared (inotify on), when the poll period passed, or on the first call. Returns the
  // entries that became complete since the last report, in scan order. deepspeed and hf entries
  // are reported only once their contents did not change between two scans (their markers can
  // precede other ranks' last writes).
  std::vector<Entry> poll(int64_t now_ns);

  bool inotify_active() const { return fd_ >= 0; }
  uint64_t scans() const { return scans_; }

  // Lines about what the scans left out (names that are not printable UTF-8, files that are not
  // directories, entries beyond the per-scan cap), each said once per root and kind; the caller
  // logs them. Names in them are escaped (common/utf8.h printable).
  std::vector<std::string> take_notes();

 private:
  bool drain_events();
  // Adds inotify watches to roots that did not exist before (created after the observer
  // started); true when one was added: it is scanned at once, not a poll period later, or
  // DeepSpeed checkpoints whose `latest` moved on in between would never be seen complete.
  bool watch_new_roots();
  void watch(const std::string& dir);
  void note(const std::string& root, const ScanStats& st);

  WatchOptions o_;
  int fd_ = -1;
  std::map<std::string, int> watches_;  // dir -> watch descriptor
  std::set<std::string> known_;
  std::map<std::string, int64_t> settling_;  // path -> newest mtime at the previous scan
  std::set<std::string> said_;  // "<kind>|<root>" already noted
  std::vector<std::string> notes_;
  int64_t last_scan_ns_ = 0;
  uint64_t scans_ = 0;
};

}  // namespace scout::ckpt
