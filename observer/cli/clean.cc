// `scout clean [--dir DIR] [--job ID]`: removes the segments whose writer is gone (pid and start
// time no longer match a running process), for runs without an observer to reclaim them.
// Segments of running processes, and files the reader refuses (another user's, FIFOs, ...),
// are left alone and listed. Half-created segments (`.scout.<job>.<host>.<pid>.new`, left when a
// process died while creating its segment, common/segment_writer.cc) of this user whose pid no
// longer runs are removed too.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/paths.h"
#include "common/segment_reader.h"
#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "scout/config.h"

namespace scout::cli {

int cmd_clean(const CleanOptions& o, std::ostream& out) {
  config::Config cfg = config::load();
  const std::string dir = o.dir.empty() ? cfg.shm_dir : o.dir;
  std::vector<std::string> paths;
  if (!o.job.empty()) {
    paths = shm::list_segments(dir, o.job);
  } else {
    DIR* d = ::opendir(dir.c_str());
    if (!d) throw UsageError("cannot list " + dir + ": " + std::strerror(errno));
    while (dirent* e = ::readdir(d)) {
      if (shm::parse_segment_name(e->d_name, nullptr, nullptr, nullptr)) paths.push_back(dir + "/" + e->d_name);
    }
    ::closedir(d);
    std::sort(paths.begin(), paths.end());
  }
  uint64_t removed = 0, bytes = 0, kept = 0, refused = 0;
  for (const std::string& p : paths) {
    std::string err;
    auto rd = shm::SegmentReader::open(p, &err);
    if (!rd) {
      ++refused;
      out << "left " << err << "\n";
      continue;
    }
    shm::SegmentInfo info = rd->info();
    if (rd->owner_alive()) {
      ++kept;
      continue;
    }
    rd.reset();
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
      ++refused;
      out << "left " << p << ": cannot remove: " << std::strerror(errno) << "\n";
      continue;
    }
    ++removed;
    uint64_t size = shm::segment_bytes(info.max_comms, info.ring_capacity);
    bytes += size;
    out << "removed " << p << " (pid " << info.owner_pid << " gone, " << fmt_bytes(size) << ")\n";
  }
  // Leftovers of a creation that never finished: regular files of ours whose pid is gone.
  uint64_t leftovers = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) names.push_back(e->d_name);
    ::closedir(d);
    for (const std::string& n : names) {
      constexpr const char* kSuffix = ".new";
      if (n.size() < 6 || n[0] != '.' || n.compare(n.size() - 4, 4, kSuffix) != 0) continue;
      std::string job, host;
      int pid = 0;
      if (!shm::parse_segment_name(n.substr(1, n.size() - 5), &job, &host, &pid)) continue;
      if (!o.job.empty() && job != o.job) continue;
      const std::string p = dir + "/" + n;
      struct stat st;
      if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
      if (pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH)) continue;  // its creator may still be at it
      if (::unlink(p.c_str()) == 0) {
        ++leftovers;
        bytes += uint64_t(st.st_size);
        out << "removed " << p << " (half-created by pid " << pid << ", gone)\n";
      }
    }
  }
  out << "scout clean: " << removed << " segments" << (leftovers ? " and " + std::to_string(leftovers) + " half-created ones" : "")
      << " removed (" << fmt_bytes(bytes) << "), " << kept
      << " of running processes kept, " << refused << " left alone, in " << dir << "\n";
  return kExitOk;
}

}  // namespace scout::cli
