// scout-replay: re-runs the job's GEMMs, links and collectives on this host's GPUs with known
// inputs, for its observer (docs/replay.md). Started and supervised by scout-observer, never by
// the training job; it talks to its observer over stdin/stdout (replay/server.h) and exits when
// stdin closes or on "quit".
//
//   scout-replay --job J [--shm-dir DIR] [--max-mem BYTES]
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "replay/auto_backend.h"
#include "replay/server.h"

int main(int argc, char** argv) {
  std::string job, dir = "/dev/shm";
  scout::replay::BackendLimits limits;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "scout-replay: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--job")
      job = value("--job");
    else if (a == "--shm-dir")
      dir = value("--shm-dir");
    else if (a == "--max-mem")
      limits.max_mem = std::stoll(value("--max-mem"));
    else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: scout-replay --job J [--shm-dir DIR] [--max-mem BYTES]\n"
          "Replays recipes for scout-observer over stdin/stdout (docs/replay.md).\n");
      return 0;
    } else {
      std::fprintf(stderr, "scout-replay: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  if (job.empty()) {
    std::fprintf(stderr, "scout-replay: --job is required\n");
    return 2;
  }
  // Never record replay traffic as training traffic: the scout profiler plugin (and any other
  // NCCL plugin the job set) stays out of this process.
  unsetenv("NCCL_PROFILER_PLUGIN");
  unsetenv("NCCL_TUNER_PLUGIN");
  signal(SIGPIPE, SIG_IGN);
  scout::replay::AutoBackend backend(dir, job, limits);
  scout::replay::ReplayServer server(&backend);
  std::string line;
  bool quit = false;
  while (!quit && std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::cout << server.handle(line, &quit) << std::endl;
  }
  return 0;
}
