// SCOUT_PROFILER_DELEGATE (docs/plugin.md, "A second profiler plugin"): scout, loaded as NCCL
// loads it, forwards every callback to a second profiler plugin (test/profdelegate/: an
// Inspector-like one that writes its own output file and checks that every value it is given is
// its own, and a no-op one); both see their events, each only its own contexts and handles, the
// activation mask is the union, and events only the delegate asked for cost scout nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plugin/core/delegate.h"
#include "test/plugin/plugin_fixture.h"

namespace scout::testing {
namespace {

std::string inspectish(const char* variant = "") {
  return build_path(std::string("lib/libnccl-profiler-inspectish") + variant + ".so");
}

// Every JSON line of the Inspector-like plugin's output files in `dir`.
std::vector<nlohmann::json> inspectish_lines(const std::string& dir) {
  std::vector<nlohmann::json> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("inspectish.", 0) != 0) continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

bool logged(const std::string& needle) {
  for (const auto& l : captured_logs()) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

class DelegateTest : public PluginTest {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    env_.set("INSPECTISH_DUMP_DIR", out_.path());
    env_.unset("INSPECTISH_EXTRA_MASK");
    env_.unset("PD_MASK");
    env_.unset("PD_MASK_LATER");
  }
  // `n` collectives on `ctx` (NCCL's sequence, then every channel's KernelCh), GPU time 5000 ns each.
  void collectives(void* ctx, int n) {
    for (int i = 0; i < n; ++i) {
      OpSpec op;
      op.seq = uint64_t(i);
      CollHandles h = nccl_single_coll(*pl_, ctx, op);
      const uint64_t t = gpu_now();
      run_kernel_ch(*pl_, ctx, h.coll, op.nch, t, t + 5000);
    }
  }
  // Checks the Inspector-like plugin saw `n` AllReduce collectives of ABI `abi` on one
  // communicator, every value it was given its own, and scout recorded the same `n`.
  void expect_both_saw(int n, int abi) {
    std::vector<nlohmann::json> lines = inspectish_lines(out_.path());
    ASSERT_EQ(lines.size(), size_t(n + 1));
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(lines[size_t(i)]["op"], "AllReduce");
      EXPECT_EQ(lines[size_t(i)]["seq"], i);
      EXPECT_EQ(lines[size_t(i)]["channels"], 4);
      EXPECT_EQ(lines[size_t(i)]["bytes"], 4096);
      EXPECT_EQ(lines[size_t(i)]["gpu_ns"], 5000);
      EXPECT_EQ(lines[size_t(i)]["abi"], abi);
    }
    EXPECT_EQ(lines.back()["finalize"], "0x0000000000000042");
    EXPECT_EQ(lines.back()["ops"], n);
    EXPECT_EQ(lines.back()["foreign"], 0);
    SegmentView v = segment();
    ASSERT_EQ(v.records.size(), 1u);
    ASSERT_EQ(v.records[0].size(), size_t(n));
    for (const auto& r : v.records[0]) EXPECT_EQ(r.state, shm::kStateComplete);
    EXPECT_EQ(v.comms[0].bad_handles, 0u);
    EXPECT_EQ(v.comms[0].ignored_events, 0u);
    EXPECT_EQ(v.info.events_bad_handle, 0u);
    EXPECT_EQ(v.info.events_unknown, 0u);
    EXPECT_EQ(pl_->bad_results(), 0);
  }

