#include "observer/replay/channel.h"

#include "common/clock.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace scout::obs {
namespace {

using shm::mono_ns;

std::string seconds(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f s", double(ns) / 1e9);
  return b;
}

}  // namespace

ReplayChannel::~ReplayChannel() { stop(); }

bool ReplayChannel::start(std::string* error) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  std::vector<char*> args;
  for (std::string& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    *error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    dup2(in[0], 0);
    dup2(out[1], 1);
    execv(args[0], args.data());
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  pid_ = pid;
  inbuf_.clear();
  starts_++;
  return true;
}

void ReplayChannel::kill_and_reap(std::string* why) {
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  to_child_ = from_child_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    if (waitpid(pid_, &st, 0) == pid_ && why && why->empty()) {
      if (WIFSIGNALED(st))
        *why = "scout-replay exited (signal " + std::to_string(WTERMSIG(st)) + ")";
      else if (WIFEXITED(st))
        *why = "scout-replay exited (status " + std::to_string(WEXITSTATUS(st)) + ")";
    }
  }
  pid_ = 0;
}

bool ReplayChannel::call(const nlohmann::json& req, nlohmann::json* answer, int64_t timeout_ns, std::string* error,
                         const std::atomic<bool>* cancel) {
  if (pid_ == 0 && !start(error)) return false;
  const int64_t deadline = mono_ns() + timeout_ns;
  std::string line = req.dump() + "\n";
  size_t off = 0;
  std::string why;
  while (off < line.size()) {
    ssize_t n = ::write(to_child_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = "scout-replay closed its input";
      break;
    }
    off += size_t(n);
  }
  while (why.empty()) {
    size_t nl = inbuf_.find('\n');
    if (nl != std::string::npos) {
      std::string got = inbuf_.substr(0, nl);
      inbuf_.erase(0, nl + 1);
      *answer = nlohmann::json::parse(got, nullptr, false);
      if (answer->is_object()) return true;
      why = "scout-replay answered something that is not JSON";
      break;
    }
    const int64_t left = deadline - mono_ns();
    if (left <= 0) {
      why = "scout-replay did not answer within " + seconds(timeout_ns) + " (killed)";
      break;
    }
    if (cancel && cancel->load()) {
      why = "preempted (scout-replay killed)";
      break;
    }
    pollfd p{from_child_, POLLIN, 0};
    int r = ::poll(&p, 1, int(std::min<int64_t>(left / 1'000'000 + 1, cancel ? 50 : 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[65536];
    ssize_t n = ::read(from_child_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the process is gone
    inbuf_.append(buf, size_t(n));
  }
  std::string exit_why;
  kill_and_reap(&exit_why);
  *error = why.empty() ? (exit_why.empty() ? "scout-replay closed its output" : exit_why) : why;
  return false;
}

void ReplayChannel::stop() {
  if (pid_ == 0) return;
  nlohmann::json bye;
  std::string err;
  if (call({{"op", "quit"}}, &bye, 1'000'000'000, &err)) {
    int st;
    ::close(to_child_);
    ::close(from_child_);
    to_child_ = from_child_ = -1;
    bool reaped = false;
    for (int i = 0; i < 100 && !reaped; ++i) {
      reaped = waitpid(pid_, &st, WNOHANG) == pid_;
      if (!reaped) usleep(10000);
    }
    if (reaped) pid_ = 0;  // never signal a reaped pid: it may belong to another process now
    std::string ignored;
    kill_and_reap(&ignored);
  }
}

}  // namespace scout::obs
