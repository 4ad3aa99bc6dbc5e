// Shared fixture of the plugin tests: a temporary SCOUT_SHM_DIR, a known identity, and the
// built libnccl-profiler-scout.so loaded the way NCCL loads it (test/sim/nccl_plugin_loader.h).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "test/sim/nccl_plugin_loader.h"
#include "test/support/plugin_driver.h"
#include "test/support/tmpdir.h"

namespace scout::testing {

// GPU timestamps in the tests: a %globaltimer 1000 s behind CLOCK_REALTIME, so the converted
// times show the offset the plugin estimated.
constexpr int64_t kGpuBehindNs = 1000000000000;
inline uint64_t gpu_now() { return uint64_t(shm::wall_ns() - kGpuBehindNs); }
inline uint32_t gettid_now() { return uint32_t(::syscall(SYS_gettid)); }

inline std::string plugin_path() { return build_path("lib/libnccl-profiler-scout.so"); }

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.set("SCOUT_SHM_DIR", dir_.path());
    env_.set("SCOUT_JOB_ID", "testjob");
    env_.set("SCOUT_HOST", "node-a");
    env_.set("RANK", "3");
    env_.set("LOCAL_RANK", "1");
    env_.set("WORLD_SIZE", "8");
    // The descriptors carry made-up buffer addresses: the fingerprint engine (which hashes host
    // buffers in CPU mode) stays off except in the tests that pass real buffers.
    env_.set("SCOUT_FP", "0");
    for (const char* v : {"SCOUT_ENABLE", "SCOUT_P2P", "SCOUT_RING_SLOTS", "SCOUT_MAX_COMMS", "SCOUT_GPU",
                          "SCOUT_RECORD_CALLS", "NCCL_PROFILER_PLUGIN"}) {
      env_.unset(v);
    }
    clear_captured_logs();
  }
  void TearDown() override {
    pl_.reset();
    if (lp_.handle) sim::unload_profiler_plugin(&lp_);
  }
  // Loads the plugin by full path with NCCL 2.28's (v5) or 2.30's (v6) lookup.
  void load(sim::NcclLookup lookup = sim::NcclLookup::k2_28) {
    lp_ = sim::load_profiler_plugin(plugin_path().c_str(), lookup);
    ASSERT_TRUE(lp_.ok()) << lp_.error;
    pl_ = std::make_unique<Plugin>(lp_);
  }
  // Loads the plugin's v4 table as NCCL 2.27 would (it has no v5 lookup).
  void load_v4() {
    void* h = ::dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_TRUE(h != nullptr) << ::dlerror();
    lp_.handle = h;
    lp_.version = 4;
    lp_.v4 = static_cast<const abi::ProfilerV4*>(::dlsym(h, abi::kSymbolV4));
    ASSERT_TRUE(lp_.v4 != nullptr);
    pl_ = std::make_unique<Plugin>(lp_);
  }
  SegmentView segment() {
    SegmentView v = read_segment(dir_.path());
    EXPECT_TRUE(v.ok) << v.error;
    return v;
  }

  TempDir dir_;
  ScopedEnv env_;
  sim::LoadedPlugin lp_;
  std::unique_ptr<Plugin> pl_;
};

}  // namespace scout::testing
