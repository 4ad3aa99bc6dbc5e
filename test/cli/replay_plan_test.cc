// GEMM capture end to end: `scout run` with the real observer around an emulated
// mixture-of-experts job (`scout-sim --ranks 8 --tp 2 --ep 4 --moe-experts 16 --steps 200`,
// SCOUT_GEMM_CAPTURE=1: the plugin finds scout-sim's cuBLASLt logger stand-in and captures its
// matmul lines), then `scout replay plan` on the store: at least 500 distinct shapes, at most
// one recipe per 20 shapes, coverage at least 0.99 (docs/replay.md).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::TempDir;

// The environment of a job with GEMM capture on for its whole run (one window), under `d`, with
// nothing inherited that names another job, plugin or GPU.
std::map<std::string, std::string> capture_env(const std::string& d) {
  return {{"SCOUT_SHM_DIR", d + "/shm"},  {"SCOUT_STATE_DIR", d + "/state"},
          {"SCOUT_HOST", "node0"},        {"SCOUT_GEMM_CAPTURE", "1"},
          {"SCOUT_GEMM_WINDOW_MS", "3600000"}, {"SCOUT_JOB_ID", ""},
          {"TORCHELASTIC_RUN_ID", ""},    {"SLURM_JOB_ID", ""},
          {"NCCL_PROFILER_PLUGIN", ""},   {"CUBLASLT_LOG_LEVEL", ""},
          {"SCOUT_GPU", ""}};
}

