// scout-sim as a program: bad flags, the per-rank environment, the default plugin, exit codes of a
// completed, hung, crashed and interrupted job, and the ground truth of hang, crash, linkdown and nicdown.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test/sim/launcher.h"
#include "test/sim/layout.h"
#include "test/sim/workload.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using namespace scout::sim;
using scout::testing::truth_lines;
using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::Subprocess;
using scout::testing::TempDir;

std::string sim() { return build_path("bin/scout-sim"); }

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) out.push_back(l);
  return out;
}

class SimCli : public ::testing::Test {
 protected:
  std::map<std::string, std::string> env() const {
    return {{"SCOUT_SHM_DIR", dir_.path()},
            {"SCOUT_MAX_COMMS", "8"},
            {"NCCL_DEBUG", ""},
            {"NCCL_PROFILER_PLUGIN", ""},
            {"SCOUT_JOB_ID", ""}};
  }
  ProcessResult run(std::vector<std::string> args, double timeout_s = 60) {
    args.insert(args.begin(), sim());
    return run_process(args, env(), timeout_s);
  }
  // A 4-rank job (tp 2) whose rank 1 hangs in operation 7 (the last DP bucket of step 0: with pp 1,
  // TP AR, AG, RS, AR are ops 0-3, the DP bucket group 4-7), writing its ground truth to `truth`,
  // ended after 2 s by `stop` (--timeout or --idle-timeout): checks that it exits 3 in 2 to 15 s.
  ProcessResult hung_job(const std::string& stop, const std::string& job, const std::string& truth) {
    ProcessResult r = run({"--ranks", "4", "--tp", "2", "--steps", "50", "--bytes", "8K", "--fault", "hang:rank=1,op=7",
                           stop, "2", "--truth", truth, "--job", job},
                          30);
    EXPECT_EQ(r.exit_code, kExitTimedOut) << stop << "\n" << r.out << r.err;
    EXPECT_GE(r.seconds, 2.0) << stop;
    EXPECT_LT(r.seconds, 15.0) << stop;
    return r;
  }
  TempDir dir_;
};

struct BadFlag {
  std::vector<std::string> args;
  std::string message;  // the exact line, without "scout-sim: "; empty: only check the shape
};

