// scout-sim: an emulated multi-process NCCL training job that drives the profiler plugin
// exactly as NCCL 2.28.9 does, with injectable faults. Usage and semantics: docs/scout-sim.md.
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "test/sim/launcher.h"
#include "test/sim/options.h"
#include "test/sim/rank_job.h"

int main(int argc, char** argv) {
  scout::sim::SimOptions o;
  std::string message;
  switch (scout::sim::parse_options(argc, argv, &o, &message)) {
    case scout::sim::ParseStatus::kHelp: std::fputs(message.c_str(), stdout); return 0;
    case scout::sim::ParseStatus::kError: std::fprintf(stderr, "%s\n", message.c_str()); return scout::sim::kExitUsage;
    case scout::sim::ParseStatus::kOk: break;
  }
  if (o.is_worker()) return scout::sim::rank_main(o);
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) {
    std::perror("scout-sim: readlink /proc/self/exe");
    return scout::sim::kExitFailed;
  }
  exe[n] = '\0';
  return scout::sim::launch(o, exe);
}
