#include "test/sim/launcher.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "common/clock.h"
#include "common/paths.h"
#include "scout/config.h"
#include "test/sim/fabric.h"
#include "test/sim/layout.h"
#include "test/sim/nccl_plugin_loader.h"

extern char** environ;

namespace scout::sim {
namespace {

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string absolute(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return buf;
  if (!path.empty() && path[0] == '/') return path;
  if (::getcwd(buf, sizeof(buf))) return std::string(buf) + "/" + path;
  return path;
}

// The environment of worker `rank`: the launcher's, with the per-rank variables replaced.
std::vector<std::string> worker_env(const SimOptions& o, const Layout& L, int rank, const std::string& plugin) {
  std::map<std::string, std::string> set;
  RankCoord c = L.coord(rank);
  set["RANK"] = std::to_string(rank);
  set["LOCAL_RANK"] = std::to_string(c.local_rank);
  set["WORLD_SIZE"] = std::to_string(o.ranks);
  set["LOCAL_WORLD_SIZE"] = std::to_string(L.ranks_per_node());
  set["GROUP_RANK"] = std::to_string(c.node);
  set["SCOUT_JOB_ID"] = o.job;
  if (o.nodes > 1) set["SCOUT_HOST"] = Layout::host_name(c.node);
  if (!std::getenv("SCOUT_GPU"))
    set["SCOUT_GPU"] = "GPU-sim-" + Layout::host_name(c.node) + "-" + std::to_string(c.local_rank);
  // Emulated kernels are far faster than hashing on a CPU, so the adaptive budget would raise
  // each rank's sampling level at its own pace and leave operations with partial votes. The
  // drill wants every sampled operation judged: budget off unless the user set one.
  if (!std::getenv("SCOUT_FP_BUDGET")) set["SCOUT_FP_BUDGET"] = "0";
  if (!plugin.empty()) set["NCCL_PROFILER_PLUGIN"] = plugin;
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (!set.count(key)) env.push_back(kv);
  }
  for (auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> cstrs(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string default_plugin_path(const std::string& exe) {
  return absolute(dir_of(exe) + "/../lib/libnccl-profiler-scout.so");
}

std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

int launch(SimOptions o, const std::string& exe) {
  const int64_t t_start = shm::wall_ns();
  if (o.job.empty()) {  // under `scout run` (or any launcher that names the job) keep its id
    const char* env_job = std::getenv("SCOUT_JOB_ID");
    o.job = env_job && *env_job ? env_job : "sim-" + std::to_string(::getpid());
  }
  if (o.truth.empty() && !o.faults.empty()) {
    // Beside the job's store, <SCOUT_STATE_DIR>/<job>/truth.jsonl: never into the directory the
    // demo is run from (docs/scout-sim.md, "Ground truth").
    std::string err;
    const std::string store = store::default_store_path(config::load().state_dir, o.job, 0, &err);
    const size_t slash = store.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      const std::string dir = store.substr(0, slash);
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      o.truth = dir + "/truth.jsonl";
    } else {
      o.truth = o.job + ".truth.jsonl";
    }
  }
  if (!o.truth.empty()) {
    o.truth = absolute(o.truth);
    int fd = ::open(o.truth.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "scout-sim: cannot create ground-truth file %s: %s\n", o.truth.c_str(),
                   std::strerror(errno));
      return kExitFailed;
    }
    ::close(fd);
  }
  // NCCL_PROFILER_PLUGIN: the user's choice, else the plugin installed next to this binary.
  std::string plugin_env;
  const char* user_plugin = std::getenv("NCCL_PROFILER_PLUGIN");
  std::string plugin_desc;
  if (user_plugin) {
    plugin_desc = user_plugin;
  } else {
    plugin_env = default_plugin_path(exe);
    plugin_desc = plugin_env;
  }
  {
    LoadedPlugin probe = load_profiler_plugin(user_plugin ? user_plugin : plugin_env.c_str());
    if (!probe.ok() && probe.error != "disabled")
      std::fprintf(stderr, "scout-sim: warning: the ranks will run without a profiler plugin: %s\n",
                   probe.error.c_str());
    unload_profiler_plugin(&probe);
  }

  Layout layout(o);
  FabricLayout fl = FabricLayout::plan(layout, o);
  std::string err;
  std::unique_ptr<Fabric> fabric = Fabric::create(fl, &err);
  if (!fabric) {
    std::fprintf(stderr, "scout-sim: %s\n", err.c_str());
    return kExitFailed;
  }
  // cp and vpp only when used, so the banner of a job without them reads as before.
  std::string extra;
  if (o.cp > 1) extra += ", cp " + std::to_string(o.cp);
  if (o.vpp > 1) extra += ", vpp " + std::to_string(o.vpp);
  std::printf(
      "scout-sim: job %s: %d ranks (tp %d, pp %d, dp %d, ep %d%s) on %d host%s, %lld steps, %llu-byte "
      "messages, plugin %s%s%s\n",
      o.job.c_str(), o.ranks, o.tp, o.pp, o.dp(), o.ep, extra.c_str(), o.nodes, o.nodes > 1 ? "s" : "",
      static_cast<long long>(o.steps), static_cast<unsigned long long>(o.bytes), plugin_desc.c_str(),
      o.truth.empty() ? "" : ", truth ", o.truth.c_str());
  std::fflush(stdout);

  sigset_t wait_set, old_set;
  sigemptyset(&wait_set);
  sigaddset(&wait_set, SIGCHLD);
  sigaddset(&wait_set, SIGINT);
  sigaddset(&wait_set, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &wait_set, &old_set);

  const pid_t launcher = ::getpid();
  std::vector<pid_t> pids(o.ranks, -1);
  std::vector<int> wstatus(o.ranks, -1);
  int running = 0;
  for (int r = 0; r < o.ranks; ++r) {
    std::vector<std::string> argv = worker_argv(exe, o, r, fabric->fd());
    std::vector<std::string> env = worker_env(o, layout, r, plugin_env);
    std::vector<char*> av = cstrs(argv), ev = cstrs(env);
    pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "scout-sim: fork: %s\n", std::strerror(errno));
      for (int k = 0; k < r; ++k) ::kill(pids[k], SIGKILL);
      while (::waitpid(-1, nullptr, 0) > 0) {}
      return kExitFailed;
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the job dies with its launcher
      if (::getppid() != launcher) ::_exit(127);
      // Own process group: a terminal's Ctrl-C reaches the launcher only, which ends the job
      // (exit code 4) instead of ranks dying one by one.
      ::setpgid(0, 0);
      ::sigprocmask(SIG_SETMASK, &old_set, nullptr);
      ::execve(exe.c_str(), av.data(), ev.data());
      ::_exit(127);
    }
    pids[r] = pid;
    ++running;
  }

