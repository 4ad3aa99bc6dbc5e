// `scout replay list` and `scout replay show` on a store holding three replay cycles written by the
// store writer as the observer writes them (passed; failed; passed with a slow GPU): the table, the
// JSON lines, one cycle's summary and its samples (golden files in test/fixtures/cli/, rewritten
// by `make update-golden`), an unknown id (exit 2) and an empty store (docs/cli.md, "scout replay
// list").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <sstream>

#include "observer/store/writer.h"
#include "test/support/golden.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout;
using scout::testing::build_path;
using scout::testing::expect_golden;
using scout::testing::source_path;
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
        "sdc":[{"global_rank":1,"gpu":"G1","check":"gemm-vote","recipe":"gemm:bf16:64x64x64","votes":{"groups":[{"value":"0x00000000000000aa","voters":[0,2]},{"value":"0x00000000000000bb","voters":[1]}],"majority":"0x00000000000000aa","outcome":"attributed"},"peer":null}],
        "slow_gpus":[{"global_rank":1}],"slow_pairs":[{"ranks":[0,1]}],"gpu_normal":[]}})");
    w->put_replay_cycle(&b);
    obs::ReplayCycleRecord c;  // every output right, one GPU slow: OUTCOME says so
    c.cycle = 3;
    c.trigger = "straggler";
    c.started_ns = kT0 + 4'000'000'000;
    c.ended_ns = kT0 + 4'030'000'000;
    c.outcome = "pass";
    c.backend = "emu";
    c.detail = nlohmann::json::parse(R"({"participants":[{"global_rank":0},{"global_rank":1},{"global_rank":2}],
      "recipes":["gemm:fp32:64x64x64"],
      "verdict":{"outcome":"pass","recipes":[{"recipe":"gemm:fp32:64x64x64","kind":"gemm","outcome":"pass","reason":""}],
        "sdc":[],"slow_gpus":[{"global_rank":2}],"slow_pairs":[],"gpu_normal":[0,1]}})");
    w->put_replay_cycle(&c);
  }
  ASSERT_TRUE(w->flush());
}

ProcessResult scout_cli(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {build_path("bin/scout")};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, env, 30);
}

TEST(ReplayList, TableHasOneRowPerCycleWithWhatItFound) {
  TempDir dir;
  const std::string db = dir.path() + "/node-0.db";
  write_cycles(db, true);
  ProcessResult r = scout_cli({"replay", "list", "--store", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // OUTCOME agrees with FOUND: a cycle that passed but found a slow GPU says "slow".
  expect_golden(source_path("test/fixtures/cli/replay_list.txt"), r.out);
}

TEST(ReplayList, JsonLinesCarryCountsAndFound) {
  TempDir dir;
  const std::string db = dir.path() + "/node-0.db";
  write_cycles(db, true);
  ProcessResult r = scout_cli({"replay", "list", "--store", db, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> lines;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 3u);
  const nlohmann::json &first = lines[0], &second = lines[1];
  // JSON keeps the stored outcome (pass: every output right); FOUND names the slow GPU.
  EXPECT_EQ(lines[2]["outcome"], "pass");
  EXPECT_EQ(lines[2]["found"], "slow GPU 2");
  EXPECT_EQ(first, nlohmann::json::parse(R"({"id":1,"cycle":1,"trigger":"periodic","started_ns":1767225600000000000,
    "ended_ns":1767225600120000000,"outcome":"pass","backend":"emu","recipes":2,"participants":3,"found":"-"})"));
  EXPECT_EQ(second["outcome"], "fail");
  EXPECT_EQ(second["found"], "sdc on 1; slow GPU 1; slow link 0-1");
  EXPECT_FALSE(second.contains("detail"));
}

TEST(ReplayList, ShowPrintsTheSummaryAndTheSamplesOnRequest) {
  TempDir dir;
  const std::string db = dir.path() + "/node-0.db";
  write_cycles(db, true);
  // The summary first: what it found, the counts, the recipes that did not pass, the votes in
  // words, and the command that shows the rest.
  ProcessResult r = scout_cli({"replay", "show", "2", "--store", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string out = r.out;
  for (size_t p; (p = out.find(dir.path())) != std::string::npos;) out.replace(p, dir.path().size(), "<DIR>");
  for (size_t p; (p = out.find(build_path("bin/scout"))) != std::string::npos;)
    out.replace(p, build_path("bin/scout").size(), "<SCOUT>");
  expect_golden(source_path("test/fixtures/cli/replay_show.txt"), out);
  // --samples: also the GPUs of the readiness contract, every recipe and every sample.
  r = scout_cli({"replay", "show", "2", "--store", db, "--samples"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden(source_path("test/fixtures/cli/replay_show_samples.txt"), r.out);
  // Named by --job, the hint names it by --job too (docs/cli.md: hints name the store as it was
  // named), and pastes as printed.
  const std::string jdb = dir.path() + "/state/j7/node-0.db";
  std::filesystem::create_directories(dir.path() + "/state/j7");
  write_cycles(jdb, true);
  r = scout_cli({"replay", "show", "2", "--job", "j7"}, {{"SCOUT_STATE_DIR", dir.path() + "/state"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  the GPUs, every recipe and 2 samples: " + build_path("bin/scout") +
                      " replay show 2 --job j7 --samples\n"),
            std::string::npos)
      << r.out;
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
