// `scout run [--job ID] [--store PATH] [observer flags] -- COMMAND...`: runs COMMAND (e.g.
// torchrun ...) under scout: starts scout-observer for the job and waits for its first pass, sets
// NCCL_PROFILER_PLUGIN (moving another profiler plugin named there to SCOUT_PROFILER_DELEGATE) and
// SCOUT_JOB_ID for COMMAND, waits for it, stops the observer with SIGTERM
// (it makes a final pass and flushes the store), prints `scout status`, and exits with COMMAND's
// exit status, or 3 when COMMAND succeeded but findings could not be stored. COMMAND always runs:
// whatever keeps the observer from starting (a bad setting, a store it cannot open, no
// observer or plugin found) is said on stderr at once and the job runs unobserved.
// docs/cli.md, "scout run".
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <thread>

#include "common/clock.h"
#include "common/paths.h"
#include "common/segment_reader.h"
#include "observer/cli/common.h"
#include "observer/store/sqlite.h"
#include "scout/config.h"

namespace scout::cli {
namespace {

constexpr const char* kObserverName = "scout-observer";
// scout-observer's exit status when findings could not be stored (observer/bin/scout-observer.cc).
constexpr int kObserverUnstored = 3;
// scout run's exit status when COMMAND succeeded and findings could not be stored.
constexpr int kExitUnstored = 3;
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
  throw UsageError(std::string(kObserverName) + " not found next to scout (" + bindir + ") nor on PATH");
}

// <bindir>/../lib/libnccl-profiler-scout.so: the build tree and the installed layout PREFIX/bin +
// PREFIX/lib.
std::string bundled_plugin(const std::string& bindir) { return bindir + "/../lib/" + kPluginName; }

// Whether NCCL_PROFILER_PLUGIN's value `v` names scout's plugin: "scout", a path or soname ending in
// libnccl-profiler-scout.so, or the same file as `plugin`.
bool names_scout(const std::string& v, const std::string& plugin) {
  if (v == "scout") return true;
  const std::string base = v.substr(v.rfind('/') == std::string::npos ? 0 : v.rfind('/') + 1);
  if (base == kPluginName) return true;
  char a[PATH_MAX], b[PATH_MAX];
  return ::realpath(v.c_str(), a) != nullptr && ::realpath(plugin.c_str(), b) != nullptr && std::strcmp(a, b) == 0;
}

// The plugin COMMAND loads, and what becomes of a profiler plugin the environment already names:
// NCCL has one profiler slot (docs/nccl-notes.md §1.1), so another plugin in NCCL_PROFILER_PLUGIN
// becomes scout's delegate (SCOUT_PROFILER_DELEGATE, docs/plugin.md "A second profiler plugin"),
// said in one line. Returns scout's plugin path.
std::string choose_plugin(const std::string& bindir) {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  const std::string v = env != nullptr ? env : "";
  if (!v.empty() && names_scout(v, bundled_plugin(bindir))) return v;
  char real[PATH_MAX];
  if (::realpath(bundled_plugin(bindir).c_str(), real) == nullptr) {
    throw UsageError(std::string(kPluginName) + " not found at " + bundled_plugin(bindir) +
                     " (set NCCL_PROFILER_PLUGIN to its path)");
  }
  const std::string plugin = real;
  if (v.empty()) return plugin;
  std::string lower;
  for (char c : v) lower += char(std::tolower(static_cast<unsigned char>(c)));
  const char* have = std::getenv("SCOUT_PROFILER_DELEGATE");
  if (lower == "none") {
    std::cerr << "scout: NCCL_PROFILER_PLUGIN=" << v << " replaced by scout's plugin for this run\n";
  } else if (have != nullptr && *have) {
    std::cerr << "scout: NCCL_PROFILER_PLUGIN=" << v << " is not loaded: SCOUT_PROFILER_DELEGATE=" << have
              << " is scout's delegate already\n";
  } else {
    ::setenv("SCOUT_PROFILER_DELEGATE", v.c_str(), 1);
    std::cerr << "scout: NCCL_PROFILER_PLUGIN=" << v
              << " moved to SCOUT_PROFILER_DELEGATE: scout loads it and forwards every profiler event to it\n";
  }
  return plugin;
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
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// "run-20250131-120005-4242": a job id of this run alone, so running a demo again never mixes
// its findings with the previous run's.
std::string fresh_job_id() {
  time_t now = ::time(nullptr);
  struct tm tm;
  ::localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "run-%Y%m%d-%H%M%S", &tm);
  return std::string(buf) + "-" + std::to_string(::getpid());
}

// The job: --job, else the job of the environment (SCOUT_JOB_ID, TORCHELASTIC_RUN_ID,
// SLURM_JOB_ID: the same on every node of a job), else a fresh id.
std::string run_job_id(const RunOptions& o, const config::Config& cfg, bool* fresh) {
  *fresh = false;
  if (!o.where.job.empty()) return o.where.job;
  std::string env_job = config::resolve_job_id(cfg.job_id);
  if (env_job != "default" || !cfg.job_id.empty()) return env_job;
  *fresh = true;
  return fresh_job_id();
}

enum class Ready { kReady, kReadyUnwritable, kExited, kTimeout };

// Waits until the observer has made its first pass: it says "ready" on `ready_fd` (a pipe, so no
// disk is needed: a full or locked store must not hold COMMAND back), or its first pass is in
// `store` (the job header's started_ns is at or after `since_ns`: this observer, not an earlier
// run appending to the same store); or it exited (*status set), or `timeout_s` passed. COMMAND
// starts only then, so the observer sees the job from its first record and a SIGTERM at the end
// always finds its handler in place.
Ready wait_ready(pid_t pid, int ready_fd, const std::string& store, int64_t since_ns, double timeout_s, int* status) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string said;
  while (true) {
    if (ready_fd >= 0) {
      struct pollfd pfd = {ready_fd, POLLIN, 0};
      if (::poll(&pfd, 1, 10) > 0) {
        char buf[64];
        const ssize_t n = ::read(ready_fd, buf, sizeof(buf));
        if (n > 0) said.append(buf, size_t(n));
        if (said.find('\n') != std::string::npos)
          return said.find("store-unwritable") != std::string::npos ? Ready::kReadyUnwritable : Ready::kReady;
        if (n == 0) ready_fd = -1;  // closed without a word: it exited or is an older observer
      }
    }
    pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return Ready::kExited;
    struct stat st;
    if (::stat(store.c_str(), &st) == 0) {
      try {
        auto rd = store::StoreReader::open(store);
        std::optional<obs::JobInfo> job = rd->job();
        if (job && job->started_ns >= since_ns) return Ready::kReady;
      } catch (const std::exception&) {
        // Being created: not a complete store yet.
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return Ready::kTimeout;
    if (ready_fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// After the observer's final pass: unlinks the job's segments in `dir` whose owner process is
// gone (everything in them has been read, judged and stored), as the observer itself would after
// SCOUT_OBSERVER_RECLAIM_S, so runs do not fill /dev/shm. Segments of live processes and files
// that are not scout segments are left alone. Returns how many were removed.
int reclaim_segments(const std::string& dir, const std::string& job) {
  int removed = 0;
  for (const auto& path : shm::list_segments(dir, job)) {
    std::string err;
    auto seg = shm::SegmentReader::open(path, &err);
    if (!seg || seg->owner_alive()) continue;
    seg.reset();
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  return removed;
}

// Waits for COMMAND (`cmd_pid`); the observer (`obs_pid`) exiting meanwhile is said and marked in
// *observer_reaped. COMMAND's wait status.
int wait_command(pid_t cmd_pid, pid_t obs_pid, bool* observer_reaped) {
  while (true) {
    int st = 0;
    pid_t r = ::waitpid(-1, &st, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    if (r == cmd_pid) return st;
    if (r == obs_pid && obs_pid > 0) {
      *observer_reaped = true;
      std::cerr << "scout: " << kObserverName << " exited early (status " << exit_code(st)
                << "); COMMAND keeps running without it\n";
    }
  }
}

// Why execvp(3) could not start `cmd`, checked before anything starts (no observer, no store, no
// job for `scout jobs`): "" when it can; else "No such file or directory (relative to DIR)" for
// a path with a '/', "not found in PATH" for a bare name, or the access(2) error.
std::string command_problem(const std::string& cmd) {
  auto runnable = [](const std::string& path, int* err) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      *err = errno;
      return false;
    }
    if (S_ISDIR(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
      *err = S_ISDIR(st.st_mode) ? EISDIR : errno;
      return false;
    }
    return true;
  };
  int err = 0;
  if (cmd.find('/') != std::string::npos) {
    if (runnable(cmd, &err)) return "";
    std::string why = std::strerror(err);
    char cwd[PATH_MAX];
    if (cmd[0] != '/' && ::getcwd(cwd, sizeof cwd) != nullptr) why += std::string(" (relative to ") + cwd + ")";
    return why;
  }
  const char* env = std::getenv("PATH");
  const std::string path = env != nullptr ? env : "/usr/bin:/bin";
  for (size_t b = 0; b <= path.size();) {
    const size_t e = std::min(path.find(':', b), path.size());
    const std::string dir = e > b ? path.substr(b, e - b) : ".";
    if (runnable(dir + "/" + cmd, &err)) return "";
    b = e + 1;
  }
  return "not found in PATH";
}

// After the run: `scout status` of the store (a warning first when the observer saw no rank).
void print_after(const RunOptions& o, const StoreOptions& where, const std::string& store, const std::string& job,
                 const std::string& shm_dir) {
  try {
    StoreOptions read;
    read.store = store;
    auto rd = open_store(read);
    if (rd->ranks().empty()) {
      std::string why = shm::shm_dir_problem(shm_dir);
      if (why.empty()) {
        why = "no segment of job " + job + " appeared in " + shm_dir +
              " (was the plugin loaded? NCCL_PROFILER_PLUGIN, SCOUT_ENABLE)";
      }
      std::cerr << "scout: warning: the observer saw no rank: " << why << "\n";
    }
    StatusOptions so;
    so.selector = store_selector(o.where.store.empty() ? where : o.where);
    cmd_status(*rd, so, std::cout);
  } catch (const std::exception& e) { std::cerr << "scout: " << e.what() << "\n"; }
}

// Starts `observer` for `job` writing `store` and waits until it is ready (its first pass said on
// a pipe, --ready-fd, or the store written), saying on stderr how it went. The observer's pid, or
// -1 when it exited before its first pass (COMMAND then runs unobserved).
pid_t start_observer(const RunOptions& o, const std::string& observer, const std::string& job,
                     const std::string& store) {
  int status = 0;
  // The observer says "ready" on a pipe after its first pass (--ready-fd); only it inherits
  // the writing end.
  int ready[2] = {-1, -1};
  const bool piped = ::pipe2(ready, O_CLOEXEC) == 0;
  if (piped) ::fcntl(ready[1], F_SETFD, 0);
  std::vector<std::string> obs_argv = {observer, "--job", job, "--store", store};
  if (piped) {
    obs_argv.push_back("--ready-fd");
    obs_argv.push_back(std::to_string(ready[1]));
  }
  obs_argv.insert(obs_argv.end(), o.observer_args.begin(), o.observer_args.end());
  // The observer runs in its own process group: a Ctrl-C meant for COMMAND must not stop it
  // before its final pass.
  const int64_t since = shm::wall_ns();
  const pid_t obs_pid = spawn(obs_argv, /*own_group=*/true);
  if (piped) ::close(ready[1]);
  const Ready how = wait_ready(obs_pid, piped ? ready[0] : -1, store, since, o.start_timeout_s, &status);
  if (piped) ::close(ready[0]);
  switch (how) {
    case Ready::kReady: break;
    case Ready::kReadyUnwritable:
      std::cerr << "scout: warning: the observer cannot write its store now (its line above); it observes the job "
                   "and keeps its findings in memory until the store takes them\n";
      break;
    case Ready::kExited:
      // Its own line on stderr says what is wrong (a bad flag or setting, a store it cannot open).
      std::cerr << "scout: warning: " << kObserverName << " exited before its first pass (status " << exit_code(status)
                << ", its message above); COMMAND runs unobserved\n";
      return -1;
    case Ready::kTimeout:
      std::cerr << "scout: " << kObserverName << " has not written its store within " << o.start_timeout_s
                << " s; starting COMMAND anyway\n";
      break;
  }
  return obs_pid;
}

}  // namespace

int cmd_run(const RunOptions& o) {
  if (o.command.empty()) throw UsageError("scout run: no COMMAND given (scout run [flags] -- COMMAND...)");
  if (const std::string why = command_problem(o.command[0]); !why.empty()) {
    std::cerr << "scout: cannot run " << o.command[0] << ": " << why << "; nothing started, scout run exits with 127\n";
    return 127;
  }
  config::Config cfg = config::load();
  bool fresh = false;
  const std::string job = run_job_id(o, cfg, &fresh);
  std::string no_observer;  // why the observer is not started ("" when it is)
  if (fresh && o.nodes > 1) {
    no_observer = "--nodes " + std::to_string(o.nodes) +
                  ": every node's observer needs the same job id; give --job ID (or set SCOUT_JOB_ID)";
  }
  StoreOptions where = o.where;
  where.job = job;
  const std::string store = store_path(where);
  const std::string bindir = self_dir();
  // Whatever keeps the observer from running is said at once, and COMMAND runs unobserved.
  std::string observer, plugin;
  try {
    observer = find_observer(bindir);
    plugin = choose_plugin(bindir);
  } catch (const UsageError& e) { no_observer = e.what(); }
  if (!no_observer.empty()) std::cerr << "scout: warning: " << no_observer << "; COMMAND runs unobserved\n";

  ::setenv("SCOUT_JOB_ID", job.c_str(), 1);
  if (!plugin.empty()) ::setenv("NCCL_PROFILER_PLUGIN", plugin.c_str(), 1);

  std::cerr << "scout: job " << job << ", store " << store << "\n";
  const std::string dir_problem = shm::shm_dir_problem(cfg.shm_dir);
  if (!dir_problem.empty()) std::cerr << "scout: warning: " << dir_problem << "; the job runs unobserved\n";

  pid_t obs_pid = no_observer.empty() ? start_observer(o, observer, job, store) : -1;
  bool observer_reaped = obs_pid < 0;

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

  const int command_status = wait_command(cmd_pid, obs_pid, &observer_reaped);
  g_child = 0;
  ::signal(SIGINT, SIG_DFL);

  bool unstored = false;
  if (!observer_reaped) {
    // SIGTERM: the observer makes one final pass over everything COMMAND left in its segments
    // and commits it before exiting.
    int st = stop_observer(obs_pid, o.stop_timeout_s);
    if (st >= 0 && exit_code(st) != 0) {
      std::cerr << "scout: " << kObserverName << " exited with status " << exit_code(st) << "\n";
    }
    unstored = st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == kObserverUnstored;
    // Its final pass is in the store: the segments of the job's finished processes have served.
    // Kept when the observer did not finish cleanly (a later `scout-observer --once` can still
    // read them), with --keep-segments, and with SCOUT_OBSERVER_RECLAIM_S=-1.
    if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && !o.keep_segments && cfg.observer_reclaim_s >= 0) {
      reclaim_segments(cfg.shm_dir, job);
    }
  }

  int rc = exit_code(command_status);
  if (rc != 0) {
    std::cerr << "scout: COMMAND "
              << (WIFSIGNALED(command_status) ? "was killed by signal " + std::to_string(WTERMSIG(command_status))
                                              : "exited with status " + std::to_string(rc))
              << "; scout run exits with " << rc << "\n";
  } else if (unstored) {
    rc = kExitUnstored;
    std::cerr << "scout: COMMAND succeeded but the observer could not store its findings (its lines above); "
                 "scout run exits with "
              << rc << "\n";
  }
  if (obs_pid < 0) {
    std::cout.flush();
    return rc;  // unobserved: no store of this run to show
  }
  print_after(o, where, store, job, cfg.shm_dir);
  std::cout.flush();
  return rc;
}

}  // namespace scout::cli
