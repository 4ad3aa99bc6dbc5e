// `scout run`: with a stand-in scout-observer next to a copy of the scout binary, checks what a
// launch script relies on: the observer gets --job/--store and the forwarded flags, COMMAND gets
// SCOUT_JOB_ID and NCCL_PROFILER_PLUGIN (<bindir>/../lib/libnccl-profiler-scout.so), the observer
// is stopped with SIGTERM after COMMAND ends, `scout status` of the store is printed, and scout
// exits with COMMAND's exit status.
#include <sys/stat.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/support/cli_fixture.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The stand-in observer: records its arguments, says it is ready, and on SIGTERM copies the
// demo store to its --store path (as the real one flushes its last batch) and exits 0.
constexpr const char* kFakeObserver = R"sh(#!/bin/bash
dir=$(dirname "$0")/..
printf '%s\n' "$@" > "$dir/observer.args"
store=""
while [ $# -gt 0 ]; do [ "$1" = --store ] && store=$2; shift; done
trap 'mkdir -p "$(dirname "$store")"; cp "$dir/demo.db" "$store"; echo stopped > "$dir/observer.stopped"; exit 0' TERM
touch "$dir/observer.ready"
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
    std::string cmd = "env -u NCCL_PROFILER_PLUGIN SCOUT_STATE_DIR=" + root_ + "/state " + root_ +
                      "/bin/scout " + args + " >" + root_ + "/stdout 2>" + root_ + "/stderr";
    int st = std::system(cmd.c_str());
    *out = slurp(root_ + "/stdout");
    *err = slurp(root_ + "/stderr");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  TempDir dir_;
  std::string root_;
};

TEST_F(Run, StartsObserverSetsEnvironmentStopsObserverAndKeepsExitStatus) {
  // COMMAND waits for the observer to be ready (so its TERM trap is set), records what it was
  // given, and exits 3.
  std::string command = "bash -c 'while [ ! -e " + root_ + "/observer.ready ]; do sleep 0.02; done; "
                        "echo \"$SCOUT_JOB_ID $NCCL_PROFILER_PLUGIN\" > " + root_ + "/command.env; exit 3'";
  std::string out, err;
  int rc = scout("run --job demo --hang-timeout 5 --observer-arg --once -- " + command, &out, &err);
  EXPECT_EQ(rc, 3) << err;
  EXPECT_EQ(err, "");
  EXPECT_EQ(slurp(root_ + "/command.env"),
            "demo " + fs::canonical(root_ + "/lib/libnccl-profiler-scout.so").string() + "\n");
  EXPECT_EQ(slurp(root_ + "/observer.args"),
            "--job\ndemo\n--store\n" + root_ + "/state/demo/node-0.db\n--hang-timeout\n5\n--once\n");
  EXPECT_EQ(slurp(root_ + "/observer.stopped"), "stopped\n");
  // The status of the store the observer wrote, exactly as `scout status` prints it.
  std::string status, status_err;
  ASSERT_EQ(scout("status --store " + root_ + "/demo.db", &status, &status_err), 0);
  EXPECT_EQ(out, status);
}

TEST_F(Run, ExplicitStoreAndSignalExit) {
  std::string store = root_ + "/elsewhere/s.db";
  std::string command = "bash -c 'while [ ! -e " + root_ + "/observer.ready ]; do sleep 0.02; done; kill -TERM $$'";
  std::string out, err;
  int rc = scout("run --job j2 --store " + store + " -- " + command, &out, &err);
  EXPECT_EQ(rc, 128 + 15);  // killed by SIGTERM, as a shell reports it
  EXPECT_TRUE(fs::exists(store));
  EXPECT_NE(out.find("job demo: node 0 of 2"), std::string::npos) << out;
}

TEST_F(Run, MissingObserverOrCommandIsAUsageError) {
  std::string out, err;
  fs::remove(root_ + "/bin/scout-observer");
  int rc = scout("run --job demo -- true", &out, &err);
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(err, "scout: scout-observer not found next to scout (" + fs::canonical(root_ + "/bin").string() +
                     ") nor on PATH\n");
  rc = scout("run --job demo", &out, &err);
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(err, "scout: command is required (scout --help)\n");
}

TEST_F(Run, CommandThatCannotStartExits127) {
  std::string out, err;
  int rc = scout("run --job demo -- /nonexistent/prog", &out, &err);
  EXPECT_EQ(rc, 127);
  // The first line names the problem (the stand-in observer, stopped at once, may add more).
  EXPECT_EQ(err.substr(0, err.find('\n') + 1),
            "scout: cannot run /nonexistent/prog: No such file or directory\n");
}

}  // namespace
