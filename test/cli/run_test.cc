// `scout run`: with a stand-in scout-observer next to a copy of the scout binary, checks what a
// launch script relies on: the job id (given, from the environment, or fresh), the observer gets
// --job/--store and the forwarded flags, COMMAND starts once the observer's first pass is in the
// store and gets SCOUT_JOB_ID and NCCL_PROFILER_PLUGIN (<bindir>/../lib/libnccl-profiler-scout.so),
// the observer is stopped with SIGTERM after COMMAND ends, `scout status` of the store is printed,
// and scout exits with COMMAND's exit status. (test/cli/real_run_test.cc runs the real observer.)
#include <sys/stat.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "test/support/cli_fixture.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::slurp;
using scout::testing::TempDir;

// The stand-in observer: records its arguments, writes the demo store to its --store path with
// the job's started_ns set to now (what the real one's first pass commits: `scout run` waits for
// it before starting COMMAND), says it is ready, and exits 0 on SIGTERM. With FAKE_OBSERVER_EXIT
// set it exits with that status at once instead.
constexpr const char* kFakeObserver = R"sh(#!/bin/bash
dir=$(dirname "$0")/..
printf '%s\n' "$@" > "$dir/observer.args"
[ -n "$FAKE_OBSERVER_EXIT" ] && exit "$FAKE_OBSERVER_EXIT"
store=""
while [ $# -gt 0 ]; do [ "$1" = --store ] && store=$2; shift; done
trap 'echo stopped > "$dir/observer.stopped"; exit 0' TERM
mkdir -p "$(dirname "$store")"
cp "$dir/demo.db" "$store.tmp"
sqlite3 "$store.tmp" "UPDATE job SET started_ns = $(date +%s%N)"
touch "$dir/observer.ready"
mv "$store.tmp" "$store"
while true; do sleep 0.05; done
)sh";

class Run : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path();
    fs::create_directories(root_ + "/bin");
    fs::create_directories(root_ + "/lib");
    fs::copy_file(build_path("bin/scout"), root_ + "/bin/scout");
    std::ofstream(root_ + "/bin/scout-observer") << kFakeObserver;
    fs::permissions(root_ + "/bin/scout-observer", fs::perms::owner_all);
    std::ofstream(root_ + "/lib/libnccl-profiler-scout.so") << "stand-in";
    scout::testing::write_demo_store(root_ + "/demo.db");
  }

  // Runs `<root>/bin/scout ARGS`; returns the exit code, stdout and stderr in out/err.
  int scout(const std::string& args, std::string* out, std::string* err) {
    std::string cmd = "env -u NCCL_PROFILER_PLUGIN -u SCOUT_PROFILER_DELEGATE -u SCOUT_JOB_ID -u TORCHELASTIC_RUN_ID -u SLURM_JOB_ID " + env_ +
                      " SCOUT_STATE_DIR=" + root_ + "/state " + root_ + "/bin/scout " + args + " >" + root_ +
                      "/stdout 2>" + root_ + "/stderr";
    int st = std::system(cmd.c_str());
    *out = slurp(root_ + "/stdout");
    *err = slurp(root_ + "/stderr");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  TempDir dir_;
  std::string root_;
  std::string env_;  // extra VAR=value words for the next scout() calls
};

TEST_F(Run, StartsObserverSetsEnvironmentStopsObserverAndKeepsExitStatus) {
  // COMMAND records what it was given and whether the observer was ready, and exits 3.
  std::string command = "bash -c 'test -e " + root_ + "/observer.ready && echo ready > " + root_ +
                        "/command.ready; echo \"$SCOUT_JOB_ID $NCCL_PROFILER_PLUGIN\" > " + root_ +
                        "/command.env; exit 3'";
  std::string out, err;
  int rc = scout("run --job demo --hang-timeout 5 --observer-arg --once -- " + command, &out, &err);
  EXPECT_EQ(rc, 3) << err;
  EXPECT_EQ(err, "scout: job demo, store " + root_ +
                     "/state/demo/node-0.db\n"
                     "scout: COMMAND exited with status 3; scout run exits with 3\n");
  EXPECT_EQ(slurp(root_ + "/command.ready"), "ready\n");  // COMMAND started after the first pass
  EXPECT_EQ(slurp(root_ + "/command.env"),
            "demo " + fs::canonical(root_ + "/lib/libnccl-profiler-scout.so").string() + "\n");
  // --ready-fd: the pipe the observer says "ready" on after its first pass.
  EXPECT_TRUE(std::regex_match(slurp(root_ + "/observer.args"),
                               std::regex("--job\ndemo\n--store\n" + root_ +
                                          "/state/demo/node-0.db\n--ready-fd\n[0-9]+\n--hang-timeout\n5\n--once\n")))
      << slurp(root_ + "/observer.args");
  EXPECT_EQ(slurp(root_ + "/observer.stopped"), "stopped\n");
  // The status of the store the observer wrote, exactly as `scout status --job demo` prints it.
  std::string status, status_err;
  ASSERT_EQ(scout("status --job demo", &status, &status_err), 0) << status_err;
  EXPECT_EQ(out, status);
  EXPECT_NE(out.find("details: " + root_ + "/bin/scout explain --job demo 1; per-collective table: " + root_ +
                     "/bin/scout report --job demo\n"),
            std::string::npos)
      << out;
}

