// The fingerprint engine's GPU path with the fake backend (test/support/fake_gpu.h), driven in
// NCCL's call order (docs/nccl-notes.md §4): group start, KernelLaunch start, NCCL's kernel on the
// stream, KernelLaunch stop, Coll start, group end, completion.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "plugin/fingerprint/engine.h"
#include "plugin/fingerprint/gpu_pools.h"
#include "scout/fingerprint.h"
#include "test/support/fake_gpu.h"

namespace {

using namespace scout;
using scout::testing::FakeGpu;
constexpr uint32_t kCap = 64;
constexpr uint64_t kComm = 0xFEED;

config::Config make_config(const std::map<std::string, std::string>& env) {
  return config::load([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// A rank with a fake GPU: engine, one communicator and its ring in ordinary memory.
struct GpuRank {
  std::shared_ptr<FakeGpu::State> gpu = std::make_shared<FakeGpu::State>();
  std::unique_ptr<shm::CommHeader> header = std::make_unique<shm::CommHeader>();
  std::vector<shm::OpRecord> recs = std::vector<shm::OpRecord>(kCap);
  fp::Engine* engine = nullptr;
  fp::CommFp* comm = nullptr;
  void* stream = reinterpret_cast<void*>(0x5);

  explicit GpuRank(const std::map<std::string, std::string>& env = {},
                   std::function<void(FakeGpu::State&)> setup = {}) {
    if (setup) setup(*gpu);
    header->ring_capacity = kCap;
    engine = fp::Engine::create_with_backend(make_config(env), nullptr, std::make_unique<FakeGpu>(gpu));
    comm = engine->comm_init(kComm, 2, 0, header.get());
  }
  ~GpuRank() {
    // The GPU runs whatever is still queued (a real one always does), so every launch finishes
    // and Engine::destroy can free the pools. Markers refer to the test's buffers, which are
    // gone by now: only the hash kernels run.
    for (auto& item : gpu->streams[stream]) item.fn = nullptr;
    FakeGpu::run(*gpu, stream, /*timeout=*/true);
    engine->comm_fini(comm);
    fp::Engine::destroy(engine);
  }
  shm::OpRecord* rec(uint64_t i) { return &recs[i % kCap]; }
  size_t run(bool timeout = false) { return FakeGpu::run(*gpu, stream, timeout); }

  // One in-place AllReduce of `buf` as NCCL issues it; the "NCCL kernel" doubles every byte.
  void allreduce(uint64_t index, std::vector<unsigned char>& buf, bool group_end = true,
                 std::function<void(fp::OpInfo&)> tweak = {}) {
    engine->on_group_start();
    engine->on_launch_start(comm, stream);
    FakeGpu::enqueue_marker(*gpu, stream, "nccl", [&buf] {
      for (auto& b : buf) b = static_cast<unsigned char>(b * 2 + 1);
    });
    fp::OpInfo op;
    op.comm_hash = kComm;
    op.kind = shm::kKindColl;
    op.func = shm::kFuncAllReduce;
    op.key = index;
    op.send_buf = buf.data();
    op.recv_buf = buf.data();
    op.send_bytes = op.recv_bytes = buf.size();
    op.dtype = shm::kTypeUint8;
    op.stream = stream;
    if (tweak) tweak(op);
    engine->on_op_enqueued(comm, rec(index), index, op);
    if (group_end) engine->on_group_end();
  }
};

uint64_t fp_of(const std::vector<unsigned char>& v) {
  return fp::fingerprint(v.data(), v.size(), shm::kTypeUint8, nullptr);
}

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 31 + seed);
  return v;
}

TEST(EngineGpu, SendHashRunsBeforeTheNcclKernelAndReceiveHashAfter) {
  GpuRank r;
  ASSERT_NE(r.comm, nullptr);
  EXPECT_TRUE(r.engine->gpu_available());
  auto buf = pattern(300000, 1);
  const uint64_t before = fp_of(buf);
  r.allreduce(3, buf);
  EXPECT_EQ(r.run(), 3u);
  EXPECT_EQ(r.gpu->trace, (std::vector<std::string>{"hash(1 jobs)", "nccl", "hash(1 jobs)"}));
  const uint64_t after = fp_of(buf);
  ASSERT_NE(before, after);
  shm::OpRecord* rec = r.rec(3);
  EXPECT_EQ(rec->fp_send_word.load(), shm::fp_word(3, shm::kFpPending));  // not harvested yet
  r.engine->on_op_complete(r.comm, rec, 3, 100000);
  EXPECT_EQ(rec->fp_send_word.load(), shm::fp_word(3, shm::kFpDone));
  EXPECT_EQ(rec->fp_recv_word.load(), shm::fp_word(3, shm::kFpDone));
  EXPECT_EQ(rec->fp_send, before);
  EXPECT_EQ(rec->fp_recv, after);
  EXPECT_EQ(rec->fp_bytes, 300000u);
  EXPECT_EQ(rec->flags & shm::kFlagHostBuffers, 0u);
  EXPECT_EQ(r.header->fp_gpu_ns.load(), 2 * r.gpu->gpu_ns_per_job);  // both kernels' time
}

TEST(EngineGpu, WaitingSendKernelBlocksTheStreamUntilGroupEnd) {
  GpuRank r;
  auto buf = pattern(10000, 2);
  const uint64_t before = fp_of(buf);
  r.allreduce(0, buf, /*group_end=*/false);
  EXPECT_EQ(r.run(), 0u);  // the send kernel waits for its plan: NCCL's kernel cannot pass it
  r.engine->on_group_end();
  EXPECT_EQ(r.run(), 3u);
  r.engine->on_op_complete(r.comm, r.rec(0), 0, 1000);
  EXPECT_EQ(r.rec(0)->fp_send, before);
}

TEST(EngineGpu, LaunchWithoutCollStartIsReleasedEmptyAtGroupEnd) {
  GpuRank r;
  r.engine->on_group_start();
  r.engine->on_launch_start(r.comm, r.stream);
  FakeGpu::enqueue_marker(*r.gpu, r.stream, "nccl", {});
  EXPECT_EQ(r.run(), 0u);
  r.engine->on_group_end();  // the safety net: released with no job
  EXPECT_EQ(r.run(), 2u);
  EXPECT_EQ(r.gpu->trace, (std::vector<std::string>{"hash(0 jobs)", "nccl"}));
}

TEST(EngineGpu, NextLaunchReleasesThePreviousPlan) {
  GpuRank r;
  auto a = pattern(5000, 3), b = pattern(7000, 4);
  const uint64_t fa = fp_of(a), fb = fp_of(b);
  r.engine->on_group_start();
  for (uint64_t i = 0; i < 2; ++i) {
    auto& buf = i == 0 ? a : b;
    r.engine->on_launch_start(r.comm, r.stream);
    FakeGpu::enqueue_marker(*r.gpu, r.stream, "nccl", [&buf] { buf[0] ^= 1; });
    fp::OpInfo op;
    op.kind = shm::kKindColl;
    op.func = shm::kFuncAllReduce;
    op.key = i;
    op.send_buf = op.recv_buf = buf.data();
    op.send_bytes = op.recv_bytes = buf.size();
    op.stream = r.stream;
    r.engine->on_op_enqueued(r.comm, r.rec(i), i, op);
  }
  // Plan 1 was released by the second launch: stream runs up to the second waiting kernel.
  EXPECT_EQ(r.run(), 2u);
  r.engine->on_group_end();
  EXPECT_EQ(r.run(), 3u);
  EXPECT_EQ(r.gpu->trace, (std::vector<std::string>{"hash(1 jobs)", "nccl", "hash(1 jobs)", "nccl", "hash(2 jobs)"}));
  r.engine->on_op_complete(r.comm, r.rec(1), 1, 1000);
  EXPECT_EQ(r.rec(0)->fp_send, fa);
  EXPECT_EQ(r.rec(1)->fp_send, fb);
  EXPECT_EQ(r.rec(0)->fp_recv, fp_of(a));
  EXPECT_EQ(r.rec(1)->fp_recv, fp_of(b));
}

TEST(EngineGpu, AbandonedWaitIsReportedTimedOut) {
  GpuRank r;
  auto buf = pattern(5000, 5);
  r.allreduce(7, buf, /*group_end=*/false);
  EXPECT_EQ(r.run(/*timeout=*/true), 2u);  // the kernel gave up; NCCL's kernel ran
  EXPECT_EQ(r.gpu->trace.front(), "hash(abandoned)");
  r.engine->on_op_complete(r.comm, r.rec(7), 7, 1000);
  EXPECT_EQ(r.rec(7)->fp_send_word.load(), shm::fp_word(7, shm::kFpTimedOut));
  EXPECT_GE(r.header->fp_skipped.load(), 1u);
  r.engine->on_group_end();  // late release of the abandoned plan is harmless
  r.run();
  r.engine->on_op_complete(r.comm, r.rec(8), 8, 1000);
  EXPECT_EQ(r.rec(7)->fp_recv_word.load(), shm::fp_word(7, shm::kFpDone));
}

TEST(EngineGpu, CapturedOperationsAreNotHashed) {
  GpuRank r;
  r.gpu->capturing.insert(r.stream);
  auto buf = pattern(5000, 6);
  r.allreduce(1, buf, true, [](fp::OpInfo& op) { op.graph_captured = true; });
  EXPECT_EQ(r.gpu->launches, 0u);  // nothing was put into the graph
  EXPECT_EQ(r.rec(1)->fp_send_word.load(), shm::fp_word(1, shm::kFpSkippedCaptured));
  EXPECT_EQ(r.rec(1)->fp_recv_word.load(), shm::fp_word(1, shm::kFpSkippedCaptured));
  // A capturing stream whose op did not say so: the receive hash is still not enqueued.
  auto buf2 = pattern(5000, 7);
  r.allreduce(2, buf2);
  EXPECT_EQ(r.gpu->launches, 0u);
  EXPECT_EQ(r.rec(2)->fp_recv_word.load(), shm::fp_word(2, shm::kFpSkippedCaptured));
  EXPECT_EQ(r.rec(2)->fp_send_word.load(), shm::fp_word(2, shm::kFpTimedOut));
}

TEST(EngineGpu, CallbackThreadAndNonBlockingLaunchesAreSkipped) {
  GpuRank r;
  auto buf = pattern(5000, 8);
  r.allreduce(4, buf, true, [](fp::OpInfo& op) { op.on_launch_thread = false; });
  EXPECT_EQ(r.rec(4)->fp_send_word.load(), shm::fp_word(4, shm::kFpSkippedCallback));
  EXPECT_EQ(r.rec(4)->fp_recv_word.load(), shm::fp_word(4, shm::kFpSkippedCallback));
  // Only the waiting send kernel (released empty) was launched; no receive kernel.
  EXPECT_EQ(r.gpu->launches, 1u);
  // A launch thread outside any group (non-blocking communicator): no waiting kernel at all.
  const uint64_t launches = r.gpu->launches;
  r.engine->on_launch_start(r.comm, r.stream);
  fp::OpInfo op;
  op.kind = shm::kKindColl;
  op.func = shm::kFuncAllReduce;
  op.key = 5;
  op.send_buf = op.recv_buf = buf.data();
  op.send_bytes = op.recv_bytes = buf.size();
  r.engine->on_op_enqueued(r.comm, r.rec(5), 5, op);
  EXPECT_EQ(r.gpu->launches, launches);
  EXPECT_EQ(r.rec(5)->fp_send_word.load(), shm::fp_word(5, shm::kFpSkippedCallback));
}

TEST(EngineGpu, LaunchBlockingModeNeverEnqueuesAWaitingKernel) {
  // With CUDA_LAUNCH_BLOCKING=1 a launch returns only when the kernel finished, so a kernel
  // waiting for Coll start (which comes after the launch) would stall: none is enqueued.
  setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  GpuRank r;
  unsetenv("CUDA_LAUNCH_BLOCKING");
  auto buf = pattern(5000, 14);
  r.allreduce(0, buf);
  EXPECT_EQ(r.rec(0)->fp_send_word.load(), shm::fp_word(0, shm::kFpTimedOut));
  EXPECT_EQ(r.gpu->launches, 1u);  // only the receive kernel, after NCCL's
  r.run();
  EXPECT_EQ(r.gpu->trace, (std::vector<std::string>{"nccl", "hash(1 jobs)"}));
}

TEST(EngineGpu, SeveralCollectivesOfOnePlan) {
  GpuRank r;
  std::vector<std::vector<unsigned char>> bufs = {pattern(4096, 1), pattern(100, 2), pattern(70000, 3)};
  std::vector<uint64_t> before;
  for (auto& b : bufs) before.push_back(fp_of(b));
  r.engine->on_group_start();
  r.engine->on_launch_start(r.comm, r.stream);
  FakeGpu::enqueue_marker(*r.gpu, r.stream, "nccl", [&] {
    for (auto& b : bufs) b[b.size() - 1] ^= 0x80;
  });
  for (uint64_t i = 0; i < 3; ++i) {
    fp::OpInfo op;
    op.kind = shm::kKindColl;
    op.func = shm::kFuncAllReduce;
    op.key = 10 + i;
    op.send_buf = op.recv_buf = bufs[i].data();
    op.send_bytes = op.recv_bytes = bufs[i].size();
    op.stream = r.stream;
    r.engine->on_op_enqueued(r.comm, r.rec(i), i, op);
  }
  r.engine->on_group_end();
  r.run();
  EXPECT_EQ(r.gpu->trace, (std::vector<std::string>{"hash(3 jobs)", "nccl", "hash(3 jobs)"}));
  r.engine->on_op_complete(r.comm, r.rec(2), 2, 1000);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.rec(i)->fp_send, before[i]) << i;
    EXPECT_EQ(r.rec(i)->fp_recv, fp_of(bufs[i])) << i;
  }
}

