// Test helper: runs a program with extra environment variables, capturing stdout and stderr,
// in the foreground (run_process) or the background (Subprocess).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace scout::testing {

struct ProcessResult {
  int exit_code = -1;    // exit status, or 128 + signal if it was killed
  std::string out, err;  // everything it wrote to stdout / stderr
  double seconds = 0;    // wall time
};

// A child process started with argv[0] as the program; `env` entries are added to (or replace
// those of) this process's environment; an empty value removes the variable.
class Subprocess {
 public:
  Subprocess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});
  ~Subprocess();  // kills (SIGKILL) and reaps the child if it still runs
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void signal(int sig);
  // Waits until `timeout_s` after its start (then SIGKILLs it) and returns what it did.
  ProcessResult wait(double timeout_s);
  // Waits up to `seconds` from now (then SIGKILLs it): for a process already signalled, how long
  // its stop may take whatever it ran before.
  ProcessResult wait_from_now(double seconds);
  // signal(sig), then wait_from_now(grace_s).
  ProcessResult stop(int sig, double grace_s);
  // What it has written to stdout so far.
  std::string out_so_far() const;

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_, dir_;
  double start_ = 0;
  bool reaped_ = false;
  int status_ = 0;
};

// Runs to completion (or `timeout_s`, then SIGKILL).
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                          double timeout_s = 60);

// What shell text run by run_shell did: its exit status (-1 when it did not exit normally) and
// everything it wrote to stdout / stderr.
struct ShellResult {
  int rc = -1;
  std::string out, err;
};

// Runs the shell text `cmd` (/bin/sh, as std::system runs it) to completion, its stdout and stderr
// captured in `dir`/stdout and `dir`/stderr (overwritten). For commands whose shell syntax is part
// of the test (pipes, redirections, `cd`, variables).
ShellResult run_shell(const std::string& dir, const std::string& cmd);

// The whole content of the file at `path` ("" when it cannot be read).
std::string slurp(const std::string& path);

}  // namespace scout::testing
