// `scout run [--job ID] [--store PATH] [observer flags] -- COMMAND...`: runs COMMAND (e.g.
// torchrun ...) under scout: starts scout-observer for the job, sets NCCL_PROFILER_PLUGIN and
// SCOUT_JOB_ID for COMMAND, waits for it, stops the observer with SIGTERM (it makes a final
// pass and flushes the store), prints `scout status`, and exits with COMMAND's exit status.
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "observer/cli/common.h"
#include "observer/store/paths.h"
#include "observer/store/sqlite.h"
#include "scout/config.h"

namespace scout::cli {
namespace {

constexpr const char* kObserverName = "scout-observer";
constexpr const char* kPluginName = "libnccl-profiler-scout.so";

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

bool is_executable(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// <bindir>/scout-observer, else the first scout-observer on PATH.
std::string find_observer(const std::string& bindir) {
  std::string next = bindir + "/" + kObserverName;
  if (is_executable(next)) return next;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t colon = dirs.find(':', pos);
    if (colon == std::string::npos) colon = dirs.size();
    std::string d = dirs.substr(pos, colon - pos);
    if (!d.empty() && is_executable(d + "/" + kObserverName)) return d + "/" + kObserverName;
    pos = colon + 1;
  }
  throw UsageError(std::string(kObserverName) + " not found next to scout (" + bindir +
                   ") nor on PATH");
}

// NCCL_PROFILER_PLUGIN if already set, else <bindir>/../lib/libnccl-profiler-scout.so (the build
// tree and the installed layout PREFIX/bin + PREFIX/lib).
std::string find_plugin(const std::string& bindir) {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env && *env) return env;
  std::string p = bindir + "/../lib/" + kPluginName;
  char real[PATH_MAX];
  if (::realpath(p.c_str(), real) != nullptr) return real;
  throw UsageError(std::string(kPluginName) + " not found at " + p +
                   " (set NCCL_PROFILER_PLUGIN to its path)");
}

// fork + exec; the child gets its own process group when `own_group`. Returns the pid; an exec
// failure makes the child print one line and exit 127.
pid_t spawn(const std::vector<std::string>& argv, bool own_group) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw UsageError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    if (own_group) ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    ::execvp(args[0], args.data());
    std::string msg = "scout: cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
    ssize_t ignored = ::write(2, msg.data(), msg.size());
    (void)ignored;
    ::_exit(127);
  }
  return pid;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Stops the observer: SIGTERM, then SIGKILL after timeout_s. Returns its wait status, or -1
// when it had already been reaped.
int stop_observer(pid_t pid, double timeout_s) {
  ::kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::cerr << "scout: observer did not stop within " << timeout_s << " s; killing it\n";
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

int cmd_run(const RunOptions& o) {
  if (o.command.empty()) throw UsageError("scout run: no COMMAND given (scout run [flags] -- COMMAND...)");
  config::Config cfg = config::load();
  const std::string job = o.where.job.empty() ? store::resolve_job_id(cfg.job_id) : o.where.job;
  StoreOptions where = o.where;
  where.job = job;
  const std::string store = store_path(where);
  const std::string bindir = self_dir();
  const std::string observer = find_observer(bindir);
  const std::string plugin = find_plugin(bindir);

  ::setenv("SCOUT_JOB_ID", job.c_str(), 1);
  ::setenv("NCCL_PROFILER_PLUGIN", plugin.c_str(), 1);

  std::vector<std::string> obs_argv = {observer, "--job", job, "--store", store};
  obs_argv.insert(obs_argv.end(), o.observer_args.begin(), o.observer_args.end());
  // The observer runs in its own process group: a Ctrl-C meant for COMMAND must not stop it
  // before its final pass.
  pid_t obs_pid = spawn(obs_argv, /*own_group=*/true);

  // Ctrl-C reaches COMMAND through the terminal's process group; SIGTERM/SIGHUP sent to scout
  // (e.g. by a batch system) are forwarded to it.
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
  ::signal(SIGINT, SIG_IGN);

  pid_t cmd_pid = spawn(o.command, /*own_group=*/false);
  g_child = cmd_pid;

  int command_status = 0;
  bool observer_reaped = false;
  while (true) {
    int st = 0;
    pid_t r = ::waitpid(-1, &st, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (r == cmd_pid) {
      command_status = st;
      break;
    }
    if (r == obs_pid) {
      observer_reaped = true;
      std::cerr << "scout: " << kObserverName << " exited early (status " << exit_code(st)
                << "); COMMAND keeps running without it\n";
    }
  }
  g_child = 0;
  ::signal(SIGINT, SIG_DFL);

  if (!observer_reaped) {
    int st = stop_observer(obs_pid, o.stop_timeout_s);
    if (st >= 0 && exit_code(st) != 0) {
      std::cerr << "scout: " << kObserverName << " exited with status " << exit_code(st) << "\n";
    }
  }

  int rc = exit_code(command_status);
  try {
    StoreOptions read;
    read.store = store;
    auto rd = open_store(read);
    cmd_status(*rd, StatusOptions{}, std::cout);
  } catch (const std::exception& e) {
    std::cerr << "scout: " << e.what() << "\n";
  }
  std::cout.flush();
  return rc;
}

}  // namespace scout::cli