TEST_F(Run, ExplicitStoreAndSignalExit) {
  std::string store = root_ + "/elsewhere/s.db";
  std::string out, err;
  int rc = scout("run --job j2 --store " + store + " -- bash -c 'kill -TERM $$'", &out, &err);
  EXPECT_EQ(rc, 128 + 15);  // killed by SIGTERM, as a shell reports it
  EXPECT_TRUE(fs::exists(store));
  EXPECT_NE(out.find("job demo: node 0 of 2"), std::string::npos) << out;
  EXPECT_NE(out.find("details: " + root_ + "/bin/scout explain --store " + store + " 1"), std::string::npos) << out;
}

// Without --job nor a job in the environment, each run gets its own job (and store); with
// SCOUT_JOB_ID set, that job is used (every node of a job agrees on it).
TEST_F(Run, JobIdIsFreshUnlessGivenOrInTheEnvironment) {
  std::string out, err;
  ASSERT_EQ(scout("run -- true", &out, &err), 0) << err;
  std::string args = slurp(root_ + "/observer.args");
  std::string job = args.substr(args.find('\n') + 1);
  job = job.substr(0, job.find('\n'));
  EXPECT_TRUE(std::regex_match(job, std::regex("run-[0-9]{8}-[0-9]{6}-[0-9]+"))) << job;
  EXPECT_EQ(err, "scout: job " + job + ", store " + root_ + "/state/" + job + "/node-0.db\n");
  EXPECT_TRUE(fs::exists(root_ + "/state/" + job + "/node-0.db"));
  EXPECT_NE(out.find("scout explain --job " + job + " 1"), std::string::npos) << out;

  env_ = "SCOUT_JOB_ID=fromenv";
  ASSERT_EQ(scout("run -- true", &out, &err), 0) << err;
  EXPECT_EQ(err, "scout: job fromenv, store " + root_ + "/state/fromenv/node-0.db\n");
}

TEST_F(Run, SeveralNodesNeedAJobIdElseTheJobRunsUnobserved) {
  std::string out, err;
  EXPECT_EQ(scout("run --nodes 2 --node-rank 1 --rdzv file:" + root_ + "/rdzv -- touch " + root_ + "/command.ran",
                  &out, &err),
            0);
  EXPECT_TRUE(fs::exists(root_ + "/command.ran"));
  EXPECT_EQ(err.substr(0, err.find('\n') + 1),
            "scout: warning: --nodes 2: every node's observer needs the same job id; give --job ID (or set "
            "SCOUT_JOB_ID); COMMAND runs unobserved\n");
  EXPECT_FALSE(fs::exists(root_ + "/observer.args"));
  // With a job, the flags reach the observer and --node-rank picks the store.
  EXPECT_EQ(scout("run --job j --nodes 2 --node-rank 1 --rdzv file:" + root_ + "/rdzv -- true", &out, &err), 0) << err;
  EXPECT_TRUE(std::regex_match(slurp(root_ + "/observer.args"),
                               std::regex("--job\nj\n--store\n" + root_ +
                                          "/state/j/node-1.db\n--ready-fd\n[0-9]+\n--nodes\n2\n"
                                          "--node-rank\n1\n--rdzv\nfile:" +
                                          root_ + "/rdzv\n")))
      << slurp(root_ + "/observer.args");
}

// An observer that cannot start (a bad flag or setting, a store of another job: status 2) or
// fails otherwise: said at once, and COMMAND runs unobserved (training never depends on it).
TEST_F(Run, ObserverThatRefusesToStartTheJobRunsUnobserved) {
  std::string out, err;
  for (const char* status : {"2", "1"}) {
    fs::remove(root_ + "/command.ran");
    env_ = std::string("FAKE_OBSERVER_EXIT=") + status;
    EXPECT_EQ(scout("run --job demo -- touch " + root_ + "/command.ran", &out, &err), 0);
    EXPECT_TRUE(fs::exists(root_ + "/command.ran"));
    EXPECT_NE(err.find(std::string("scout: warning: scout-observer exited before its first pass (status ") + status +
                       ", its message above); COMMAND runs unobserved\n"),
              std::string::npos)
        << err;
  }
}

TEST_F(Run, MissingObserverRunsTheJobUnobservedMissingCommandIsAUsageError) {
  std::string out, err;
  fs::remove(root_ + "/bin/scout-observer");
  int rc = scout("run --job demo -- touch " + root_ + "/command.ran", &out, &err);
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(fs::exists(root_ + "/command.ran"));
  EXPECT_EQ(err, "scout: warning: scout-observer not found next to scout (" + fs::canonical(root_ + "/bin").string() +
                     ") nor on PATH; COMMAND runs unobserved\n"
                     "scout: job demo, store " +
                     root_ + "/state/demo/node-0.db\n");
  rc = scout("run --job demo", &out, &err);
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(err, "scout run: command is required (" + root_ + "/bin/scout run --help)\n");
}

