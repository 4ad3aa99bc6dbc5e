// scout-observer's command line: defaults from the SCOUT_* registry, flags override them, and
// every mistake is one line (exit 2 in the binary).
#include "observer/pipeline/command_line.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "test/support/tmpdir.h"

namespace {

using scout::obs::CommandLine;
using scout::obs::ParseResult;

struct Parsed {
  ParseResult result;
  CommandLine cl;
  std::string message;
};

Parsed parse(std::vector<const char*> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "scout-observer");
  auto getenv_fn = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  scout::config::Config cfg = scout::config::load(getenv_fn, [](const std::string&) {});
  Parsed r;
  r.result =
      scout::obs::parse_command_line(int(args.size()), args.data(), cfg, &r.cl, &r.message, getenv_fn, "testhost");
  return r;
}

TEST(CommandLine, DefaultsComeFromTheRegistryAndTheEnvironment) {
  Parsed r = parse({}, {{"SLURM_JOB_ID", "4711"},
                        {"SCOUT_STATE_DIR", "/var/scout"},
                        {"SCOUT_OBSERVER_HANG_TIMEOUT_S", "90"},
                        {"SCOUT_SHM_DIR", "/dev/shm/x"}});
  ASSERT_EQ(r.result, ParseResult::kOk) << r.message;
  EXPECT_EQ(r.cl.opt.job, "4711");
  EXPECT_EQ(r.cl.opt.host, "testhost");
  EXPECT_EQ(r.cl.opt.shm_dir, "/dev/shm/x");
  EXPECT_EQ(r.cl.store, "/var/scout/4711/node-0.db");
  EXPECT_EQ(r.cl.opt.hang.timeout_ns, 90'000'000'000);
  EXPECT_EQ(r.cl.opt.interval_ns, 250'000'000);
  EXPECT_EQ(r.cl.opt.straggler.min_ns, 5'000'000);
  EXPECT_FALSE(r.cl.once);
}

TEST(CommandLine, FlagsOverrideVariables) {
  Parsed r = parse(
      {"--job", "j9", "--host", "h2", "--hang-timeout", "2.5", "--interval", "50", "--once", "--store", "/tmp/x.db",
       "--shm-dir", "/tmp/shm", "--nodes", "1", "--node-rank", "0", "--rdzv", "redis:localhost:6379"},
      {{"SCOUT_JOB_ID", "env-job"}, {"SCOUT_HOST", "h1"}});
  ASSERT_EQ(r.result, ParseResult::kOk) << r.message;
  EXPECT_EQ(r.cl.opt.job, "j9");
  EXPECT_EQ(r.cl.opt.host, "h2");
  EXPECT_EQ(r.cl.opt.hang.timeout_ns, 2'500'000'000);
  EXPECT_EQ(r.cl.opt.interval_ns, 50'000'000);
  EXPECT_EQ(r.cl.store, "/tmp/x.db");
  EXPECT_EQ(r.cl.opt.shm_dir, "/tmp/shm");
  EXPECT_TRUE(r.cl.once);
  Parsed s = parse({}, {{"SCOUT_JOB_ID", "env-job"}, {"SCOUT_HOST", "h1"}});
  EXPECT_EQ(s.cl.opt.job, "env-job");
  EXPECT_EQ(s.cl.opt.host, "h1");
  Parsed all = parse({"--host", "*"});
  EXPECT_EQ(all.cl.opt.host, "");  // every host
}

// A relative checkpoint directory (the certification drill's `--ckpt-dir=drill-ckpt`) becomes
// absolute from the observer's working directory, so `scout ckpt latest` prints a path a restart
// script loads from any directory.
TEST(CommandLine, CheckpointDirectoriesAreMadeAbsolute) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  const std::string here = cwd;
  Parsed r = parse({"--ckpt-dir", "drill-ckpt", "--ckpt-dir", "/ckpt/run1/../run2/"});
  ASSERT_EQ(r.result, ParseResult::kOk) << r.message;
  EXPECT_EQ(r.cl.ckpt_dirs, (std::vector<std::string>{here + "/drill-ckpt", "/ckpt/run2"}));
  Parsed e = parse({}, {{"SCOUT_CKPT_DIR", "./a:/b"}});
  EXPECT_EQ(e.cl.ckpt_dirs, (std::vector<std::string>{here + "/a", "/b"}));
}

TEST(CommandLine, MistakesAreOneLine) {
  struct Case {
    std::vector<const char*> args;
    std::string message;
  } cases[] = {
      {{"--bogus"}, "The following argument was not expected: --bogus"},
      {{"--nodes", "4", "--node-rank", "1"},
       "--nodes 4 needs --rdzv file:DIR (a directory every node reaches) or redis:HOST:PORT"},
      {{"--nodes", "4", "--node-rank", "4", "--rdzv", "file:/tmp/r"}, "--node-rank 4 is not below --nodes 4"},
      {{"--node-rank", "3"}, "--node-rank 3 is not below --nodes 1"},
      {{"--rdzv", "redis:host"}, "--rdzv redis:host: expected file:DIR or redis:HOST:PORT"},
      {{"--rdzv", "tcp:x"}, "--rdzv tcp:x: expected file:DIR or redis:HOST:PORT"},
      {{"--interval", "abc"}, "--interval: Value abc not in range 10 to 60000"},
      {{"--equiv", "/nonexistent/equiv"}, "cannot read equivalence file /nonexistent/equiv"},
  };
  for (const auto& c : cases) {
    Parsed r = parse(c.args);
    EXPECT_EQ(r.result, ParseResult::kError) << c.message;
    EXPECT_EQ(r.message.find('\n'), std::string::npos);
    if (c.message != "--interval: Value abc not in range 10 to 60000") {
      EXPECT_EQ(r.message, c.message);
    } else {
      EXPECT_NE(r.message.find("--interval"), std::string::npos) << r.message;
    }
  }
  Parsed e = parse({}, {{"SCOUT_EQUIV", "recv: lonely"}});
  EXPECT_EQ(e.result, ParseResult::kError);
  EXPECT_EQ(e.message, "SCOUT_EQUIV: equivalence group 'recv: lonely' needs at least two members");
}

TEST(CommandLine, SeveralNodesFormTheNetworkAndDeferCrossNodeRoots) {
  Parsed r = parse({"--job", "j", "--nodes", "4", "--node-rank", "3", "--rdzv", "file:/shared/rdzv"});
  ASSERT_EQ(r.result, ParseResult::kOk) << r.message;
  EXPECT_EQ(r.cl.opt.nodes, 4);
  EXPECT_EQ(r.cl.opt.node_rank, 3);
  EXPECT_EQ(r.cl.rdzv, "file:/shared/rdzv");
  EXPECT_TRUE(r.cl.opt.hang.defer_cross_node);
  EXPECT_EQ(r.cl.store.substr(r.cl.store.size() - 10), "/node-3.db");
  Parsed one = parse({"--job", "j"});
  ASSERT_EQ(one.result, ParseResult::kOk) << one.message;
  EXPECT_FALSE(one.cl.opt.hang.defer_cross_node);
}

TEST(CommandLine, EquivFileAddsToTheVariable) {
  scout::testing::TempDir dir;
  std::string path = dir.path() + "/equiv";
  std::ofstream(path) << "# HSDP replicas\nrecv: shard0 shard1\n";
  Parsed r = parse({"--equiv", path.c_str()}, {{"SCOUT_EQUIV", "send: a b"}});
  ASSERT_EQ(r.result, ParseResult::kOk) << r.message;
  ASSERT_EQ(r.cl.opt.equiv.size(), 2u);
  EXPECT_EQ(r.cl.opt.equiv[0].text, "send: a b");
  EXPECT_EQ(r.cl.opt.equiv[1].members, (std::vector<std::string>{"shard0", "shard1"}));
}

TEST(CommandLine, HelpIsNotAnError) {
  Parsed r = parse({"--help"});
  EXPECT_EQ(r.result, ParseResult::kHelp);
  EXPECT_NE(r.message.find("--hang-timeout"), std::string::npos);
}

}  // namespace
