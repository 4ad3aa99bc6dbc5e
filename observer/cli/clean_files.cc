#include "observer/cli/clean_files.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "common/paths.h"
#include "common/segment_reader.h"
#include "replay/emu_device.h"

namespace scout::cli {
namespace {

// Whether a segment of `job` in `dir` has a running writer (pid and start time match).
bool job_running(const std::string& dir, const std::string& job) {
  for (const std::string& p : shm::list_segments(dir, job)) {
    std::string err;
    auto rd = shm::SegmentReader::open(p, &err);
    if (rd && rd->owner_alive()) return true;
  }
  return false;
}

bool pid_running(int pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

}  // namespace

Removed remove_emulated_devices(const std::string& dir, const std::string& job, std::ostream& out, uint64_t* left) {
  Removed r;
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::map<std::string, bool> running;  // by job
  for (const std::string& n : names) {
    std::string j, gpu;
    int tmp_pid = 0;
    if (!replay::parse_emu_device_name(n, &j, &gpu, &tmp_pid)) continue;
    if (!job.empty() && j != job) continue;
    const std::string p = dir + "/" + n;
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    std::string why;
    if (tmp_pid) {
      if (pid_running(tmp_pid)) continue;  // being written right now
      why = "unfinished emulated-device state of " + gpu + ", pid " + std::to_string(tmp_pid) + " gone";
    } else {
      auto it = running.find(j);
      if (it == running.end()) it = running.emplace(j, job_running(dir, j)).first;
      if (it->second) continue;
      why = "emulated-device state of " + gpu + ", job " + j + " not running";
    }
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
      ++*left;
      out << "left " << p << ": cannot remove: " << std::strerror(errno) << "\n";
      continue;
    }
    ++r.files;
    r.bytes += uint64_t(st.st_size);
    out << "removed " << p << " (" << why << ")\n";
  }
  return r;
}

Removed remove_half_created_segments(const std::string& dir, const std::string& job, std::ostream& out) {
  Removed r;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return r;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  constexpr std::string_view kSuffix = ".new";
  for (const std::string& n : names) {
    if (n.size() < 2 + kSuffix.size() || n[0] != '.' || n.compare(n.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
      continue;
    std::string njob, host;
    int pid = 0;
    if (!shm::parse_segment_name(n.substr(1, n.size() - 1 - kSuffix.size()), &njob, &host, &pid)) continue;
    if (!job.empty() && njob != job) continue;
    const std::string p = dir + "/" + n;
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH)) continue;  // its creator may still be at it
    if (::unlink(p.c_str()) == 0) {
      ++r.files;
      r.bytes += uint64_t(st.st_size);
      out << "removed " << p << " (half-created by pid " << pid << ", gone)\n";
    }
  }
  return r;
}

}  // namespace scout::cli
