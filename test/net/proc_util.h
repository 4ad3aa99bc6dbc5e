// Helpers for observer-network tests that need real processes (one Gloo context per process, as
// on real nodes): fork N children, collect what each reports, kill stragglers; a redis-server
// on a free port; a file barrier that moves no bytes over the network.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace scout::net::testing {

struct ChildResult {
  int status = -1;     // exit code, or -signal
  std::string report;  // what the child's function returned
};

// Runs fn(rank) in `n` forked children. A child's exit code is 0 when fn returns normally;
// fn's returned string comes back in ChildResult::report. Children still running after `limit`
// are killed (status -9). Call before anything in the parent starts threads.
inline std::vector<ChildResult> run_processes(int n, const std::function<std::string(int)>& fn,
                                              std::chrono::seconds limit = std::chrono::seconds(60)) {
  std::vector<pid_t> pids(n);
  std::vector<int> fds(n);
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (::pipe(p) != 0) std::abort();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      std::string out;
      int code = 0;
      try {
        out = fn(r);
      } catch (const std::exception& e) {
        out = std::string("exception: ") + e.what();
        code = 2;
      }
      size_t off = 0;
      while (off < out.size()) {
        ssize_t w = ::write(p[1], out.data() + off, out.size() - off);
        if (w <= 0) break;
        off += size_t(w);
      }
      ::close(p[1]);
      ::_exit(code);
    }
    ::close(p[1]);
    pids[r] = pid;
    fds[r] = p[0];
    ::fcntl(fds[r], F_SETFL, O_NONBLOCK);
  }
  std::vector<ChildResult> res(n);
  std::vector<bool> done(n, false);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int left = n;
  while (left > 0) {
    for (int r = 0; r < n; ++r) {
      char buf[4096];
      for (ssize_t k; (k = ::read(fds[r], buf, sizeof(buf))) > 0;) res[r].report.append(buf, size_t(k));
      if (done[r]) continue;
      int st = 0;
      if (::waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        done[r] = true;
        --left;
        res[r].status = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < n; ++r) {
        if (!done[r]) ::kill(pids[r], SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < n; ++r) {
    char buf[4096];
    for (ssize_t k; (k = ::read(fds[r], buf, sizeof(buf))) > 0;) res[r].report.append(buf, size_t(k));
    ::close(fds[r]);
  }
  return res;
}

// Waits until all `n` processes have reached barrier `name` (files in `dir`; no network traffic).
inline void file_barrier(const std::string& dir, const std::string& name, int rank, int n) {
  const std::string mine = dir + "/" + name + "." + std::to_string(rank);
  int fd = ::open(mine.c_str(), O_CREAT | O_WRONLY, 0600);
  if (fd >= 0) ::close(fd);
  for (int r = 0; r < n; ++r) {
    const std::string f = dir + "/" + name + "." + std::to_string(r);
    struct stat st;
    while (::stat(f.c_str(), &st) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// A TCP port on 127.0.0.1 that was free a moment ago.
inline int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(s);
  return port;
}

inline bool port_accepts(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(s);
  return ok;
}

// The path of an executable found in PATH, or "".
inline std::string which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  p += ":/usr/sbin:/sbin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string cand = p.substr(start, end - start) + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

// A redis-server of our own on a free loopback port (or on `port`, e.g. to restart one that was
// killed), without persistence (a restart starts empty, as a redis without a disk does), stopped
// (SIGTERM, then SIGKILL) when the object dies. ok() is false when redis-server is missing or did
// not come up.
class RedisServer {
 public:
  explicit RedisServer(const std::string& dir, int port = -1) {
    const std::string exe = which("redis-server");
    if (exe.empty()) {
      why_ = "redis-server not found in PATH (scripts/install-deps.sh installs it)";
      return;
    }
    for (int attempt = 0; attempt < (port > 0 ? 100 : 5) && pid_ <= 0; ++attempt) {
      if (port > 0 && attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // port in TIME_WAIT
      port_ = port > 0 ? port : free_port();
      const std::string port = std::to_string(port_);
      pid_t pid = ::fork();
      if (pid == 0) {
        int devnull = ::open("/dev/null", O_WRONLY);
        ::dup2(devnull, 1);
        ::execl(exe.c_str(), exe.c_str(), "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                "no", "--dir", dir.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
      }
      for (int i = 0; i < 500; ++i) {
        if (port_accepts(port_)) {
          pid_ = pid;
          break;
        }
        int st;
        if (::waitpid(pid, &st, WNOHANG) == pid) break;  // exited (port taken?): try another
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (pid_ <= 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    if (pid_ <= 0) why_ = "redis-server did not start";
  }
  ~RedisServer() { stop(); }
  // Kills it at once (SIGKILL: no goodbye to its clients, its keys are gone).
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      for (int i = 0; i < 200; ++i) {
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  bool ok() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  const std::string& why() const { return why_; }

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  std::string why_;
};

}  // namespace scout::net::testing
