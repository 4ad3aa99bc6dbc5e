// The observer's end of its scout-replay process (docs/replay.md, "Supervision"): starts the
// program with pipes on its stdin/stdout, sends one JSON request line and waits for one answer
// line with a deadline. A program that does not answer in time is killed (SIGKILL); one that
// exits or answers garbage is reaped; either way the request fails with the reason and the next
// request starts a fresh process. The child dies with the observer (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::obs {

class ReplayChannel {
 public:
  // argv[0] is the program path.
  explicit ReplayChannel(std::vector<std::string> argv) : argv_(std::move(argv)) {}
  ~ReplayChannel();
  ReplayChannel(const ReplayChannel&) = delete;
  ReplayChannel& operator=(const ReplayChannel&) = delete;

  // Sends `req` and reads the answer within `timeout_ns`. False with *error ("scout-replay did
  // not answer within 30.0 s (killed)", "scout-replay exited (signal 9)", ...). `cancel` (may be
  // null) is looked at every 50 ms while waiting: once true the process is killed and the call
  // fails with "preempted (scout-replay killed)".
  bool call(const nlohmann::json& req, nlohmann::json* answer, int64_t timeout_ns, std::string* error,
            const std::atomic<bool>* cancel = nullptr);
  // Asks the process to quit and reaps it (kills it after 1 s).
  void stop();
  // The running process, 0 if none.
  pid_t pid() const { return pid_; }
  // Processes started so far.
  int starts() const { return starts_; }

 private:
  bool start(std::string* error);
  void kill_and_reap(std::string* why);

  std::vector<std::string> argv_;
  pid_t pid_ = 0;
  int to_child_ = -1, from_child_ = -1;
  std::string inbuf_;
  int starts_ = 0;
};

}  // namespace scout::obs