// A COMMAND that cannot be executed is said in one line before anything starts: no observer, no
// store (so `scout jobs` lists no empty job), no status and no warning about the plugin.
TEST_F(Run, CommandThatCannotStartExits127) {
  std::string out, err;
  int rc = scout("run --job demo -- /nonexistent/prog", &out, &err);
  EXPECT_EQ(rc, 127);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "scout: cannot run /nonexistent/prog: No such file or directory; nothing started, scout run exits "
                 "with 127\n");
  EXPECT_FALSE(fs::exists(root_ + "/state/demo"));
  EXPECT_FALSE(fs::exists(root_ + "/observer.args"));
  // A pasted hint whose relative path does not hold in this directory.
  rc = scout("run -- no-such-dir/bin/scout-sim --ranks 2", &out, &err);
  EXPECT_EQ(rc, 127);
  EXPECT_EQ(err, "scout: cannot run no-such-dir/bin/scout-sim: No such file or directory (relative to " +
                     fs::current_path().string() + "); nothing started, scout run exits with 127\n");
  rc = scout("run -- no-such-program-of-scout", &out, &err);
  EXPECT_EQ(rc, 127);
  EXPECT_EQ(err,
            "scout: cannot run no-such-program-of-scout: not found in PATH; nothing started, scout run exits with 127\n");
  std::string jobs;
  ASSERT_EQ(scout("jobs", &jobs, &err), 0) << err;
  EXPECT_EQ(jobs.find("demo"), std::string::npos) << jobs;
  // A file that is there but not executable: the same line with its error.
  std::ofstream(root_ + "/plain.txt") << "text";
  rc = scout("run -- " + root_ + "/plain.txt", &out, &err);
  EXPECT_EQ(rc, 127);
  EXPECT_EQ(err, "scout: cannot run " + root_ + "/plain.txt: Permission denied; nothing started, scout run exits with 127\n");
}

// NCCL has one profiler slot: a profiler plugin already named in NCCL_PROFILER_PLUGIN becomes
// scout's delegate, said in one line at start; scout's own name is kept; "none" is replaced; a
// delegate already set wins.
TEST_F(Run, AnotherProfilerPluginBecomesScoutsDelegate) {
  const std::string scout_so = fs::canonical(root_ + "/lib/libnccl-profiler-scout.so").string();
  const std::string command = "bash -c 'echo \"$NCCL_PROFILER_PLUGIN|$SCOUT_PROFILER_DELEGATE\" > " + root_ + "/command.env'";
  const std::string job_line = "scout: job demo, store " + root_ + "/state/demo/node-0.db\n";
  std::string out, err;
  env_ = "NCCL_PROFILER_PLUGIN=/opt/nccl/libnccl-profiler-inspector.so";
  ASSERT_EQ(scout("run --job demo -- " + command, &out, &err), 0) << err;
  EXPECT_EQ(err,
            "scout: NCCL_PROFILER_PLUGIN=/opt/nccl/libnccl-profiler-inspector.so moved to SCOUT_PROFILER_DELEGATE: "
            "scout loads it and forwards every profiler event to it\n" + job_line);
  EXPECT_EQ(slurp(root_ + "/command.env"), scout_so + "|/opt/nccl/libnccl-profiler-inspector.so\n");

  env_ = "NCCL_PROFILER_PLUGIN=inspector SCOUT_PROFILER_DELEGATE=/x/libnccl-profiler-other.so";
  ASSERT_EQ(scout("run --job demo -- " + command, &out, &err), 0) << err;
  EXPECT_EQ(err,
            "scout: NCCL_PROFILER_PLUGIN=inspector is not loaded: SCOUT_PROFILER_DELEGATE=/x/libnccl-profiler-other.so "
            "is scout's delegate already\n" + job_line);
  EXPECT_EQ(slurp(root_ + "/command.env"), scout_so + "|/x/libnccl-profiler-other.so\n");

  env_ = "NCCL_PROFILER_PLUGIN=NONE";
  ASSERT_EQ(scout("run --job demo -- " + command, &out, &err), 0) << err;
  EXPECT_EQ(err, "scout: NCCL_PROFILER_PLUGIN=NONE replaced by scout's plugin for this run\n" + job_line);
  EXPECT_EQ(slurp(root_ + "/command.env"), scout_so + "|\n");

  for (const std::string& v : {std::string("scout"), std::string("/elsewhere/lib/libnccl-profiler-scout.so")}) {
    env_ = "NCCL_PROFILER_PLUGIN=" + v;
    ASSERT_EQ(scout("run --job demo -- " + command, &out, &err), 0) << err;
    EXPECT_EQ(err, job_line);
    EXPECT_EQ(slurp(root_ + "/command.env"), v + "|\n");
  }
}

}  // namespace
