// GEMM capture end to end: `scout run` with the real observer around an emulated
// mixture-of-experts job (`scout-sim --ranks 8 --tp 2 --ep 4 --moe-experts 16 --steps 200`,
// SCOUT_GEMM_CAPTURE=1: the plugin finds scout-sim's cuBLASLt logger stand-in and captures its
// matmul lines), then `scout replay plan` on the store: at least 500 distinct shapes, at most
// one recipe per 20 shapes, coverage at least 0.99 (docs/replay.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

namespace fs = std::filesystem;
using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::TempDir;

TEST(ReplayPlan, MoeJobUnderTheObserver) {
  TempDir dir;
  const std::string d = dir.path();
  fs::create_directories(d + "/shm");
  std::map<std::string, std::string> env = {{"SCOUT_SHM_DIR", d + "/shm"},
                                            {"SCOUT_STATE_DIR", d + "/state"},
                                            {"SCOUT_HOST", "node0"},
                                            {"SCOUT_GEMM_CAPTURE", "1"},
                                            {"SCOUT_GEMM_WINDOW_MS", "3600000"},
                                            {"SCOUT_OBSERVER_STRAGGLER_MIN_MS", "1000"},
                                            {"SCOUT_OBSERVER_SLOW_MIN_MS", "1000"},
                                            {"SCOUT_JOB_ID", ""},
                                            {"TORCHELASTIC_RUN_ID", ""},
                                            {"SLURM_JOB_ID", ""},
                                            {"NCCL_PROFILER_PLUGIN", ""},
                                            {"CUBLASLT_LOG_LEVEL", ""},
                                            {"SCOUT_GPU", ""}};
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
  for (const char* key : {"shapes", "regimes", "recipes", "coverage", "cycle_ms", "budget"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
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
  EXPECT_NE(text.out.find("REGIMES"), std::string::npos);
  EXPECT_NE(text.out.find("RECIPES"), std::string::npos);
}

}  // namespace
