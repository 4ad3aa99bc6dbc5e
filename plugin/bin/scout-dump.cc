// scout-dump: prints scout shared-memory segments as JSON lines (common/dump.h).
//
//   scout-dump [--no-ops] [--ring N] PATH...
//   scout-dump [--no-ops] [--ring N] --job ID [--dir DIR] [--host HOST]
//
// --job lists the segments of job ID in DIR (default: SCOUT_SHM_DIR, else /dev/shm), optionally
// of one host. Exit status: 0 all dumped; 1 a path could not be read (reason on stderr, the
// others are still dumped) or --job found nothing; 2 usage error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/dump.h"
#include "common/paths.h"
#include "scout/config.h"

namespace {

int usage(const char* msg) {
  if (msg) std::fprintf(stderr, "scout-dump: %s\n", msg);
  std::fprintf(stderr,
               "usage: scout-dump [--no-ops] [--ring N] PATH...\n"
               "       scout-dump [--no-ops] [--ring N] --job ID [--dir DIR] [--host HOST]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  scout::shm::DumpOptions opt;
  std::vector<std::string> paths;
  std::string job, host;
  // SCOUT_SHM_DIR through the registry (same default and validation as the plugin); its
  // messages about other variables do not concern a dump.
  std::string dir = scout::config::load({}, [](const std::string&) {}).shm_dir;
  bool have_job = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)name;
      return argv[++i];
    };
    if (a == "--no-ops") {
      opt.ops = false;
    } else if (a == "--ring") {
      const char* v = value("--ring");
      char* end = nullptr;
      if (!v || (opt.ring = std::strtol(v, &end, 10), *end != '\0') || opt.ring < 0) {
        return usage("--ring needs a ring number");
      }
    } else if (a == "--job") {
      const char* v = value("--job");
      if (!v) return usage("--job needs an id");
      job = v;
      have_job = true;
    } else if (a == "--dir") {
      const char* v = value("--dir");
      if (!v) return usage("--dir needs a directory");
      dir = v;
    } else if (a == "--host") {
      const char* v = value("--host");
      if (!v) return usage("--host needs a name");
      host = v;
    } else if (a == "-h" || a == "--help") {
      usage(nullptr);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else {
      paths.push_back(a);
    }
  }
  if (have_job == !paths.empty()) return usage("give either segment paths or --job");
  if (have_job) {
    paths = scout::shm::list_segments(dir, job, host);
    if (paths.empty()) {
      std::fprintf(stderr, "scout-dump: no segment of job %s in %s\n", job.c_str(), dir.c_str());
      return 1;
    }
  }
  int rc = 0;
  for (const auto& p : paths) {
    std::string err;
    if (!scout::shm::dump_segment_file(p, std::cout, opt, nullptr, &err)) {
      std::fprintf(stderr, "scout-dump: %s\n", err.c_str());
      rc = 1;
    }
  }
  std::cout.flush();
  return rc;
}