  TempDir out_;
};

TEST_F(DelegateTest, InspectorLikeDelegateMeasuresItsCollectivesWhileScoutRecordsThem) {
  env_.set("SCOUT_PROFILER_DELEGATE", inspectish());
  load();
  int mask = 0;
  void* ctx = pl_->init(0x42, 2, 0, "dp", 1, &mask);
  // Inspector's Coll | KernelCh | P2p lie inside scout's mask (with ProxyOp|ProxyStep kept).
  EXPECT_EQ(mask, 0xE5E);
  collectives(ctx, 3);
  pl_->finalize(ctx);
  expect_both_saw(3, 5);
  EXPECT_TRUE(logged("scout: forwarding every profiler callback to " + inspectish() +
                     " (its ncclProfiler_v5 table \"Inspectish\")"));
}

TEST_F(DelegateTest, Nccl227V4TableReachesTheDelegatesV4Table) {
  env_.set("SCOUT_PROFILER_DELEGATE", inspectish("-all"));
  load_v4();
  void* ctx = pl_->init(0x42, 2, 0);
  collectives(ctx, 2);
  pl_->finalize(ctx);
  expect_both_saw(2, 4);
}

TEST_F(DelegateTest, Nccl230V6TableReachesTheDelegatesV6Table) {
  env_.set("SCOUT_PROFILER_DELEGATE", inspectish("-all"));
  load(sim::NcclLookup::k2_30);
  ASSERT_EQ(lp_.version, 6);
  void* ctx = pl_->init(0x42, 2, 0);
  collectives(ctx, 2);
  pl_->finalize(ctx);
  expect_both_saw(2, 6);
}

TEST_F(DelegateTest, Nccl230WithAV5OnlyDelegateUsesItsV5TableAsNcclWould) {
  env_.set("SCOUT_PROFILER_DELEGATE", inspectish());
  load(sim::NcclLookup::k2_30);
  void* ctx = pl_->init(0x42, 2, 0);
  collectives(ctx, 2);
  pl_->finalize(ctx);
  expect_both_saw(2, 5);
}

// ProxyCtrl and NetPlugin events exist only because the delegate asked for them: they reach the
// delegate with its own handles and never scout (no ignored_events, no unknown events).
TEST_F(DelegateTest, EventsOnlyTheDelegateAskedForCostScoutNothing) {
  env_.set("SCOUT_PROFILER_DELEGATE", inspectish());
  env_.set("INSPECTISH_EXTRA_MASK", std::to_string(abi::kEvProxyCtrl));
  env_.set("SCOUT_PROXY_TIMING", "0");
  load();
  int mask = 0;
  void* ctx = pl_->init(0x42, 2, 0, "dp", 1, &mask);
  EXPECT_EQ(mask, 0xE46 | int(abi::kEvProxyCtrl));
  collectives(ctx, 1);
  for (int i = 0; i < 10; ++i) {
    abi::DescrV5 d{};
    d.type = abi::kEvProxyCtrl;
    void* h = pl_->start(ctx, d);
    ASSERT_NE(h, nullptr);
    pl_->state(h, abi::kStateProxyCtrlActive, nullptr);
    pl_->stop(h);
  }
  pl_->finalize(ctx);
  std::vector<nlohmann::json> lines = inspectish_lines(out_.path());
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back()["others"], 10);
  EXPECT_EQ(lines.back()["others_stopped"], 10);
  EXPECT_EQ(lines.back()["foreign"], 0);
  SegmentView v = segment();
  EXPECT_EQ(v.comms[0].ignored_events, 0u);
  EXPECT_EQ(v.info.events_unknown, 0u);
  EXPECT_EQ(v.info.events_bad_handle, 0u);
  EXPECT_EQ(v.records[0].size(), 1u);
}

// A delegate may keep the mask int and change it later (NCCL allows it, docs/nccl-notes.md §0.6):
// NCCL's mask follows at the next API call, without losing scout's bits.
TEST_F(DelegateTest, ADelegatesLaterMaskChangeReachesNcclsMask) {
  env_.set("SCOUT_PROFILER_DELEGATE", build_path("lib/libnccl-profiler-noop.so"));
  env_.set("PD_MASK", std::to_string(abi::kEvColl | abi::kEvKernelCh | abi::kEvProxyCtrl));
  env_.set("PD_MASK_LATER", std::to_string(abi::kEvColl | abi::kEvNetPlugin));
  env_.set("SCOUT_PROXY_TIMING", "0");
  load();
  int mask = 0;
  void* ctx = pl_->init(0x42, 2, 0, "dp", 1, &mask);
  EXPECT_EQ(mask, 0xE46 | int(abi::kEvProxyCtrl));
  collectives(ctx, 30);  // the no-op plugin changes its int at its 100th event
  EXPECT_EQ(mask, 0xE46 | int(abi::kEvNetPlugin));
  pl_->finalize(ctx);
  SegmentView v = segment();
  EXPECT_EQ(v.records[0].size(), 30u);
  EXPECT_EQ(v.comms[0].bad_handles, 0u);
}

TEST_F(DelegateTest, ScoutItselfAsTheDelegateIsRefusedAndScoutRecordsAlone) {
  env_.set("SCOUT_PROFILER_DELEGATE", plugin_path());
  load();
  void* ctx = pl_->init(0x42, 2, 0);
  collectives(ctx, 2);
  pl_->finalize(ctx);
  EXPECT_TRUE(logged("scout: SCOUT_PROFILER_DELEGATE: the delegate '" + plugin_path() +
                     "' is scout itself; scout records alone"));
  SegmentView v = segment();
  EXPECT_EQ(v.records[0].size(), 2u);
}

TEST_F(DelegateTest, AMissingDelegateIsSaidOnceAndScoutRecordsAlone) {
  env_.set("SCOUT_PROFILER_DELEGATE", "no-such-profiler");
  load();
  void* a = pl_->init(0x42, 2, 0);
  void* b = pl_->init(0x43, 2, 0);
  collectives(a, 2);
  pl_->finalize(a);
  pl_->finalize(b);
  int said = 0;
  for (const auto& l : captured_logs()) {
    if (l.find("SCOUT_PROFILER_DELEGATE: cannot open the delegate 'no-such-profiler'") != std::string::npos) ++said;
  }
  EXPECT_EQ(said, 1);
  EXPECT_EQ(segment().records[0].size(), 2u);
}

