// `scout clean`: the files other than segments that scout-sim and dead processes leave in the
// segment directory (docs/cli.md, "scout clean").
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace scout::cli {

struct Removed {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

// Removes from `dir` the emulated GPUs' device files (replay/emu_device.h,
// "scout-emugpu.<job>.<gpu>.json") of jobs none of whose segments in `dir` has a running writer,
// and the temporaries of those files whose writing process is gone; of job `job` only when it is
// not empty. Only regular files of this user are touched. One "removed PATH (why)" line per file
// on `out`; a file that cannot be removed gets a "left PATH: why" line and counts in *left.
Removed remove_emulated_devices(const std::string& dir, const std::string& job, std::ostream& out, uint64_t* left);

// Removes from `dir` the half-created segments `.scout.<job>.<host>.<pid>.new` (left when a
// process died while creating its segment, common/segment_writer.cc) that are regular files of
// this user and whose pid no longer runs; of job `job` only when it is not empty. One
// "removed PATH (half-created by pid P, gone)" line per file on `out`.
Removed remove_half_created_segments(const std::string& dir, const std::string& job, std::ostream& out);

}  // namespace scout::cli
