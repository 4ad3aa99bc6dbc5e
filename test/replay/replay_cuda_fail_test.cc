// No failed library call becomes a verdict (replay/cuda_backend.h, docs/replay.md "Backends"): a
// replay cycle of the CUDA backend on the fake table (test/support/fake_cuda_libs.h) is run once
// to count its calls, then once per call with that call failing. Each time the cycle's judgement
// (replay/judge.h) has no sdc, no slow GPU or pair and no "fail" outcome, the failed call is named
// in a sample or GPU that it kept from being measured, and every resource created (memory,
// events, streams, contexts, cuBLASLt objects, NCCL communicators) was released.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <set>

#include "replay/cuda_backend.h"
#include "replay/judge.h"
#include "test/support/fake_cuda_libs.h"

namespace {

using namespace scout::replay;
namespace fk = scout::testing::fakecuda;

int64_t mono_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What one cycle gave: every sample, the GPUs as described, and what else reported a failure.
struct Cycle {
  std::vector<Recipe> recipes;
  std::vector<GpuInfo> gpus;
  std::vector<Sample> samples;
  std::string uid_error;
  CycleVerdict verdict;
  std::vector<std::pair<int, int>> teardown;  // call numbers [first, last) of each backend's destruction
};

// Destroys the backend, noting the calls its destruction made.
void tear_down(std::unique_ptr<CudaBackend>* b, Cycle* c) {
  const int first = fk::X.calls;
  b->reset();
  c->teardown.push_back({first, fk::X.calls});
}

// A cycle on three fake GPUs with every path of the backend: the GPUs described, a GEMM on each
// (two rounds, timed by CUPTI), the same GEMM timed by CUDA events (a backend without CUPTI), links
// 0->1 and 1->2 inside the host, an AllReduce over {0, 1}, a link across hosts as its sender's
// and its receiver's end, and an AllReduce across hosts whose two members run here. `cupti`: the backend of the CUPTI part has CUPTI.
Cycle run_cycle() {
  Cycle out;
  fk::F.equal_speed = true;
  cudalib::Libs L = fk::nccl_libs();
  RecipePlan plan;
  plan.gemms = {{16, 8, 8, "fp32"}};
  plan.gemm_iters = 2;
  plan.links = {{0, 1}, {1, 2}};
  plan.link_bytes = 1024;
  plan.colls = {{"AllReduce", "float32", 4, 64, "", "", {0, 1}}};
  out.recipes = build_recipes(plan);
  const std::vector<Participant> gpus = {{0, "", 0}, {1, "", 1}, {2, "", 2}};
  {
    auto owner = std::make_unique<CudaBackend>(&L, BackendLimits{});
    CudaBackend& b = *owner;
    for (const Participant& p : gpus) out.gpus.push_back(b.describe(p));
    for (const Recipe& r : out.recipes)
      for (int round = 0; round < r.rounds; ++round) {
        if (r.kind == RecipeKind::kGemm)
          for (const Participant& p : gpus) out.samples.push_back(b.run_gemm(r, p, round));
        if (r.kind == RecipeKind::kLink)
          out.samples.push_back(b.run_link(r, gpus[size_t(r.src)], gpus[size_t(r.dst)], round));
        if (r.kind == RecipeKind::kColl)
          for (const Sample& s : b.run_coll(r, {gpus[0], gpus[1]}, round)) out.samples.push_back(s);
      }
    // A link across hosts: the sender's end, then the receiver's (the fake wire joins them).
    RecipePlan far;
    far.links = {{0, 2}};
    far.link_bytes = 1024;
    const Recipe x = build_recipes(far)[0];
    out.recipes.push_back(x);
    const std::string uid = b.link_unique_id(gpus[0], &out.uid_error);
    if (!uid.empty()) {
      for (const Sample& s : b.run_link_end(x, gpus[0], gpus[2], true, uid, mono_now() + 1'000'000'000))
        out.samples.push_back(s);
      for (const Sample& s : b.run_link_end(x, gpus[2], gpus[0], false, uid, mono_now() + 200'000'000))
        out.samples.push_back(s);
    }
    // A collective across hosts (run_coll_end) whose two members both run here: one group of
    // two non-blocking communicators from one bootstrap id.
    RecipePlan xc;
    xc.colls = {{"AllReduce", "float32", 4, 32, "", "", {0, 1}}};
    const Recipe cx = build_recipes(xc)[0];
    out.recipes.push_back(cx);
    const std::string cuid = b.link_unique_id(gpus[0], &out.uid_error);
    if (!cuid.empty())
      for (const Sample& s : b.run_coll_end(cx, {gpus[0], gpus[1]}, {0, 1}, cuid, mono_now() + 200'000'000))
        out.samples.push_back(s);
    tear_down(&owner, &out);
  }
  cudalib::Libs E = fk::nccl_libs();  // timed with CUDA events
  E.have_cupti = false;
  auto events = std::make_unique<CudaBackend>(&E, BackendLimits{});
  for (const Participant& p : gpus) out.samples.push_back(events->run_gemm(out.recipes[0], p, 0));
  tear_down(&events, &out);
  out.verdict = judge(out.recipes, out.gpus, out.samples, {}, OutlierRule{});
  return out;
}

// Calls whose failure has a fallback: CUPTI refusing to start (times then come from CUDA events,
// which the event-timed part of the cycle covers). The calls of a backend's destruction (its
// streams and contexts) have nothing left to report to either.
const std::set<std::string> kFallback = {"cuptiActivityRegisterCallbacks", "cuptiActivityEnable"};

bool in_teardown(const Cycle& c, int call) {
  for (const auto& [first, last] : c.teardown)
    if (call >= first && call < last) return true;
  return false;
}

TEST(ReplayCudaFail, TheCycleWithoutFaultsPasses) {
  fk::reset();
  Cycle c = run_cycle();
  EXPECT_EQ(c.verdict.outcome, Outcome::kPass) << to_json(c.verdict).dump();
  for (const GpuInfo& g : c.gpus) EXPECT_TRUE(g.ready) << g.reason;
  for (const Sample& s : c.samples) EXPECT_EQ(s.status, SampleStatus::kOk) << s.recipe << ": " << s.reason;
  EXPECT_EQ(c.samples.size(), 3u * 2 + 2 * 2 + 2 * 2 + 2 + 2 * 2 + 3);  // gemm, links, coll, far link, far coll, events
  std::string left;
  EXPECT_TRUE(fk::X.none_live(&left)) << left;
  EXPECT_GT(fk::X.calls, 200);
}

TEST(ReplayCudaFail, EveryCallFailedInTurnGivesNoVerdictAndLeaksNothing) {
  fk::reset();
  run_cycle();
  const int calls = fk::X.calls;
  std::set<std::string> names;
  for (int k = 0; k < calls; ++k) {
    fk::reset();
    fk::X.fail_at = k;
    Cycle c = run_cycle();
    const std::string call = fk::X.failed;
    ASSERT_FALSE(call.empty()) << "call " << k << " of " << calls << " was not reached";
    names.insert(call);
    SCOPED_TRACE("call " + std::to_string(k) + ": " + call);
    EXPECT_NE(c.verdict.outcome, Outcome::kFail) << to_json(c.verdict).dump();
    EXPECT_TRUE(c.verdict.sdc.empty());
    EXPECT_TRUE(c.verdict.slow_gpus.empty());
    EXPECT_TRUE(c.verdict.slow_pairs.empty());
    std::string left;
    EXPECT_TRUE(fk::X.none_live(&left)) << "not released: " << left;
    if (kFallback.count(call) || in_teardown(c, k)) continue;
    bool named = c.uid_error.find(call) != std::string::npos;
    for (const Sample& s : c.samples)
      named = named || (s.status == SampleStatus::kFailed && s.reason.find(call) != std::string::npos);
    for (const GpuInfo& g : c.gpus) named = named || (!g.ready && g.reason.find(call) != std::string::npos);
    EXPECT_TRUE(named) << "no sample names the failed call";
  }
  std::printf("%d calls of the cycle, each failed once: %zu distinct entry points\n", calls, names.size());
  // Every kind of call was failed at least once.
  for (const char* n : {"cuMemAlloc", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemFree", "cuEventCreate", "cuEventRecord",
                        "cuEventElapsedTime", "cuEventDestroy", "cuStreamSynchronize", "cuCtxSetCurrent",
                        "cuDeviceGetName", "cuMemGetInfo", "cublasLtMatmul", "cublasLtMatmulAlgoGetHeuristic",
                        "cublasLtMatrixLayoutDestroy", "cuptiActivityFlushAll", "cuptiActivityGetNextRecord",
                        "ncclCommInitAll", "ncclGroupEnd", "ncclAllReduce", "ncclSend", "ncclRecv",
                        "ncclCommInitRankConfig", "ncclCommGetAsyncError", "ncclCommDestroy", "cuStreamQuery",
                        "ncclGetUniqueId"})
    EXPECT_TRUE(names.count(n)) << n;
}

// The false verdict the checks prevent: a copy back from the device that fails leaves the host
// buffer as it was, which a judge would read as a GPU computing different bits on two runs.
TEST(ReplayCudaFail, AFailedCopyBackIsAFailedSampleNotAnSdc) {
  fk::reset();
  run_cycle();
  const int calls = fk::X.calls;
  int copies = 0;
  for (int k = 0; k < calls; ++k) {
    fk::reset();
    fk::X.fail_at = k;
    Cycle c = run_cycle();
    if (fk::X.failed != "cuMemcpyDtoH") continue;
    copies++;
    int failed = 0;
    for (const Sample& s : c.samples) {
      if (s.status != SampleStatus::kFailed) continue;
      failed++;
      EXPECT_EQ(s.reason, "cuMemcpyDtoH failed: CUDA_ERROR_UNKNOWN (injected) (CUDA error 999)");
      EXPECT_EQ(s.fp, 0u);
      EXPECT_EQ(s.ns, -1);
    }
    EXPECT_GE(failed, 1);
    EXPECT_TRUE(c.verdict.sdc.empty());
  }
  EXPECT_GT(copies, 10);
}

}  // namespace