TEST(ReplayPlan, MoeJobUnderTheObserver) {
  TempDir dir;
  const std::string d = dir.path();
  fs::create_directories(d + "/shm");
  std::map<std::string, std::string> env = capture_env(d);
  env["SCOUT_OBSERVER_STRAGGLER_MIN_MS"] = "1000";
  env["SCOUT_OBSERVER_SLOW_MIN_MS"] = "1000";
  ProcessResult run = run_process({build_path("bin/scout"),
                                   "run",
                                   "--job",
                                   "moe",
                                   "--",
                                   build_path("bin/scout-sim"),
                                   "--ranks",
                                   "8",
                                   "--tp",
                                   "2",
                                   "--ep",
                                   "4",
                                   "--moe-experts",
                                   "16",
                                   "--steps",
                                   "200",
                                   "--bytes",
                                   "4K",
                                   "--seed",
                                   "3"},
                                  env, 300);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  ProcessResult plan = run_process({build_path("bin/scout"), "replay", "plan", "--job", "moe", "--json"}, env, 60);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  nlohmann::json j = nlohmann::json::parse(plan.out);
  for (const char* key :
       {"shapes", "regimes", "recipes", "cycles", "observed_ms", "covered_ms", "coverage", "cycle_ms", "budget"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  // docs/replay-schedule.md: `cycles` lists each check cycle's recipes (every recipe once, in its
  // cycle), coverage is covered_ms / observed_ms, exactly 1 when every shape is covered (no
  // --max-recipes), and the text's "est. X ms" is observed_ms.
  ASSERT_EQ(j["cycles"].size(), j["budget"]["cycles"].get<size_t>());
  size_t listed = 0;
  for (size_t c = 0; c < j["cycles"].size(); ++c)
    for (const auto& r : j["cycles"][c]) {
      EXPECT_EQ(j["recipes"][r.get<size_t>()]["cycle"].get<size_t>(), c);
      ++listed;
    }
  EXPECT_EQ(listed, j["recipes"].size());
  EXPECT_EQ(j["coverage"].get<double>(), 1.0);
  EXPECT_EQ(j["covered_ms"].get<double>(), j["observed_ms"].get<double>());
  size_t shapes = j["shapes"].size(), recipes = j["recipes"].size();
  EXPECT_GE(shapes, 500u);
  EXPECT_GE(recipes, 1u);
  EXPECT_LE(recipes * 20, shapes);
  EXPECT_GE(j["coverage"].get<double>(), 0.99);
  // Every rank captured, nothing malformed or dropped; the expert GEMMs are BF16 with
  // COMPUTE_32F as the stand-in logs them.
  ASSERT_EQ(j["capture"].size(), 8u);
  std::set<int> ranks;
  for (const auto& c : j["capture"]) {
    ranks.insert(c["global_rank"].get<int>());
    EXPECT_GE(c["windows"].get<uint64_t>(), 1u);
    EXPECT_EQ(c["malformed"].get<uint64_t>(), 0u);
    EXPECT_EQ(c["dropped_full"].get<uint64_t>(), 0u);
    EXPECT_EQ(c["captured"].get<uint64_t>(), c["lines"].get<uint64_t>());
  }
  EXPECT_EQ(ranks.size(), 8u);
  for (const auto& s : j["shapes"]) {
    EXPECT_EQ(s["a_type"], "R_16BF");
    EXPECT_EQ(s["compute"], "COMPUTE_32F");
  }
  // Each recipe is replayed on at least three ranks (its ranks and their peers).
  for (const auto& r : j["recipes"]) EXPECT_GE(r["participants"].size(), 3u);

  ProcessResult text = run_process({build_path("bin/scout"), "replay", "plan", "--job", "moe"}, env, 60);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("GEMM replay plan: " + std::to_string(shapes) + " shape classes"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(fmt::format("coverage 1.0000 of observed GEMM time (est. {:.3f} ms on 132 SMs)",
                                      j["observed_ms"].get<double>())),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("REGIMES"), std::string::npos);
  EXPECT_NE(text.out.find("RECIPES"), std::string::npos);
}

}  // namespace

// The plan drives replay: the same MoE job with `gpusdc` on rank 3 from step 20 (its GPU computes
// wrong GEMMs). The periodic cycles replay the plan's recipes (captured expert shapes, not the
// default 4096x4096x4096 set), and rank 3 is named by replay's GEMM vote.
TEST(ReplayPlan, GpuSdcOnTheMoeJobIsAttributedByReplayOfThePlannedShapes) {
  TempDir dir;
  const std::string d = dir.path();
  fs::create_directories(d + "/shm");
  std::map<std::string, std::string> env = capture_env(d);
  ProcessResult run = run_process({build_path("bin/scout"), "run", "--job", "moesdc", "--", build_path("bin/scout-sim"),
                                   "--ranks", "8", "--tp", "2", "--ep", "4", "--moe-experts", "16", "--steps", "200",
                                   "--bytes", "4K", "--seed", "3", "--step-ms", "25", "--fault", "gpusdc:rank=3,step=20"},
                                  env, 300);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ProcessResult f = run_process({build_path("bin/scout"), "findings", "--json", "--job", "moesdc"}, env, 60);
  ASSERT_EQ(f.exit_code, 0) << f.err;
  nlohmann::json replay_sdc;
  int n = 0;
  std::stringstream lines(f.out);
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["kind"] == "sdc" && j["evidence"].value("source", "") == "replay") {
      replay_sdc = j;
      n++;
    }
  }
  ASSERT_EQ(n, 1) << f.out << run.err;
  EXPECT_EQ(replay_sdc["verdict"], "attributed");
  EXPECT_EQ(replay_sdc["suspects"][0]["global_rank"], 3);
  EXPECT_EQ(replay_sdc["evidence"]["check"], "gemm-vote");
  const std::string recipe = replay_sdc["evidence"]["recipe"].get<std::string>();
  EXPECT_EQ(recipe.rfind("gemm:bf16:", 0), 0u) << recipe;
  EXPECT_EQ(recipe.find("4096x4096x4096"), std::string::npos) << recipe;
  // Every periodic cycle replayed planned shapes only.
  ProcessResult list = run_process({build_path("bin/scout"), "replay", "list", "--json", "--job", "moesdc"}, env, 60);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("\"found\":\"sdc on 3\""), std::string::npos) << list.out;
}