// NULL, garbage, a foreign value and a joined handle that outlived its slot reach neither plugin
// as something to follow: nothing crashes, the delegate reports no value that was not its own.
TEST_F(DelegateTest, BadHandlesNeverReachTheDelegateAsItsOwn) {
  env_.set("SCOUT_PROFILER_DELEGATE", inspectish());
  load();
  void* ctx = pl_->init(0x42, 2, 0);
  pl_->stop(nullptr);
  pl_->stop(reinterpret_cast<void*>(uintptr_t(0xdeadbeef)));
  abi::DescrV5 kch{};
  kch.type = abi::kEvKernelCh;
  kch.parentObj = reinterpret_cast<void*>(uintptr_t(0xF000000000001234ull));
  void* h = pl_->start(ctx, kch);
  pl_->stop(h);
  collectives(ctx, 1);
  pl_->finalize(ctx);
  std::vector<nlohmann::json> lines = inspectish_lines(out_.path());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["op"], "AllReduce");
  // 0xdeadbeef and the forged KernelCh parent are not scout's: they are the delegate's to judge,
  // and it saw them as not its own (counted, never followed).
  EXPECT_EQ(lines[1]["foreign"], 2);
}

TEST(DelegateParts, RoutedTypesAddTheAncestorsNcclStarts) {
  using namespace abi;
  const int inspector = int(kEvColl | kEvKernelCh | kEvP2p);
  EXPECT_EQ(core::dlg::routed_types(inspector, 5),
            kEvGroupApi | kEvCollApi | kEvP2pApi | kEvGroup | kEvColl | kEvP2p | kEvKernelCh);
  EXPECT_EQ(core::dlg::routed_types(inspector, 4), kEvGroup | kEvColl | kEvP2p | kEvKernelCh);
  EXPECT_EQ(core::dlg::routed_types(int(kEvProxyCtrl), 5), kEvProxyCtrl);
  EXPECT_EQ(core::dlg::routed_types(int(kEvKernelLaunch), 5), kEvGroupApi | kEvKernelLaunch);
  EXPECT_EQ(core::dlg::routed_types(int(kEvNetPlugin), 5),
            kEvGroupApi | kEvCollApi | kEvP2pApi | kEvGroup | kEvColl | kEvP2p | kEvProxyOp | kEvProxyStep |
                kEvNetPlugin);
  EXPECT_EQ(core::dlg::routed_types(int(kEvCeSync), 6), kEvGroupApi | kEvCollApi | kEvCeColl | kEvCeSync);
  EXPECT_EQ(core::dlg::routed_types(int(kEvCeSync), 5), kEvGroupApi | kEvCollApi);
}

TEST(DelegateParts, V4DescriptorOfACollTakesItsGroupAsParent) {
  abi::DescrV5 in{};
  in.type = abi::kEvColl;
  in.parentObj = reinterpret_cast<void*>(0x1);  // the CollApi handle (v4 has none)
  in.rank = 3;
  in.coll.seqNumber = 17;
  in.coll.func = "AllGather";
  in.coll.count = 99;
  in.coll.nChannels = 2;
  abi::DescrV4 out;
  ASSERT_TRUE(core::dlg::descr_to_v4(in, reinterpret_cast<void*>(0x2), &out));
  EXPECT_EQ(out.type, abi::kEvColl);
  EXPECT_EQ(out.parentObj, reinterpret_cast<void*>(0x2));
  EXPECT_EQ(out.rank, 3);
  EXPECT_EQ(out.coll.seqNumber, 17u);
  EXPECT_STREQ(out.coll.func, "AllGather");
  EXPECT_EQ(out.coll.count, 99u);
  EXPECT_EQ(out.coll.nChannels, 2);
  in.type = abi::kEvCollApi;
  EXPECT_FALSE(core::dlg::descr_to_v4(in, nullptr, &out));
}

TEST(DelegateParts, AJoinedHandleWhoseSlotWasReusedSplitsIntoTwoNulls) {
  core::dlg::Joins j;
  ASSERT_TRUE(j.init());
  void* s = reinterpret_cast<void*>(uintptr_t(0x1111));
  void* d = reinterpret_cast<void*>(uintptr_t(0x2222));
  EXPECT_EQ(j.join(s, nullptr), s);
  EXPECT_EQ(j.join(nullptr, d), d);
  void* first = j.join(s, d);
  core::dlg::Split a = j.split(first, 0);
  EXPECT_EQ(a.scout, s);
  EXPECT_EQ(a.del, d);
  for (uint32_t i = 0; i < core::dlg::kPairSlots; ++i) j.join(s, d);
  core::dlg::Split b = j.split(first, 0);
  EXPECT_EQ(b.scout, nullptr);
  EXPECT_EQ(b.del, nullptr);
  EXPECT_EQ(j.stale(), 1u);
  // A plain pointer is the delegate's; NULL is nobody's.
  EXPECT_EQ(j.split(d, 0).del, d);
  EXPECT_EQ(j.split(nullptr, 0).del, nullptr);
  j.release();
}

}  // namespace
}  // namespace scout::testing
