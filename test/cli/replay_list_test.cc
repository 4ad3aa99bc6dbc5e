// `scout replay list` and `scout replay show` on a store holding two replay cycles written by the
// store writer as the observer writes them: the exact table, the JSON lines, one cycle shown whole,
// an unknown id (exit 2) and an empty store (docs/cli.md, "scout replay list").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "observer/store/writer.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout;
using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::TempDir;

constexpr int64_t kT0 = 1'767'225'600'000'000'000;  // 2026-01-01 00:00:00 UTC

void write_cycles(const std::string& path, bool with_cycles) {
  store::WriterOptions o;
  o.on_error = [](const std::string& m) { ADD_FAILURE() << m; };
  std::string err;
  auto w = store::StoreWriter::open(path, o, &err);
  ASSERT_TRUE(w) << err;
  if (with_cycles) {
    obs::ReplayCycleRecord a;
    a.cycle = 1;
    a.trigger = "periodic";
    a.started_ns = kT0;
    a.ended_ns = kT0 + 120'000'000;
    a.outcome = "pass";
    a.backend = "emu";
    a.detail = nlohmann::json::parse(R"({"participants":[{"global_rank":0},{"global_rank":1},{"global_rank":2}],
      "recipes":["gemm:bf16:64x64x64","link:1->0"],"verdict":{"outcome":"pass","recipes":[],"sdc":[],
      "slow_gpus":[],"slow_pairs":[],"gpu_normal":[0,1,2]}})");
    w->put_replay_cycle(&a);
    obs::ReplayCycleRecord b;
    b.cycle = 2;
    b.trigger = "sdc";
    b.started_ns = kT0 + 2'500'000'000;
    b.ended_ns = kT0 + 2'540'000'000;
    b.outcome = "fail";
    b.backend = "emu";
    b.detail = nlohmann::json::parse(R"({"participants":[{"global_rank":0},{"global_rank":1},{"global_rank":2}],
      "recipes":["gemm:bf16:64x64x64"],
      "gpus":[{"global_rank":0,"gpu":"G0","model":"emu","sm_count":4,"libs":"emu 1","ready":true},
              {"global_rank":2,"gpu":"G2","model":"emu","sm_count":4,"libs":"emu 1","ready":false,"reason":"no device"}],
      "samples":[{"recipe":"gemm:bf16:64x64x64","global_rank":0,"gpu":"G0","round":0,"status":"ok","fp":"0x00000000000000aa","ns":1500000},
                 {"recipe":"gemm:bf16:64x64x64","global_rank":1,"gpu":"G1","round":0,"status":"ok","fp":"0x00000000000000bb","ns":3000000}],
      "verdict":{"outcome":"fail","recipes":[{"recipe":"gemm:bf16:64x64x64","kind":"gemm","outcome":"fail","reason":"rank 1 outside the majority"}],
        "sdc":[{"global_rank":1,"gpu":"G1","check":"gemm-vote","recipe":"gemm:bf16:64x64x64","votes":{"0xaa":2},"peer":null}],
        "slow_gpus":[{"global_rank":1}],"slow_pairs":[{"ranks":[0,1]}],"gpu_normal":[]}})");
    w->put_replay_cycle(&b);
  }
  ASSERT_TRUE(w->flush());
}

ProcessResult scout_cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {build_path("bin/scout")};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, {}, 30);
}

TEST(ReplayList, TableHasOneRowPerCycleWithWhatItFound) {
  TempDir dir;
  const std::string db = dir.path() + "/node-0.db";
  write_cycles(db, true);
  ProcessResult r = scout_cli({"replay", "list", "--store", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "2 replay cycle(s), the first at 2026-01-01 00:00:00.000 UTC (STARTED is relative to it)\n"
            "ID  CYCLE  TRIGGER   STARTED    TOOK  BACKEND  OUTCOME  RECIPES  GPUS  FOUND\n"
            " 1      1  periodic  +0.000s   120ms  emu      pass           2     3  -\n"
            " 2      2  sdc       +2.500s  40.0ms  emu      fail           1     3  sdc on 1; slow GPU 1; slow link 0-1\n");
}

TEST(ReplayList, JsonLinesCarryCountsAndFound) {
  TempDir dir;
  const std::string db = dir.path() + "/node-0.db";
  write_cycles(db, true);
  ProcessResult r = scout_cli({"replay", "list", "--store", db, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t nl = r.out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  nlohmann::json first = nlohmann::json::parse(r.out.substr(0, nl));
  nlohmann::json second = nlohmann::json::parse(r.out.substr(nl + 1));
  EXPECT_EQ(first, nlohmann::json::parse(R"({"id":1,"cycle":1,"trigger":"periodic","started_ns":1767225600000000000,
    "ended_ns":1767225600120000000,"outcome":"pass","backend":"emu","recipes":2,"participants":3,"found":"-"})"));
  EXPECT_EQ(second["outcome"], "fail");
  EXPECT_EQ(second["found"], "sdc on 1; slow GPU 1; slow link 0-1");
  EXPECT_FALSE(second.contains("detail"));
}

TEST(ReplayList, ShowPrintsGpusRecipesVerdictsAndSamples) {
  TempDir dir;
  const std::string db = dir.path() + "/node-0.db";
  write_cycles(db, true);
  ProcessResult r = scout_cli({"replay", "show", "2", "--store", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "replay cycle 2 (id 2): trigger sdc, fail, backend emu\n"
            "  started 2026-01-01 00:00:02.500 UTC, took 40.0ms\n"
            "  GPUs (readiness contract):\n"
            "    RANK  GPU  MODEL  SMS  LIBRARIES  READY\n"
            "       0  G0   emu      4  emu 1      yes\n"
            "       2  G2   emu      4  emu 1      no (no device)\n"
            "  recipes:\n"
            "    RECIPE              OUTCOME  REASON\n"
            "    gemm:bf16:64x64x64  fail     rank 1 outside the majority\n"
            "  sdc: rank 1 (G1) gemm-vote in gemm:bf16:64x64x64; votes {\"0xaa\":2}\n"
            "  found: sdc on 1; slow GPU 1; slow link 0-1\n"
            "  samples (times in ms):\n"
            "    RECIPE              RANK  GPU  ROUND  STATUS  FINGERPRINT         EXPECTED     MS  PEER\n"
            "    gemm:bf16:64x64x64     0  G0       0  ok      0x00000000000000aa  -         1.500     -\n"
            "    gemm:bf16:64x64x64     1  G1       0  ok      0x00000000000000bb  -         3.000     -\n");
  ProcessResult j = scout_cli({"replay", "show", "2", "--store", db, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  nlohmann::json o = nlohmann::json::parse(j.out);
  EXPECT_EQ(o["detail"]["samples"].size(), 2u);
  EXPECT_EQ(o["detail"]["verdict"]["sdc"][0]["global_rank"], 1);
}

TEST(ReplayList, UnknownIdExitsTwoAndEmptyStoreSaysSo) {
  TempDir dir;
  const std::string db = dir.path() + "/node-0.db";
  write_cycles(db, false);
  ProcessResult none = scout_cli({"replay", "list", "--store", db});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out,
            "no replay cycles in this store (replay off, no GPU known to the observer yet, or the job ran too "
            "briefly; docs/replay.md)\n");
  ProcessResult bad = scout_cli({"replay", "show", "7", "--store", db});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(bad.err, "scout: no replay cycle with id 7 in this store (scout replay list)\n");
}

}  // namespace
