// `scout clean [--dir DIR] [--job ID]`: removes the segments whose writer is gone (pid and start
// time no longer match a running process), for runs without an observer to reclaim them.
// Segments of running processes, and files the reader refuses (another user's, FIFOs, ...),
// are left alone and listed. The emulated GPUs' device files scout-sim writes there go with their
// job, and half-created segments of gone processes are removed (observer/cli/clean_files.h).
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/paths.h"
#include "common/segment_reader.h"
#include "observer/cli/clean_files.h"
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
  const Removed emu = remove_emulated_devices(dir, o.job, out, &refused);
  const Removed half = remove_half_created_segments(dir, o.job, out);
  bytes += emu.bytes + half.bytes;
  out << "scout clean: " << removed << " segments"
      << (emu.files ? " and " + std::to_string(emu.files) + " emulated-device files" : std::string())
      << (half.files ? " and " + std::to_string(half.files) + " half-created ones" : std::string())
      << " removed (" << fmt_bytes(bytes) << "), " << kept
      << " of running processes kept, " << refused << " left alone, in " << dir << "\n";
  return kExitOk;
}

}  // namespace scout::cli