  enum class End { kDone, kTimedOut, kIdle, kSignal, kFailed } end = End::kDone;
  int end_signal = 0, failed_rank = -1;
  const int64_t deadline = o.timeout_s > 0 ? t_start + static_cast<int64_t>(o.timeout_s * 1e9) : 0;
  // Progress: operations issued by all ranks; a job whose count stops for idle_timeout_s (every
  // rank blocked behind a hang or a crash) is ended (--idle-timeout, docs/scout-sim.md).
  const int64_t idle_ns = o.idle_timeout_s > 0 ? static_cast<int64_t>(o.idle_timeout_s * 1e9) : 0;
  uint64_t last_ops = 0;
  int64_t last_progress = t_start;
  auto idle_for = [&](int64_t now) {
    uint64_t ops = 0;
    for (int r = 0; r < o.ranks; ++r) ops += fabric->rank_status(r)->ops.load();
    if (ops != last_ops) {
      last_ops = ops;
      last_progress = now;
    }
    return now - last_progress;
  };
  auto reap = [&]() {
    for (;;) {
      int st = 0;
      pid_t p = ::waitpid(-1, &st, WNOHANG);
      if (p <= 0) return;
      for (int r = 0; r < o.ranks; ++r) {
        if (pids[r] != p) continue;
        wstatus[r] = st;
        --running;
        bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        bool injected_crash =
            WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && fabric->rank_status(r)->state.load() == kRankCrashing;
        if (!ok && !injected_crash && end == End::kDone) {
          end = End::kFailed;
          failed_rank = r;
        }
      }
    }
  };
  while (running > 0 && end == End::kDone) {
    siginfo_t info;
    int sig;
    const int64_t now = shm::wall_ns();
    if (idle_ns && idle_for(now) >= idle_ns) {
      end = End::kIdle;
      break;
    }
    if (deadline || idle_ns) {
      int64_t left = deadline ? deadline - now : INT64_MAX;
      if (left <= 0) {
        end = End::kTimedOut;
        break;
      }
      if (idle_ns) left = std::min<int64_t>(left, 250'000'000);  // look at progress 4 times a second
      timespec ts{static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
      sig = ::sigtimedwait(&wait_set, &info, &ts);
    } else {
      sig = ::sigwaitinfo(&wait_set, &info);
    }
    if (sig == SIGCHLD)
      reap();
    else if (sig == SIGINT || sig == SIGTERM) {
      end = End::kSignal;
      end_signal = sig;
    }
    reap();
  }
  // Whatever still runs is killed; the plugin's segments stay for the observer.
  std::vector<int> blocked, hung, crashed, done;
  for (int r = 0; r < o.ranks; ++r) {
    uint32_t state = fabric->rank_status(r)->state.load();
    if (wstatus[r] == -1) {
      ::kill(pids[r], SIGKILL);
      if (state == kRankHung)
        hung.push_back(r);
      else
        blocked.push_back(r);
    } else if (state == kRankCrashing) {
      crashed.push_back(r);
    } else if (state == kRankDone) {
      done.push_back(r);
    }
  }
  while (running > 0) {
    int st = 0;
    pid_t p = ::waitpid(-1, &st, 0);
    if (p < 0 && errno != EINTR) break;
    if (p > 0) --running;
  }
  ::sigprocmask(SIG_SETMASK, &old_set, nullptr);

  uint64_t ops = 0, min_steps = UINT64_MAX;
  for (int r = 0; r < o.ranks; ++r) {
    ops += fabric->rank_status(r)->ops.load();
    min_steps = std::min<uint64_t>(min_steps, fabric->rank_status(r)->steps.load());
  }
  const double wall = (shm::wall_ns() - t_start) / 1e9;
  int code = kExitOk;
  std::string outcome = "completed";
  auto faults_note = [&]() {
    std::string s;
    if (!hung.empty()) s += "; hung (fault): rank " + rank_ranges(hung);
    if (!crashed.empty()) s += "; crashed (fault): rank " + rank_ranges(crashed);
    if (!blocked.empty()) s += "; killed while running: rank " + rank_ranges(blocked);
    return s;
  };
  switch (end) {
    case End::kDone:
      if (!crashed.empty()) {  // every other rank finished although one crashed: not expected
        code = kExitFailed;
        outcome = "ranks exited after an injected crash" + faults_note();
      }
      break;
    case End::kTimedOut:
      code = kExitTimedOut;
      outcome = "timed out after " + std::to_string(static_cast<long long>(o.timeout_s)) + " s" + faults_note();
      break;
    case End::kIdle: {
      code = kExitTimedOut;
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%g", o.idle_timeout_s);
      outcome = std::string("no rank issued an operation for ") + secs + " s (--idle-timeout)" + faults_note();
      break;
    }
    case End::kSignal:
      code = kExitInterrupted;
      outcome = std::string("interrupted by ") + (end_signal == SIGINT ? "SIGINT" : "SIGTERM") + faults_note();
      break;
    case End::kFailed: {
      code = kExitFailed;
      int st = wstatus[failed_rank];
      outcome = "rank " + std::to_string(failed_rank) +
                (WIFSIGNALED(st) ? " was killed by signal " + std::to_string(WTERMSIG(st))
                                 : " failed with exit status " + std::to_string(WEXITSTATUS(st))) +
                faults_note();
      break;
    }
  }
  std::printf("scout-sim: job %s: %d ranks, %llu/%lld steps, %llu ops, %.2f s, %s, exit %d\n", o.job.c_str(), o.ranks,
              static_cast<unsigned long long>(min_steps == UINT64_MAX ? 0 : min_steps), static_cast<long long>(o.steps),
              static_cast<unsigned long long>(ops), wall, outcome.c_str(), code);
  std::fflush(stdout);
  return code;
}

}  // namespace scout::sim
