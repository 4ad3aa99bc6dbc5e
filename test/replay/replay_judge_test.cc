// Verdicts of a replay cycle (replay/judge.h) from samples of the emulated backend
// (replay/emu_backend.h) on emulated devices with and without hardware faults.
#include <gtest/gtest.h>

#include "replay/emu_backend.h"
#include "replay/judge.h"
#include "replay/server.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::replay;

struct Rig {
  scout::testing::TempDir dir;
  EmuBackend backend{dir.path(), "job"};
  std::vector<Participant> ps;
  std::vector<GpuInfo> gpus;
  explicit Rig(int n) {
    for (int g = 0; g < n; ++g) {
      ps.push_back({g, "GPU-sim-node0-" + std::to_string(g), g});
      gpus.push_back(backend.describe(ps.back()));
    }
  }
  void set(int g, const EmuDeviceState& s) {
    std::string err;
    ASSERT_TRUE(write_emu_device(emu_device_path(dir.path(), "job", ps[g].gpu), s, &err)) << err;
  }
  CycleVerdict cycle(const RecipePlan& plan, std::vector<Sample>* out = nullptr) {
    auto rs = build_recipes(plan);
    std::vector<std::string> ids;
    for (auto& r : rs) ids.push_back(r.id);
    auto samples = run_recipes(backend, ps, rs, ids, INT64_MAX);
    if (out) *out = samples;
    return judge(rs, gpus, samples, {}, OutlierRule{});
  }
};

RecipePlan gemm_plan() {
  RecipePlan p;
  p.gemms = {{4096, 4096, 4096, "bf16"}};
  return p;
}

