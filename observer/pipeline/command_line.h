// scout-observer's command line (CLI11), separate from main() so tests can check it:
//
//   scout-observer [--job ID] [--store PATH] [--nodes N --node-rank K --rdzv file:DIR|redis:HOST:PORT]
//                  [--hang-timeout S] [--interval MS] [--once] [--host NAME] [--shm-dir DIR]
//                  [--equiv FILE] [--quiet] [--ckpt-dir DIR]... [--ckpt-write-certificate]
//
// Precedence: flag, then the SCOUT_* variable, then the built-in default (docs/observer.md).
//   --job       SCOUT_JOB_ID, then TORCHELASTIC_RUN_ID, SLURM_JOB_ID, "default" (as the plugin)
//   --store     <SCOUT_STATE_DIR>/<job>/node-<K>.db (common/paths.h)
//   --host      SCOUT_HOST, then gethostname(); "*" reads the segments of every host in --shm-dir
//               (several emulated hosts on one machine)
//   --shm-dir   SCOUT_SHM_DIR
//   --hang-timeout, --interval: SCOUT_OBSERVER_HANG_TIMEOUT_S, SCOUT_OBSERVER_INTERVAL_MS
//   --equiv     groups added to those of SCOUT_EQUIV
//   --ckpt-dir  replaces SCOUT_CKPT_DIR (':'-separated) when given; each made absolute from the
//               working directory, so stored checkpoint paths load from anywhere
// Several nodes (--nodes N > 1) form the observer network (docs/observer-network.md) and need
// --rdzv; node-rank 0 is the leader.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "observer/pipeline/options.h"
#include "scout/config.h"

namespace scout::obs {

struct CommandLine {
  ObserverOptions opt;
  std::string store;  // SQLite store path
  std::string rdzv;   // as given (validated)
  bool once = false;
  bool quiet = false;
  // Checkpoint certification (docs/certification.md): directories watched (--ckpt-dir,
  // repeatable; default: SCOUT_CKPT_DIR split at ':'), absolute and normalized, and
  // --ckpt-write-certificate.
  std::vector<std::string> ckpt_dirs;
  bool ckpt_write_certificate = false;
  // --ready-fd N: a descriptor (a pipe from `scout run`) told "ready" after the first pass, or
  // "ready store-unwritable" when it was kept in memory; -1: none.
  int ready_fd = -1;
};

enum class ParseResult { kOk, kHelp, kError };

// Parses argv over the defaults of `cfg`. kHelp: *message holds the help text (exit 0). kError:
// *message holds one line without a trailing newline (exit 2). `getenv_fn` (std::getenv when
// empty) is used for the job-id fallbacks; `hostname` for the host when neither --host nor
// SCOUT_HOST is set.
ParseResult parse_command_line(int argc, const char* const* argv, const config::Config& cfg, CommandLine* out,
                               std::string* message, const std::function<const char*(const char*)>& getenv_fn = {},
                               const std::string& hostname = "");

}  // namespace scout::obs
