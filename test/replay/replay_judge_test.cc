// Verdicts of a replay cycle (replay/judge.h) from samples of the emulated backend
// (replay/emu_backend.h) on emulated devices with and without hardware faults.
#include <gtest/gtest.h>

#include <algorithm>

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
  CycleVerdict cycle(const RecipePlan& plan, std::vector<Sample>* out = nullptr, int64_t recipe_deadline_ns = 0) {
    auto rs = build_recipes(plan);
    std::vector<std::string> ids;
    for (auto& r : rs) ids.push_back(r.id);
    auto samples = run_recipes(backend, ps, rs, ids, INT64_MAX, recipe_deadline_ns);
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

// A cycle as the observer runs it for a stuck collective (docs/replay.md, "Deadlines"): one GEMM
// on every GPU and every directed pair of `n` ranks, one round.
RecipePlan stuck_plan(int n) {
  RecipePlan p;
  p.gemms = {{4096, 4096, 4096, "bf16"}};
  std::vector<int> all;
  for (int g = 0; g < n; ++g) all.push_back(g);
  p.links = pairs_of({all});
  p.rounds = 1;
  return p;
}

int waited(const std::vector<Sample>& ss) {  // timeouts that waited for their deadline
  int n = 0;
  for (const Sample& s : ss) n += s.status == SampleStatus::kTimeout && s.reason.find("abandoned") != std::string::npos;
  return n;
}

TEST(ReplayJudgeTimeouts, HungGpuIsNamedByItsGemmAndCostsOneDeadline) {
  Rig rig(4);
  EmuDeviceState hung;
  hung.hung = true;
  rig.set(2, hung);
  std::vector<Sample> ss;
  CycleVerdict v = rig.cycle(stuck_plan(4), &ss, 50'000'000);
  ASSERT_EQ(v.timeouts.size(), 1u);
  EXPECT_EQ(v.timeouts[0].verdict, "gpu");
  EXPECT_EQ(v.timeouts[0].ranks, std::vector<int>{2});
  EXPECT_EQ(v.timeouts[0].recipes, std::vector<std::string>{"gemm:bf16:4096x4096x4096"});
  EXPECT_EQ(v.outcome, Outcome::kFail);
  // The GEMM and the 6 links touching rank 2 timed out; only the GEMM waited (the links were not
  // launched on a GPU that cannot run a kernel).
  EXPECT_EQ(v.timed_out.size(), 7u);
  EXPECT_EQ(waited(ss), 1);
  for (const Sample& s : ss)
    if (s.recipe.rfind("link:", 0) == 0 && (s.global_rank == 2 || s.peer == 2)) {
      EXPECT_EQ(s.status, SampleStatus::kTimeout) << s.recipe;
      EXPECT_EQ(s.reason.rfind("not launched: the GPU of rank 2", 0), 0u) << s.reason;
    } else {
      EXPECT_EQ(s.status, s.recipe.rfind("gemm", 0) == 0 && s.global_rank == 2 ? SampleStatus::kTimeout
                                                                                : SampleStatus::kOk)
          << s.recipe << " " << s.global_rank;
    }
  for (const RecipeOutcome& r : v.recipes)
    EXPECT_EQ(r.outcome, std::find(v.timed_out.begin(), v.timed_out.end(), r.recipe) != v.timed_out.end()
                             ? Outcome::kTimeout
                             : Outcome::kPass)
        << r.recipe;
  EXPECT_TRUE(v.sdc.empty());
}

TEST(ReplayJudgeTimeouts, DownLinkIsNamedByBothDirections) {
  Rig rig(4);
  EmuDeviceState a, b;
  a.links_in[rig.ps[2].gpu].down = true;  // rank 1 receives nothing from rank 2
  b.links_in[rig.ps[1].gpu].down = true;  // and rank 2 nothing from rank 1
  rig.set(1, a);
  rig.set(2, b);
  std::vector<Sample> ss;
  CycleVerdict v = rig.cycle(stuck_plan(4), &ss, 50'000'000);
  ASSERT_EQ(v.timeouts.size(), 1u);
  EXPECT_EQ(v.timeouts[0].verdict, "link");
  EXPECT_EQ(v.timeouts[0].ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(v.timeouts[0].recipes, (std::vector<std::string>{"link:1->2", "link:2->1"}));
  EXPECT_EQ(v.timed_out, (std::vector<std::string>{"link:1->2", "link:2->1"}));
  EXPECT_EQ(waited(ss), 2);
  EXPECT_EQ(v.outcome, Outcome::kFail);
  const nlohmann::json j = to_json(v);
  EXPECT_EQ(j["timeouts"][0]["verdict"], "link");
  EXPECT_EQ(j["timed_out"].size(), 2u);
}

TEST(ReplayJudgeTimeouts, OneDirectionOrEveryGpuNamesNothing) {
  {  // only 1->2 stops: a link is named only when both directions deliver nothing
    Rig rig(4);
    EmuDeviceState b;
    b.links_in[rig.ps[1].gpu].down = true;
    rig.set(2, b);
    CycleVerdict v = rig.cycle(stuck_plan(4), nullptr, 20'000'000);
    EXPECT_TRUE(v.timeouts.empty());
    EXPECT_EQ(v.timed_out, std::vector<std::string>{"link:1->2"});
    EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  }
  {  // every GPU hung: no GPU finished the GEMM, nobody to compare with
    Rig rig(2);
    EmuDeviceState hung;
    hung.hung = true;
    rig.set(0, hung);
    rig.set(1, hung);
    CycleVerdict v = rig.cycle(stuck_plan(2), nullptr, 20'000'000);
    EXPECT_TRUE(v.timeouts.empty());
    EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  }
}

TEST(ReplayJudgeTimeouts, TimeoutSamplesSurviveTheProtocol) {
  Sample s;
  s.recipe = "gemm:bf16:8x8x8";
  s.global_rank = 3;
  s.gpu = "GPU-sim-node0-3";
  s.status = SampleStatus::kTimeout;
  s.reason = "no kernel finished on GPU-sim-node0-3 by its deadline (abandoned)";
  Sample back;
  std::string err;
  ASSERT_TRUE(from_json(to_json(s), &back, &err)) << err;
  EXPECT_EQ(back.status, SampleStatus::kTimeout);
  EXPECT_EQ(back.reason, s.reason);
  EXPECT_EQ(to_json(s)["status"], "timeout");
}

}  // namespace
