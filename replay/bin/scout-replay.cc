// scout-replay: re-runs the job's GEMMs, links and collectives on this host's GPUs with known
// inputs, for its observer (docs/replay.md). Started and supervised by scout-observer, never by
// the training job; it talks to its observer over stdin/stdout (replay/server.h) and exits when
// stdin closes or on "quit".
//
//   scout-replay --job J [--shm-dir DIR] [--max-mem BYTES]
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "common/safe_file.h"
#include "replay/auto_backend.h"
#include "replay/server.h"

namespace {

// "<digits>[K|M|G|T]" (powers of 1024) as bytes in [1 MiB, 1 PiB]; false otherwise (not a number,
// negative, overflow, out of range).
bool parse_bytes(const std::string& v, int64_t* out) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') {
    if (n > (uint64_t(1) << 50)) return false;
    n = n * 10 + uint64_t(v[i++] - '0');
  }
  if (i == 0) return false;
  int shift = 0;
  if (i < v.size()) {
    const char* units = "KMGT";
    const char* u = std::strchr(units, v[i]);
    if (u == nullptr || *u == '\0' || i + 1 != v.size()) return false;
    shift = 10 * int(u - units + 1);
  }
  if (n > ((uint64_t(1) << 50) >> shift)) return false;
  n <<= shift;
  if (n < (uint64_t(1) << 20)) return false;
  *out = int64_t(n);
  return true;
}

// Reads one line of at most `cap` bytes into *line; a longer one is consumed to its end and
// reported through *too_long (its bytes are not kept). False at end of input.
bool read_line(std::istream& in, size_t cap, std::string* line, bool* too_long) {
  line->clear();
  *too_long = false;
  bool any = false;
  for (int c; (c = in.get()) != EOF;) {
    any = true;
    if (c == '\n') return true;
    if (line->size() < cap) {
      line->push_back(char(c));
    } else {
      *too_long = true;
    }
  }
  return any;
}

}  // namespace

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
    if (a == "--job") {
      job = value("--job");
    } else if (a == "--shm-dir") {
      dir = value("--shm-dir");
    } else if (a == "--max-mem") {
      const std::string v = value("--max-mem");
      if (!parse_bytes(v, &limits.max_mem)) {
        std::fprintf(stderr, "scout-replay: --max-mem '%s': expected bytes from 1M to 1P (digits, optional K/M/G/T)\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
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
  std::string why;
  if (!scout::safe::check_directory(dir, &why)) {
    std::fprintf(stderr, "scout-replay: --shm-dir: %s\n", why.c_str());
    return 2;
  }
  // Never record replay traffic as training traffic: the scout profiler plugin (and any other
  // NCCL plugin the job set) stays out of this process.
  unsetenv("NCCL_PROFILER_PLUGIN");
  unsetenv("NCCL_TUNER_PLUGIN");
  signal(SIGPIPE, SIG_IGN);
  std::ios::sync_with_stdio(false);
  scout::replay::AutoBackend backend(dir, job, limits);
  scout::replay::ReplayServer server(&backend, uint64_t(limits.max_mem));
  std::string line;
  bool quit = false, too_long = false;
  while (!quit && read_line(std::cin, scout::replay::kMaxLineBytes, &line, &too_long)) {
    if (too_long) {
      std::cout << R"({"op":"error","error":"request line longer than 1048576 bytes: refused"})" << std::endl;
      continue;
    }
    if (line.empty()) continue;
    std::cout << server.handle(line, &quit) << std::endl;
  }
  return 0;
}
