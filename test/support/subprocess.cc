#include "test/support/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace scout::testing {
namespace {

double now_s() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

}  // namespace

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ShellResult run_shell(const std::string& dir, const std::string& cmd) {
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const int st = std::system(("(" + cmd + ") >" + out + " 2>" + err).c_str());
  ShellResult r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

Subprocess::Subprocess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  char tmpl[] = "/tmp/scout-proc-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  out_path_ = dir_ + "/out";
  err_path_ = dir_ + "/err";
  std::vector<std::string> envs;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
  }
  for (const auto& [k, v] : env)
    if (!v.empty()) envs.push_back(k + "=" + v);
  std::vector<std::string> args = argv;
  std::vector<char*> av, ev;
  for (auto& a : args) av.push_back(a.data());
  av.push_back(nullptr);
  for (auto& e : envs) ev.push_back(e.data());
  ev.push_back(nullptr);
  start_ = now_s();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int o = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execve(av[0], av.data(), ev.data());
    ::_exit(127);
  }
}

Subprocess::~Subprocess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool Subprocess::running() {
  if (reaped_) return false;
  if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

void Subprocess::signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

std::string Subprocess::out_so_far() const { return slurp(out_path_); }

ProcessResult Subprocess::wait(double timeout_s) {
  ProcessResult r;
  const double deadline = start_ + timeout_s;
  while (running()) {
    if (now_s() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      reaped_ = true;
      break;
    }
    ::usleep(10000);
  }
  r.seconds = now_s() - start_;
  r.exit_code = WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  r.out = slurp(out_path_);
  r.err = slurp(err_path_);
  return r;
}

ProcessResult Subprocess::wait_from_now(double seconds) { return wait(now_s() - start_ + seconds); }

ProcessResult Subprocess::stop(int sig, double grace_s) {
  signal(sig);
  return wait_from_now(grace_s);
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          double timeout_s) {
  Subprocess p(argv, env);
  return p.wait(timeout_s);
}

}  // namespace scout::testing