TEST(EngineGpu, BudgetRaisesTheLevelFromKernelTime) {
  GpuRank r({{"SCOUT_FP_BUDGET", "0.01"}}, [](FakeGpu::State& s) { s.gpu_ns_per_job = 1'000'000; });
  auto buf = pattern(4096, 9);
  for (uint64_t i = 0; i < fp::Budget::kWindowOps; ++i) {
    r.allreduce(i, buf);
    r.run();
    r.engine->on_op_complete(r.comm, r.rec(i), i, 100'000);  // hashes 20x the kernel time
  }
  // 2 ms of fingerprints per 0.1 ms kernel: 2000x the budget -> +11 levels.
  EXPECT_EQ(r.header->fp_level.load(), 11u);
}

TEST(EngineGpu, NoAllocationPerOperationAfterWarmUp) {
  GpuRank r;
  const uint64_t host = r.gpu->host_allocs, dev = r.gpu->device_allocs;
  const uint64_t pools = fp::GpuPools::allocations.load();
  EXPECT_GT(host + dev, 0u);  // the pools were allocated at communicator init
  auto buf = pattern(9000, 10);
  for (uint64_t i = 0; i < 500; ++i) {
    r.allreduce(i, buf);
    r.run();
    r.engine->on_op_complete(r.comm, r.rec(i), i, 10'000'000);  // well under budget: all sampled
    ASSERT_EQ(r.rec(i)->fp_recv_word.load(), shm::fp_word(i, shm::kFpDone)) << i;
  }
  EXPECT_EQ(r.gpu->host_allocs, host);
  EXPECT_EQ(r.gpu->device_allocs, dev);
  EXPECT_EQ(fp::GpuPools::allocations.load(), pools);
}

TEST(EngineGpu, LaunchFailureDisablesGpuFingerprints) {
  GpuRank r({}, [](FakeGpu::State& s) { s.fail_launch = true; });
  auto buf = pattern(5000, 11);
  r.allreduce(0, buf);  // the send kernel's launch fails: GPU fingerprints are off from here
  EXPECT_EQ(r.rec(0)->fp_send_word.load(), shm::fp_word(0, shm::kFpSkippedError));
  r.allreduce(1, buf);
  EXPECT_EQ(r.rec(1)->fp_send_word.load(), shm::fp_word(1, shm::kFpSkippedError));
  EXPECT_EQ(r.rec(1)->fp_recv_word.load(), shm::fp_word(1, shm::kFpSkippedError));
  EXPECT_FALSE(r.engine->gpu_available());
}

TEST(EngineGpu, NoKernelForThisGpuSkipsDeviceBuffers) {
  GpuRank r({}, [](FakeGpu::State& s) { s.prepare_ok = false; });
  ASSERT_NE(r.comm, nullptr);
  auto buf = pattern(5000, 12);
  r.allreduce(0, buf);
  EXPECT_EQ(r.rec(0)->fp_send_word.load(), shm::fp_word(0, shm::kFpSkippedDevice));
  EXPECT_EQ(r.rec(0)->fp_recv_word.load(), shm::fp_word(0, shm::kFpSkippedDevice));
  EXPECT_EQ(r.gpu->launches, 0u);
}

TEST(EngineGpu, NoContextMeansHostBuffersOnTheCpu) {
  GpuRank r({}, [](FakeGpu::State& s) { s.ctx = nullptr; });
  auto buf = pattern(5000, 13);
  const uint64_t before = fp_of(buf);
  fp::OpInfo op;
  op.kind = shm::kKindColl;
  op.func = shm::kFuncAllReduce;
  op.key = 0;
  op.send_buf = op.recv_buf = buf.data();
  op.send_bytes = op.recv_bytes = buf.size();
  r.engine->on_op_enqueued(r.comm, r.rec(0), 0, op);
  EXPECT_EQ(r.rec(0)->fp_send, before);
  EXPECT_TRUE(r.rec(0)->flags & shm::kFlagHostBuffers);
  EXPECT_EQ(r.gpu->launches, 0u);
}

TEST(EngineGpu, GpuIdentity) {
  GpuRank r;
  char id[64];
  ASSERT_TRUE(r.engine->gpu_uuid(1, id, sizeof(id)));
  EXPECT_STREQ(id, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  ASSERT_TRUE(r.engine->gpu_uuid(-1, id, sizeof(id)));  // the current context's device (0)
  EXPECT_STREQ(id, "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  const unsigned char b[16] = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb};
  fp::gpu::format_gpu_uuid(b, id, sizeof(id));
  EXPECT_STREQ(id, "GPU-deadbeef-0001-0203-0405-060708090a0b");
}

}  // namespace
