// `scout dump PATH... | [--job ID] [--dir DIR] [--host H] [--no-ops] [--ring N]`: the records of
// shared-memory segments as JSON lines, through the plugin's dumper (common/dump.h; the same
// output as build/bin/scout-dump).
#include <iostream>

#include "common/dump.h"
#include "common/paths.h"
#include "observer/cli/common.h"
#include "scout/config.h"

namespace scout::cli {

int cmd_dump(const DumpOptions& o, std::ostream& out) {
  std::vector<std::string> paths = o.paths;
  if (paths.empty()) {
    config::Config cfg = config::load();
    const std::string job = o.job.empty() ? config::resolve_job_id(cfg.job_id) : o.job;
    const std::string dir = o.dir.empty() ? cfg.shm_dir : o.dir;
    paths = shm::list_segments(dir, job, o.host);
    if (paths.empty()) {
      throw UsageError("no segment of job " + job + (o.host.empty() ? "" : " on host " + o.host) + " in " + dir +
                       " (give segment paths, or --job ID [--dir DIR])");
    }
  } else if (!o.job.empty() || !o.dir.empty() || !o.host.empty()) {
    throw UsageError("give segment paths or --job/--dir/--host, not both");
  }
  shm::DumpOptions opt;
  opt.ops = !o.no_ops;
  opt.ring = o.ring;
  int rc = kExitOk;
  for (const auto& p : paths) {
    std::string err;
    if (!shm::dump_segment_file(p, out, opt, nullptr, &err)) {
      out.flush();
      std::cerr << "scout: " << err << "\n";
      rc = kExitUsage;
    }
  }
  out.flush();
  return rc;
}

}  // namespace scout::cli