TEST_F(SimCli, BadFlagsGetOneLineAndExitCode2) {
  const std::vector<BadFlag> cases = {
      {{"--ranks", "8", "--fault", "bogus:rank=1,op=2"},
       "fault 'bogus:rank=1,op=2': unknown fault kind 'bogus' (sdc, straggler, hang, desync, crash, slowlink, nan, "
       "gpusdc, linksdc, slowgpu, dtype, optype, skip, extrastep, nondet, pause, p2porder, wronggroup, enqueuestall, "
       "kernelstall, slownic, linkdown, nicdown)"},
      {{"--ranks", "8", "--fault", "p2porder:stage=0"},
       "fault 'p2porder:stage=0': p2porder needs --pp > 1 (rank 0 has no pipeline peer)"},
      {{"--ranks", "8", "--pp", "2", "--fault", "p2porder:stage=1,op=4"},
       "fault 'p2porder:stage=1,op=4': p2porder takes step=N (it reorders that step's pipeline calls)"},
      {{"--ranks", "8", "--pp", "2", "--fault", "p2porder:stage=1,step=20"},
       "fault 'p2porder:stage=1,step=20': step 20 is beyond the run (--steps 20)"},
      {{"--ranks", "8", "--fault", "wronggroup:rank=3"},
       "fault 'wronggroup:rank=3': wronggroup needs --pp > 1 (rank 3 has no pipeline peer)"},
      {{"--ranks", "8", "--pp", "2", "--fault", "wronggroup:rank=3,peer=1"},
       "fault 'wronggroup:rank=3,peer=1': peer applies to slowlink, linksdc and linkdown only"},
      {{"--ranks", "8", "--fault", "enqueuestall:rank=2,ms=5"},
       "fault 'enqueuestall:rank=2,ms=5': ms applies to straggler, slowlink and slownic only"},
      {{"--ranks", "8", "--steps", "2", "--fault", "kernelstall:rank=2,op=100"},
       "fault 'kernelstall:rank=2,op=100': op 100 is beyond rank 2's last operation (9 operations in 2 steps)"},
      {{"--ranks", "8", "--nodes", "2", "--fault", "slownic:rank=1,ms=5"},
       "fault 'slownic:rank=1,ms=5': slownic names a host: node=K, not rank= or stage="},
      {{"--ranks", "8", "--nodes", "2", "--fault", "slownic:node=1"},
       "fault 'slownic:node=1': slownic needs ms=M"},
      {{"--ranks", "8", "--nodes", "2", "--fault", "slownic:node=2,ms=5"},
       "fault 'slownic:node=2,ms=5': node 2 is out of range (--nodes 2)"},
      {{"--ranks", "8", "--fault", "slownic:node=0,ms=5"},
       "fault 'slownic:node=0,ms=5': slownic needs --nodes >= 2 (it slows one host's transfers to the others)"},
      {{"--ranks", "8", "--nodes", "2", "--fault", "slownic:node=0,ms=5,op=3"},
       "fault 'slownic:node=0,ms=5,op=3': op does not apply to slownic (slownic:node=K,ms=M[,step=N])"},
      {{"--ranks", "8", "--fault", "hang:rank=1,step=2,node=1"},
       "fault 'hang:rank=1,step=2,node=1': node applies to slownic and nicdown only"},
      {{"--ranks", "8", "--fault", "linkdown:rank=1"}, "fault 'linkdown:rank=1': linkdown needs peer=Q (the other end)"},
      {{"--ranks", "8", "--fault", "linkdown:rank=1,peer=1"}, "fault 'linkdown:rank=1,peer=1': peer must differ from rank"},
      {{"--ranks", "8", "--fault", "linkdown:rank=1,peer=2,op=3"},
       "fault 'linkdown:rank=1,peer=2,op=3': linkdown takes step=N (a persistent hardware fault)"},
      {{"--ranks", "8", "--fault", "linkdown:rank=0,peer=8"},
       "fault 'linkdown:rank=0,peer=8': peer 8 is out of range (--ranks 8)"},
      {{"--ranks", "8", "--fault", "linkdown:rank=1+2,peer=3"},
       "fault 'linkdown:rank=1+2,peer=3': linkdown names one pair: rank lists and stage= do not apply"},
      {{"--ranks", "8", "--nodes", "2", "--fault", "nicdown:rank=1"},
       "fault 'nicdown:rank=1': nicdown names a host: node=K, not rank= or stage="},
      {{"--ranks", "8", "--nodes", "2", "--fault", "nicdown:node=1,ms=5"},
       "fault 'nicdown:node=1,ms=5': ms does not apply to nicdown (nicdown:node=K[,step=N])"},
      {{"--ranks", "8", "--fault", "nicdown:node=0"},
       "fault 'nicdown:node=0': nicdown needs --nodes >= 2 (it cuts one host off the others)"},
      {{"--ranks", "8", "--nodes", "2", "--fault", "nicdown:node=2"},
       "fault 'nicdown:node=2': node 2 is out of range (--nodes 2)"},
      {{"--ranks", "8", "--fault", "pause:rank=0,every=50"},
       "fault 'pause:rank=0,every=50': pause needs s=S (seconds asleep)"},
      {{"--ranks", "8", "--fault", "pause:rank=0,s=20"},
       "fault 'pause:rank=0,s=20': pause needs every=K (it pauses before steps K, 2K, ...)"},
      {{"--ranks", "8", "--fault", "pause:rank=0,every=0,s=20"},
       "fault 'pause:rank=0,every=0,s=20': every must be >= 1"},
      {{"--ranks", "8", "--fault", "pause:rank=0,every=5,s=0"},
       "fault 'pause:rank=0,every=5,s=0': s must be in 1..3600 (seconds)"},
      {{"--ranks", "8", "--fault", "pause:rank=0,every=5,s=2,step=3"},
       "fault 'pause:rank=0,every=5,s=2,step=3': step does not apply to pause (pause:rank=R,every=K,s=S)"},
      {{"--ranks", "8", "--fault", "pause:rank=0,every=20,s=2"},
       "fault 'pause:rank=0,every=20,s=2': every=20 leaves no step to pause at (steps K, 2K, ... below --steps 20)"},
      {{"--ranks", "8", "--fault", "hang:rank=0,step=3,s=2"},
       "fault 'hang:rank=0,step=3,s=2': every and s apply to pause only"},
      {{"--ranks", "8", "--fault", "extrastep:rank=1,step=2"},
       "fault 'extrastep:rank=1,step=2': extrastep takes no op or step (the extra step comes before step 0)"},
      {{"--ranks", "8", "--fault", "skip:rank=1"}, "fault 'skip:rank=1': skip needs op=N or step=N"},
      {{"--ranks", "8", "--fault", "nondet:rank=1,op=3"},
       "fault 'nondet:rank=1,op=3': nondet takes step=N (it acts from that step on)"},
      {{"--ranks", "8", "--fault", "dtype:rank=1,ms=4"},
       "fault 'dtype:rank=1,ms=4': ms applies to straggler, slowlink and slownic only"},
      {{"--ranks", "8", "--fault", "optype:rank=9"}, "fault 'optype:rank=9': rank 9 is out of range (--ranks 8)"},
      {{"--ranks", "8", "--fault", "dtype:rank=1+1"}, "fault 'dtype:rank=1+1': rank 1 is listed twice"},
      {{"--ranks", "8", "--fault", "dtype:rank=1+"},
       "fault 'dtype:rank=1+': rank=1+ is not a rank or a list R1+R2+... of ranks"},
      {{"--ranks", "8", "--fault", "desync:rank=1+9,step=1"},
       "fault 'desync:rank=1+9,step=1': rank 9 is out of range (--ranks 8)"},
      {{"--ranks", "8", "--pp", "2", "--fault", "desync:stage=2,step=1"},
       "fault 'desync:stage=2,step=1': stage 2 is out of range (--pp 2)"},
      {{"--ranks", "8", "--fault", "desync:rank=1,stage=0,step=1"},
       "fault 'desync:rank=1,stage=0,step=1': give rank=R or stage=S, not both"},
      {{"--ranks", "8", "--tp", "2", "--fault", "slowlink:rank=0+2,peer=1,ms=5"},
       "fault 'slowlink:rank=0+2,peer=1,ms=5': slowlink names one pair: rank lists and stage= do not apply"},
      {{"--ranks", "8", "--fault", "sdc:rank=1,color=2"},
       "fault 'sdc:rank=1,color=2': unknown key 'color' (rank, stage, node, op, step, ms, peer, factor, every, s)"},
      {{"--ranks", "8", "--fault", "sdc:rank=8,op=1"}, "fault 'sdc:rank=8,op=1': rank 8 is out of range (--ranks 8)"},
      {{"--ranks", "8", "--tp", "3"}, "--tp 3 x --cp 1 x --pp 1 does not divide --ranks 8"},
      {{"--ranks", "8", "--tp", "2", "--cp", "3"}, "--tp 2 x --cp 3 x --pp 1 does not divide --ranks 8"},
      {{"--ranks", "8", "--vpp", "2"}, "--vpp 2 needs --pp > 1"},
      {{"--ranks", "8", "--cp", "0"}, "--tp, --pp, --ep, --cp, --vpp and --nodes must be >= 1"},
      {{"--ranks", "8", "--tp", "2", "--pp", "2", "--ep", "3"}, "--ep 3 does not divide DP = 2"},
      {{"--ranks", "8", "--nodes", "3"}, "--nodes 3 does not divide --ranks 8"},
      {{"--ranks", "8", "--tp", "4", "--nodes", "4"},
       "--nodes 4 would split TP groups across hosts (2 ranks per host, --tp 4)"},
      {{"--ranks", "8", "--fault", "sdc:rank=1,op="}, "fault 'sdc:rank=1,op=': missing value for op"},
      {{"--ranks", "8", "--fault", "slowlink:rank=1,ms=5"}, "fault 'slowlink:rank=1,ms=5': slowlink needs peer=Q"},
      {{"--ranks", "8", "--fault", "straggler:rank=1,step=2"}, "fault 'straggler:rank=1,step=2': straggler needs ms=M"},
      {{"--ranks", "8", "--steps", "2", "--fault", "hang:rank=1,op=100"},
       "fault 'hang:rank=1,op=100': op 100 is beyond rank 1's last operation (9 operations in 2 steps)"},
      {{"--ranks", "8", "--tp", "2", "--fault", "slowlink:rank=0,peer=0,ms=5"},
       "fault 'slowlink:rank=0,peer=0,ms=5': peer must differ from rank"},
      {{"--ranks", "8", "--bytes", "12Q"}, "--bytes: unknown size suffix 'Q' (use K, M, G or T)"},
      {{"--ranks", "8", "--ckpt-every", "10"}, "--ckpt-every needs --ckpt-dir"},
      {{"--ranks", "8", "--ckpt-every", "10", "--ckpt-dir", "/tmp/x", "--ckpt-format", "orbax"},
       "--ckpt-format orbax: expected megatron, dcp, deepspeed, hf or nemo"},
      {{"--ranks", "8", "--ckpt-every", "10", "--ckpt-dir", "/tmp/x", "--ckpt-kill-at", "15"},
       "--ckpt-kill-at must name a checkpointed step (a multiple of --ckpt-every, at most --steps)"},
      {{"--ranks", "8", "--frobnicate"}, ""},
      {{"--tp", "2"}, ""},
      {{"--ranks", "abc"}, ""},
      {{"--ranks", "8", "--fault"}, ""},
  };
  for (const BadFlag& c : cases) {
    std::string joined;
    for (auto& a : c.args) joined += a + " ";
    SCOPED_TRACE(joined);
    ProcessResult r = run(c.args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    std::vector<std::string> l = lines(r.err);
    ASSERT_EQ(l.size(), 1u) << r.err;
    EXPECT_EQ(l[0].rfind("scout-sim: ", 0), 0u) << l[0];
    if (!c.message.empty()) { EXPECT_EQ(l[0], "scout-sim: " + c.message); }
  }
}

TEST_F(SimCli, HelpExitsZero) {
  ProcessResult r = run({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--fault"), std::string::npos);
  EXPECT_EQ(r.out.find("--worker-rank"), std::string::npos);  // internal flags are hidden
}

TEST_F(SimCli, CompletedJobPrintsItsShapeAndSummaryAndSetsEachRanksEnvironment) {
  std::map<std::string, std::string> e = env();
  e["NCCL_DEBUG"] = "INFO";
  e["NCCL_DEBUG_SUBSYS"] = "ENV";
  ProcessResult r = run_process({sim(), "--ranks", "8", "--tp", "2", "--pp", "2", "--nodes", "2", "--steps", "3",
                                 "--bytes", "16K", "--job", "cli-env"},
                                e, 60);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 2u) << r.out;
  char plugin[PATH_MAX];
  ASSERT_NE(::realpath(build_path("lib/libnccl-profiler-scout.so").c_str(), plugin), nullptr);
  EXPECT_EQ(out[0],
            "scout-sim: job cli-env: 8 ranks (tp 2, pp 2, dp 2, ep 1) on 2 hosts, 3 steps, 16384-byte "
            "messages, plugin " +
                std::string(plugin));
  // Total operations as the workload defines them.
  SimOptions o;
  o.ranks = 8;
  o.tp = 2;
  o.pp = 2;
  o.nodes = 2;
  o.steps = 3;
  o.bytes = 16384;
  Layout L(o);
  uint64_t ops = 0;
  for (int g = 0; g < 8; ++g) ops += total_ops(L, o, g);
  EXPECT_EQ(ops, 8u * 31u);
  const std::string head = "scout-sim: job cli-env: 8 ranks, 3/3 steps, " + std::to_string(ops) + " ops, ";
  const std::string tail = " s, completed, exit 0";
  ASSERT_GT(out[1].size(), head.size() + tail.size()) << out[1];
  EXPECT_EQ(out[1].substr(0, head.size()), head);
  EXPECT_EQ(out[1].substr(out[1].size() - tail.size()), tail);
  std::string secs = out[1].substr(head.size(), out[1].size() - head.size() - tail.size());
  EXPECT_EQ(secs.find_first_not_of("0123456789."), std::string::npos) << secs;
  // torchrun's variables, the job id, and one host per 4 ranks.
  for (int g = 0; g < 8; ++g) {
    std::string host = g < 4 ? "node0" : "node1";
    std::string want = "scout-sim rank " + std::to_string(g) + ": RANK=" + std::to_string(g) +
                       " LOCAL_RANK=" + std::to_string(g % 4) +
                       " WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 SCOUT_JOB_ID=cli-env " + "SCOUT_HOST=" + host;
    EXPECT_NE(r.err.find(want), std::string::npos) << want;
    EXPECT_NE(r.err.find("NCCL_PROFILER_PLUGIN set by environment to " + std::string(plugin)), std::string::npos);
  }
}

TEST_F(SimCli, OneNodeLeavesScoutHostUnsetAndUserPluginChoiceIsKept) {
  std::map<std::string, std::string> e = env();
  e["NCCL_DEBUG"] = "INFO";
  e["NCCL_DEBUG_SUBSYS"] = "ENV";
  e["NCCL_PROFILER_PLUGIN"] = "none";
  e["SCOUT_HOST"] = "";
  ProcessResult r = run_process({sim(), "--ranks", "2", "--steps", "1", "--bytes", "4K", "--job", "j1"}, e, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("plugin none"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("SCOUT_JOB_ID=j1 SCOUT_HOST=(unset)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("NCCL_PROFILER_PLUGIN set by environment to none"), std::string::npos);
}

TEST_F(SimCli, JobIdDefaultsToTheEnvironmentsThenToThePid) {
  std::map<std::string, std::string> e = env();
  e["SCOUT_JOB_ID"] = "from-env";
  ProcessResult r = run_process({sim(), "--ranks", "2", "--steps", "1", "--bytes", "4K"}, e, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("scout-sim: job from-env: 2 ranks", 0), 0u) << r.out;
  e["SCOUT_JOB_ID"] = "";
  Subprocess p({sim(), "--ranks", "2", "--steps", "1", "--bytes", "4K"}, e);
  r = p.wait(60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("scout-sim: job sim-" + std::to_string(p.pid()) + ": 2 ranks", 0), 0u) << r.out;
}

// A hang drill ends by itself once no rank issues an operation for --idle-timeout seconds (default
// 90, past the observer's 60 s hang timeout: a drill does not sit for the 600 s of --timeout), exit 3,
// naming the hung rank.
TEST_F(SimCli, HangIsEndedWhenNoRankProgressesForTheIdleTimeout) {
  ProcessResult r = hung_job("--idle-timeout", "idle1", dir_.path() + "/idle.jsonl");
  EXPECT_NE(r.out.find("no rank issued an operation for 2 s (--idle-timeout); hung (fault): rank 1; killed while "
                       "running: rank 0,2-3, exit 3"),
            std::string::npos)
      << r.out;
}

TEST_F(SimCli, HangIsEndedByTheTimeoutWithExitCode3) {
  std::string truth = dir_.path() + "/hang.jsonl";
  ProcessResult r = hung_job("--timeout", "hang1", truth);
  EXPECT_NE(r.out.find("timed out after 2 s; hung (fault): rank 1; killed while running: rank 0,2-3, exit 3"),
            std::string::npos)
      << r.out;
  auto t = truth_lines(truth);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["kind"], "hang");
  EXPECT_EQ(t[0]["global_rank"], 1);
  EXPECT_EQ(t[0]["op"], 7);
  EXPECT_EQ(t[0]["step"], 0);
  EXPECT_EQ(t[0]["comm"]["name"], "dp1");
  EXPECT_EQ(t[0]["key"]["func"], "AllReduce");
  EXPECT_EQ(t[0]["key"]["seq"], 3);
}

TEST_F(SimCli, CrashKillsTheRankAndTheOthersBlockUntilTheTimeout) {
  std::string truth = dir_.path() + "/crash.jsonl";
  ProcessResult r = run({"--ranks", "4", "--tp", "2", "--steps", "50", "--bytes", "8K", "--fault", "crash:rank=2,op=1",
                         "--timeout", "2", "--truth", truth, "--job", "crash1"},
                        30);
  EXPECT_EQ(r.exit_code, kExitTimedOut) << r.out << r.err;
  EXPECT_NE(r.out.find("crashed (fault): rank 2; killed while running: rank 0-1,3, exit 3"), std::string::npos)
      << r.out;
  auto t = truth_lines(truth);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["kind"], "crash");
  EXPECT_EQ(t[0]["global_rank"], 2);
  EXPECT_EQ(t[0]["op"], 1);
  EXPECT_EQ(t[0]["comm"]["name"], "tp1");
  EXPECT_EQ(t[0]["key"]["func"], "AllGather");
  EXPECT_EQ(t[0]["key"]["seq"], 0);
}

// The emulated device state a rank wrote (replay/emu_device.h), or null when none.
nlohmann::json device(const std::string& dir, const std::string& job, const std::string& gpu) {
  std::ifstream in(dir + "/scout-emugpu." + job + "." + gpu + ".json");
  if (!in) return nullptr;
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// linkdown 1<->2 inside a TP 4 group from step 2: the group's collectives stop (every channel's ring
// uses the link), the job ends at the timeout; rank 1 writes the ground truth; the devices of both
// ends receive nothing from each other in replay, the others are healthy.
TEST_F(SimCli, LinkdownStopsTheJobAndWritesItsGroundTruthAndBothEndsDevices) {
  std::string truth = dir_.path() + "/linkdown.jsonl";
  ProcessResult r = run({"--ranks", "4", "--tp", "4", "--steps", "50", "--bytes", "8K", "--fault",
                         "linkdown:rank=1,peer=2,step=2", "--timeout", "2", "--truth", truth, "--job", "ld1"},
                        30);
  EXPECT_EQ(r.exit_code, kExitTimedOut) << r.out << r.err;
  EXPECT_NE(r.out.find("2/50 steps"), std::string::npos) << r.out;
  auto t = truth_lines(truth);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["kind"], "linkdown");
  EXPECT_EQ(t[0]["global_rank"], 1);
  EXPECT_EQ(t[0]["peer"], 2);
  EXPECT_EQ(t[0]["step"], 2);
  const nlohmann::json d1 = device(dir_.path(), "ld1", "GPU-sim-node0-1");
  const nlohmann::json d2 = device(dir_.path(), "ld1", "GPU-sim-node0-2");
  ASSERT_TRUE(d1.is_object());
  ASSERT_TRUE(d2.is_object());
  EXPECT_EQ(d1["links_in"], (nlohmann::json{{"GPU-sim-node0-2", {{"flip", false}, {"delay_ns", 0}, {"down", true}}}}));
  EXPECT_EQ(d2["links_in"], (nlohmann::json{{"GPU-sim-node0-1", {{"flip", false}, {"delay_ns", 0}, {"down", true}}}}));
  EXPECT_TRUE(device(dir_.path(), "ld1", "GPU-sim-node0-0").is_null());
}

// nicdown of host 1 (ranks 2, 3) from step 2: its first rank writes one line; every device of the
// other host receives nothing from host 1's GPUs and theirs nothing from host 0's.
TEST_F(SimCli, NicdownWritesOneLineAndCutsTheHostOffInReplay) {
  std::string truth = dir_.path() + "/nicdown.jsonl";
  ProcessResult r = run({"--ranks", "4", "--nodes", "2", "--steps", "50", "--bytes", "8K", "--fault",
                         "nicdown:node=1,step=2", "--timeout", "2", "--truth", truth, "--job", "nd1"},
                        30);
  EXPECT_EQ(r.exit_code, kExitTimedOut) << r.out << r.err;
  auto t = truth_lines(truth);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["kind"], "nicdown");
  EXPECT_EQ(t[0]["global_rank"], 2);
  EXPECT_TRUE(t[0]["peer"].is_null());
  EXPECT_EQ(t[0]["detail"]["node"], 1);
  const nlohmann::json d0 = device(dir_.path(), "nd1", "GPU-sim-node0-0");
  const nlohmann::json d3 = device(dir_.path(), "nd1", "GPU-sim-node1-1");
  ASSERT_TRUE(d0.is_object());
  ASSERT_TRUE(d3.is_object());
  EXPECT_EQ(d0["links_in"].size(), 2u);
  EXPECT_TRUE(d0["links_in"]["GPU-sim-node1-0"]["down"]);
  EXPECT_TRUE(d0["links_in"]["GPU-sim-node1-1"]["down"]);
  EXPECT_EQ(d3["links_in"].size(), 2u);
  EXPECT_TRUE(d3["links_in"]["GPU-sim-node0-0"]["down"]);
  EXPECT_TRUE(d3["links_in"]["GPU-sim-node0-1"]["down"]);
}

// kernelstall: the rank's emulated GPU is hung from the stall on (replay on it finishes nothing).
TEST_F(SimCli, KernelstallLeavesTheRanksEmulatedGpuHung) {
  ProcessResult r = run({"--ranks", "2", "--tp", "2", "--steps", "50", "--bytes", "8K", "--fault",
                         "kernelstall:rank=1,step=3", "--timeout", "2", "--job", "ks1"},
                        30);
  EXPECT_EQ(r.exit_code, kExitTimedOut) << r.out << r.err;
  const nlohmann::json d1 = device(dir_.path(), "ks1", "GPU-sim-node0-1");
  ASSERT_TRUE(d1.is_object());
  EXPECT_EQ(d1["hung"], true);
  EXPECT_TRUE(device(dir_.path(), "ks1", "GPU-sim-node0-0").is_null());
}

TEST_F(SimCli, SigtermEndsTheJobWithExitCode4) {
  Subprocess p({sim(), "--ranks", "2", "--steps", "100000", "--bytes", "4K", "--step-ms", "5", "--job", "sig1"}, env());
  // Wait for the start line, then a little work.
  for (int i = 0; i < 500 && p.out_so_far().find("scout-sim: job sig1") == std::string::npos; ++i) ::usleep(10000);
  ::usleep(300000);
  p.signal(SIGTERM);
  ProcessResult r = p.wait(20);
  EXPECT_EQ(r.exit_code, kExitInterrupted) << r.out << r.err;
  EXPECT_NE(r.out.find("interrupted by SIGTERM; killed while running: rank 0-1, exit 4"), std::string::npos) << r.out;
}

TEST(RankRanges, CompressesRuns) {
  EXPECT_EQ(rank_ranges({}), "");
  EXPECT_EQ(rank_ranges({3}), "3");
  EXPECT_EQ(rank_ranges({0, 1, 2, 4, 6, 7}), "0-2,4,6-7");
}

}  // namespace