TEST(ReplayJudge, HealthyGpusPass) {
  Rig rig(8);
  std::vector<Sample> ss;
  CycleVerdict v = rig.cycle(gemm_plan(), &ss);
  EXPECT_EQ(v.outcome, Outcome::kPass);
  ASSERT_EQ(ss.size(), 16u);  // 8 GPUs x 2 rounds
  for (const Sample& s : ss) {
    EXPECT_EQ(s.status, SampleStatus::kOk);
    EXPECT_EQ(s.fp, ss[0].fp);  // the same bits on every GPU
  }
  EXPECT_TRUE(v.sdc.empty());
  EXPECT_TRUE(v.slow_gpus.empty());
  EXPECT_EQ(v.gpu_normal, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(ReplayJudge, WrongGemmIsAttributedToItsGpu) {
  Rig rig(8);
  EmuDeviceState bad;
  bad.gemm_flip = true;
  rig.set(5, bad);
  CycleVerdict v = rig.cycle(gemm_plan());
  EXPECT_EQ(v.outcome, Outcome::kFail);
  ASSERT_EQ(v.sdc.size(), 1u);
  EXPECT_EQ(v.sdc[0].global_rank, 5);
  EXPECT_EQ(v.sdc[0].check, SdcCheck::kGemmVote);
  EXPECT_EQ(v.sdc[0].votes["outcome"], "attributed");
  EXPECT_EQ(v.sdc[0].votes["groups"][0]["voters"], (std::vector<int>{0, 1, 2, 3, 4, 6, 7}));
}

TEST(ReplayJudge, TwoGpusThatDisagreeStayInconclusive) {
  Rig rig(2);
  EmuDeviceState bad;
  bad.gemm_flip = true;
  rig.set(1, bad);
  CycleVerdict v = rig.cycle(gemm_plan());
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_TRUE(v.sdc.empty());
  ASSERT_EQ(v.recipes.size(), 1u);
  EXPECT_EQ(v.recipes[0].reason, "no strict majority among 2 GPUs of class scout-sim emulated GPU|132|emu 1");
}

TEST(ReplayJudge, SlowGpuIsConfirmedOthersAreNormal) {
  Rig rig(8);
  EmuDeviceState slow;
  slow.slow_factor = 2;
  rig.set(6, slow);
  CycleVerdict v = rig.cycle(gemm_plan());
  EXPECT_EQ(v.outcome, Outcome::kPass);  // slowness does not fail a cycle
  ASSERT_EQ(v.slow_gpus.size(), 1u);
  EXPECT_EQ(v.slow_gpus[0].global_rank, 6);
  ASSERT_EQ(v.slow_gpus[0].ns.size(), 2u);
  EXPECT_GT(v.slow_gpus[0].ns[0], v.slow_gpus[0].median_ns * 19 / 10);
  EXPECT_EQ(v.gpu_normal, (std::vector<int>{0, 1, 2, 3, 4, 5, 7}));
  // Each normal GPU with the GEMM it was measured in: its times per round and the class median
  // (what a straggler whose cause is the host shows, docs/findings.md).
  ASSERT_EQ(v.normal_gpus.size(), 7u);
  for (size_t i = 0; i < v.normal_gpus.size(); ++i) {
    const SlowGpu& n = v.normal_gpus[i];
    EXPECT_EQ(n.global_rank, v.gpu_normal[i]);
    EXPECT_EQ(n.recipe, v.slow_gpus[0].recipe);
    EXPECT_EQ(n.median_ns, v.slow_gpus[0].median_ns);
    ASSERT_EQ(n.ns.size(), 2u);
    EXPECT_LT(n.ns[0], n.median_ns * 12 / 10);  // at the median, not the slow GPU's 2x
  }
  EXPECT_EQ(to_json(v)["normal_gpus"][0]["recipe"], v.slow_gpus[0].recipe);
}

TEST(ReplayJudge, CorruptingLinkNamesReceiverAndSender) {
  Rig rig(4);
  EmuDeviceState rx;
  rx.links_in["GPU-sim-node0-3"].flip = true;  // messages from 3 to 2
  rig.set(2, rx);
  RecipePlan p;
  p.links = pairs_of({{0, 1, 2, 3}});
  CycleVerdict v = rig.cycle(p);
  EXPECT_EQ(v.outcome, Outcome::kFail);
  ASSERT_EQ(v.sdc.size(), 1u);
  EXPECT_EQ(v.sdc[0].global_rank, 2);
  EXPECT_EQ(v.sdc[0].peer, 3);
  EXPECT_EQ(v.sdc[0].check, SdcCheck::kLink);
  EXPECT_EQ(v.sdc[0].recipe, "link:3->2");
  EXPECT_TRUE(v.slow_pairs.empty());
}

TEST(ReplayJudge, SlowLinkNamesThePair) {
  Rig rig(8);
  EmuDeviceState a, b;
  a.links_in["GPU-sim-node0-6"].delay_ns = 5'000'000;
  b.links_in["GPU-sim-node0-1"].delay_ns = 5'000'000;
  rig.set(1, a);
  rig.set(6, b);
  RecipePlan p;
  p.links = pairs_of({{0, 1, 2, 3, 4, 5, 6, 7}});
  CycleVerdict v = rig.cycle(p);
  ASSERT_EQ(v.slow_pairs.size(), 1u);
  EXPECT_EQ(v.slow_pairs[0].a, 1);
  EXPECT_EQ(v.slow_pairs[0].b, 6);
  EXPECT_EQ(v.slow_pairs[0].recipes, (std::vector<std::string>{"link:1->6", "link:6->1"}));
  EXPECT_EQ(v.outcome, Outcome::kPass);
}

TEST(ReplayJudge, CollectiveWithACorruptedInputFailsWithoutAttribution) {
  Rig rig(4);
  EmuDeviceState bad;
  bad.gemm_flip = true;
  rig.set(1, bad);
  RecipePlan p;
  p.colls = {{"AllReduce", "float32", 4, 4096, "RING", "SIMPLE", {0, 1, 2, 3}}};
  CycleVerdict v = rig.cycle(p);
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_TRUE(v.sdc.empty());
  ASSERT_EQ(v.recipes.size(), 1u);
  EXPECT_EQ(v.recipes[0].reason, "every member's result differs from the expected one (a corrupted input)");
}

TEST(ReplayJudge, CollectiveWithACorruptingLinkNamesTheReceiver) {
  Rig rig(4);
  EmuDeviceState rx;
  rx.links_in["GPU-sim-node0-1"].flip = true;  // 2's ring predecessor is 1
  rig.set(2, rx);
  RecipePlan p;
  p.colls = {{"AllReduce", "float32", 4, 4096, "RING", "SIMPLE", {0, 1, 2, 3}}};
  CycleVerdict v = rig.cycle(p);
  ASSERT_EQ(v.sdc.size(), 1u);
  EXPECT_EQ(v.sdc[0].global_rank, 2);
  EXPECT_EQ(v.sdc[0].check, SdcCheck::kColl);
}

TEST(ReplayJudge, NotAdmittedAndDeadlineAreInconclusive) {
  Rig rig(3);
  auto rs = build_recipes(gemm_plan());
  std::vector<Sample> late = run_recipes(rig.backend, rig.ps, rs, {rs[0].id}, 0);  // deadline passed
  ASSERT_EQ(late.size(), 6u);
  EXPECT_EQ(late[0].status, SampleStatus::kSkipped);
  EXPECT_EQ(late[0].reason, "deadline");
  CycleVerdict v = judge(rs, rig.gpus, late, {}, OutlierRule{});
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  CycleVerdict w = judge(rs, rig.gpus, {}, {{rs[0].id, "rank 2 did not answer the readiness contract"}}, OutlierRule{});
  EXPECT_EQ(w.outcome, Outcome::kInconclusive);
  EXPECT_EQ(w.recipes[0].reason, "rank 2 did not answer the readiness contract");
}

}  // namespace
