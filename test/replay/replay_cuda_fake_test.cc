// The CUDA replay backend (replay/cuda_backend.h) against the fake function table of
// test/support/fake_cuda_libs.h: device memory is host memory, the fake cuBLASLt computes fp32
// GEMMs on the host, the fake CUPTI delivers CONCURRENT_KERNEL records (1 ms per matmul on device
// 0, 2 ms on device 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "replay/cuda_backend.h"
#include "scout/fingerprint.h"
#include "scout/shm_format.h"
#include "test/support/fake_cuda_libs.h"

namespace {

using namespace scout::replay;
namespace cu = scout::fp::gpu::cu;

using scout::testing::fakecuda::F;
using scout::testing::fakecuda::fake_libs;
using scout::testing::fakecuda::FakeNccl;
using scout::testing::fakecuda::FakeState;
using scout::testing::fakecuda::N;
using scout::testing::fakecuda::nccl_libs;

Recipe gemm(int64_t m, int64_t n, int64_t k) {
  RecipePlan p;
  p.gemms = {{m, n, k, "fp32"}};
  p.gemm_iters = 3;
  return build_recipes(p)[0];
}

TEST(ReplayCudaFake, DescribesTheGpuAndItsLibraries) {
  F = FakeState{};
  cudalib::Libs L = fake_libs();
  CudaBackend b(&L, BackendLimits{});
  GpuInfo g = b.describe({4, "GPU-02020202-0202-0202-0202-020202020202", -1});
  EXPECT_TRUE(g.ready) << g.reason;
  EXPECT_EQ(g.model, "Fake GPU");
  EXPECT_EQ(g.sm_count, 132);
  EXPECT_EQ(g.libs, "cuda 13000; cublasLt 130100");
  EXPECT_EQ(F.current, 1);          // found by UUID, not by the (unknown) ordinal
  EXPECT_EQ(F.stream_priority, 0);  // the lowest priority
  GpuInfo none = b.describe({5, "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff", 7});
  EXPECT_FALSE(none.ready);
  EXPECT_EQ(none.reason, "GPU GPU-ffffffff-ffff-ffff-ffff-ffffffffffff is not on this host");
}

TEST(ReplayCudaFake, GemmIsComputedFingerprintedAndTimedWithCupti) {
  F = FakeState{};
  cudalib::Libs L = fake_libs();
  CudaBackend b(&L, BackendLimits{});
  Recipe r = gemm(32, 16, 8);
  Sample s0 = b.run_gemm(r, {0, "", 0}, 0);
  Sample s1 = b.run_gemm(r, {1, "", 1}, 0);
  ASSERT_EQ(s0.status, SampleStatus::kOk) << s0.reason;
  ASSERT_EQ(s1.status, SampleStatus::kOk) << s1.reason;
  // The reference: D = A x B on the host from the same seeded inputs.
  std::vector<unsigned char> a = gemm_input(r, 'A'), bb = gemm_input(r, 'B');
  const float* x = reinterpret_cast<const float*>(a.data());
  const float* y = reinterpret_cast<const float*>(bb.data());
  std::vector<float> d(32 * 16, 0.0f);
  for (int j = 0; j < 16; ++j)
    for (int kk = 0; kk < 8; ++kk)
      for (int i = 0; i < 32; ++i) d[size_t(i + j * 32)] += x[i + kk * 32] * y[kk + j * 8];
  EXPECT_EQ(s0.fp, scout::fp::fingerprint(d.data(), d.size() * 4, scout::shm::kTypeFloat32, nullptr));
  EXPECT_EQ(s1.fp, s0.fp);
  // 3 timed matmuls after one warm-up; CUPTI kernel time per device.
  EXPECT_EQ(s0.ns, 3'000'000);
  EXPECT_EQ(s1.ns, 6'000'000);
  EXPECT_EQ(F.matmuls, 8);
  EXPECT_EQ(b.heuristic_calls(), 1);  // chosen once, pinned on every GPU
  EXPECT_EQ(F.allocated, 0);          // everything freed
}

TEST(ReplayCudaFake, MemoryLimitSkipsWithTheNumbers) {
  F = FakeState{};
  cudalib::Libs L = fake_libs();
  BackendLimits lim;
  lim.max_mem = 40 << 20;
  CudaBackend b(&L, lim);
  Sample s = b.run_gemm(gemm(2048, 2048, 2048), {0, "", 0}, 0);
  EXPECT_EQ(s.status, SampleStatus::kSkipped);
  EXPECT_EQ(s.reason, "needs 83886080 bytes of device memory, replay may use 41943040");
  F.free_bytes = size_t(1) << 30;  // all but the 1 GiB margin is in use
  Sample t = b.run_gemm(gemm(8, 8, 8), {0, "", 0}, 0);
  EXPECT_EQ(t.status, SampleStatus::kSkipped);
  EXPECT_EQ(t.reason, "needs 33555200 bytes of device memory, replay may use 0");
  EXPECT_EQ(F.peak, 0);  // nothing was allocated
}

TEST(ReplayCudaFake, MissingLibrariesSkipTheirRecipes) {
  F = FakeState{};
  cudalib::Libs L = fake_libs(false);
  CudaBackend b(&L, BackendLimits{});
  Sample s = b.run_gemm(gemm(8, 8, 8), {0, "", 0}, 0);
  EXPECT_EQ(s.status, SampleStatus::kSkipped);
  EXPECT_EQ(s.reason, "libcublasLt.so.13 not found; libnccl.so.2 not found");
  RecipePlan p;
  p.links = {{0, 1}};
  Sample l = b.run_link(build_recipes(p)[0], {0, "", 0}, {1, "", 1}, 0);
  EXPECT_EQ(l.status, SampleStatus::kSkipped);
  EXPECT_EQ(l.peer, 0);
}

TEST(ReplayCudaFake, UuidText) {
  cu::Uuid u;
  for (int i = 0; i < 16; ++i) u.bytes[i] = static_cast<unsigned char>(i * 17);
  EXPECT_EQ(uuid_text(u), "GPU-00112233-4455-6677-8899-aabbccddeeff");
}

int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Recipe link_recipe() {
  RecipePlan p;
  p.links = {{0, 1}};
  p.link_bytes = 4096;
  return build_recipes(p)[0];
}

std::string fake_uid_hex() {
  std::string hex;
  char b[3];
  for (int i = 0; i < 128; ++i) {
    std::snprintf(b, sizeof(b), "%02x", (i * 37 + 11) & 0xff);
    hex += b;
  }
  return hex;
}

TEST(ReplayCudaFake, LinkUniqueIdIsTheHexOfNcclsId) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  std::string err;
  const std::string uid = b.link_unique_id({0, "", 0}, &err);
  EXPECT_EQ(uid, fake_uid_hex());
  EXPECT_EQ(uid.size(), 256u);
  EXPECT_EQ(uid.substr(0, 8), "0b30557a");
  EXPECT_EQ(err, "");

  cudalib::Libs none = fake_libs();
  CudaBackend nb(&none, BackendLimits{});
  EXPECT_EQ(nb.link_unique_id({0, "", 0}, &err), "");
  EXPECT_EQ(err, "libnccl.so.2 not found");
}

TEST(ReplayCudaFake, LinkEndsSendAndReceiveOverANonBlockingCommunicator) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  const Recipe r = link_recipe();
  ASSERT_EQ(r.id, "link:0->1");
  ASSERT_EQ(r.rounds, 2);
  std::string err;
  const std::string uid = b.link_unique_id({0, "", 0}, &err);

  N.pending = 2;  // the communicator settles after two polls
  std::vector<Sample> sent = b.run_link_end(r, {0, "", 0}, {1, "", 1}, true, uid, mono_ns() + 5'000'000'000);
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(N.rank, 0);
  EXPECT_EQ(N.send_peer, 1);
  ASSERT_EQ(N.wire.size(), 4096u);
  const uint64_t payload_fp = scout::fp::fingerprint(N.wire.data(), 4096, scout::shm::kTypeFloat32, nullptr);
  EXPECT_EQ(N.destroys, 1);

  N.pending = 3;
  N.not_ready = 2;  // the receive is still running for two queries
  N.polls = 0;
  std::vector<Sample> got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, uid, mono_ns() + 5'000'000'000);
  ASSERT_EQ(got.size(), 2u);
  for (int round = 0; round < 2; ++round) {
    const Sample& s = got[size_t(round)];
    EXPECT_EQ(s.status, SampleStatus::kOk) << s.reason;
    EXPECT_EQ(s.recipe, "link:0->1");
    EXPECT_EQ(s.global_rank, 1);
    EXPECT_EQ(s.round, round);
    EXPECT_EQ(s.peer, 0);
    EXPECT_TRUE(s.expected_known);
    EXPECT_EQ(s.expected_fp, payload_fp);
    EXPECT_EQ(s.fp, payload_fp);
    EXPECT_EQ(s.ns, 5'000'000);  // CUPTI's receive kernel on device 1
  }
  EXPECT_EQ(N.inits, 2);
  EXPECT_EQ(N.nranks, 2);
  EXPECT_EQ(N.rank, 1);
  EXPECT_EQ(N.recv_peer, 0);
  EXPECT_EQ(N.polls, 4 + 1 + 1);  // init: 3 in progress, then success; each receive: 1
  EXPECT_EQ(N.config.blocking, 0);
  EXPECT_EQ(N.config.size, 80u);  // sizeof(ncclConfig_t) of NCCL 2.28
  EXPECT_EQ(N.config.magic, 0xcafebeefu);
  EXPECT_EQ(N.config.version, 22809u);
  EXPECT_EQ(N.config.cga_cluster_size, cudalib::NcclConfig::kUndefInt);
  EXPECT_EQ(N.config.nvlink_centric_sched, cudalib::NcclConfig::kUndefInt);
  EXPECT_EQ(N.config.net_name, nullptr);
  EXPECT_EQ(bytes_hex(N.id, sizeof(N.id)), uid);
  EXPECT_EQ(N.destroys, 2);
  EXPECT_EQ(N.aborts, 0);
  EXPECT_EQ(F.current, 1);
  EXPECT_EQ(F.allocated, 0);
}

// A GPU whose stream never finishes (its kernels cannot run): the GEMM polls cuStreamQuery until
// its deadline and comes back "timeout" instead of blocking; its buffers are left to the
// abandoned kernels, and later recipes on that GPU time out at once (docs/replay.md, "Deadlines").
TEST(ReplayCudaFake, GemmOnAStuckGpuTimesOutAtItsDeadlineAndMarksTheGpu) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = fake_libs();
  CudaBackend b(&L, BackendLimits{});
  Recipe r = gemm(32, 16, 8);
  N.not_ready = 1 << 30;  // never done
  const int64_t t0 = mono_ns();
  b.set_deadline(t0 + 50'000'000);
  Sample s = b.run_gemm(r, {0, "GPU-stuck", 0}, 0);
  const int64_t took = mono_ns() - t0;
  EXPECT_EQ(s.status, SampleStatus::kTimeout);
  EXPECT_EQ(s.reason, "no kernel finished on GPU-stuck by its deadline (abandoned)");
  EXPECT_EQ(s.ns, -1);
  EXPECT_GE(took, 50'000'000);
  EXPECT_LT(took, 2'000'000'000) << "the backend waited past its deadline";
  EXPECT_GT(F.allocated, 0);  // left to the abandoned kernels, not freed under them
  N.not_ready = 0;
  b.set_deadline(mono_ns() + 1'000'000'000);
  Sample again = b.run_gemm(r, {0, "GPU-stuck", 0}, 1);
  EXPECT_EQ(again.status, SampleStatus::kTimeout);
  EXPECT_EQ(again.reason, "not launched: earlier replay work on this GPU (" + r.id + ") never finished");
  Sample other = b.run_gemm(r, {1, "", 1}, 0);  // another GPU is not affected
  EXPECT_EQ(other.status, SampleStatus::kOk) << other.reason;
}

TEST(ReplayCudaFake, LinkEndWhosePeerNeverJoinsIsAbortedAtTheDeadline) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  const Recipe r = link_recipe();
  N.pending = 1 << 30;  // ncclInProgress for ever
  const int64_t t0 = mono_ns();
  std::vector<Sample> got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, fake_uid_hex(), t0 + 50'000'000);
  const int64_t took = mono_ns() - t0;
  EXPECT_GE(took, 50'000'000);
  EXPECT_LT(took, 500'000'000);
  ASSERT_EQ(got.size(), 2u);
  for (int round = 0; round < 2; ++round) {
    const Sample& s = got[size_t(round)];
    EXPECT_EQ(s.status, SampleStatus::kFailed);
    EXPECT_EQ(s.reason, "the peer did not join the replay communicator by the deadline (aborted)");
    EXPECT_EQ(s.global_rank, 1);
    EXPECT_EQ(s.round, round);
    EXPECT_EQ(s.peer, 0);
  }
  EXPECT_EQ(N.inits, 1);
  EXPECT_EQ(N.aborts, 1);
  EXPECT_EQ(N.destroys, 0);
  EXPECT_EQ(N.recv_peer, -1);  // nothing was posted
  EXPECT_EQ(F.peak, 0);        // nothing was allocated

  // The sender's end answers one sample, its own.
  N = FakeNccl{};
  N.pending = 1 << 30;
  std::vector<Sample> sent = b.run_link_end(r, {0, "", 0}, {1, "", 1}, true, fake_uid_hex(), mono_ns() + 20'000'000);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].global_rank, 0);
  EXPECT_EQ(sent[0].peer, -1);
  EXPECT_EQ(sent[0].status, SampleStatus::kFailed);
  EXPECT_EQ(sent[0].reason, "the peer did not join the replay communicator by the deadline (aborted)");
  EXPECT_EQ(N.aborts, 1);
}

TEST(ReplayCudaFake, LinkEndWithABadIdOrAFailedInit) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  const Recipe r = link_recipe();
  std::vector<Sample> got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, "0123456789", mono_ns() + 1'000'000'000);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, SampleStatus::kFailed);
  EXPECT_EQ(got[0].reason, "bootstrap id is not 128 bytes of hex");
  EXPECT_EQ(N.inits, 0);

  N.settled = 3;  // ncclInternalError
  got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, fake_uid_hex(), mono_ns() + 1'000'000'000);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].status, SampleStatus::kFailed);
  EXPECT_EQ(got[1].reason, "replay communicator init failed (3)");
  EXPECT_EQ(N.aborts, 1);
}

TEST(ReplayCudaFake, LinkEndWithoutDeviceMemoryFailsAndIsAborted) {
  F = FakeState{};
  N = FakeNccl{};
  cudalib::Libs L = nccl_libs();
  CudaBackend b(&L, BackendLimits{});
  const Recipe r = link_recipe();
  F.fail_alloc = true;
  std::vector<Sample> got = b.run_link_end(r, {1, "", 1}, {0, "", 0}, false, fake_uid_hex(), mono_ns() + 1'000'000'000);
  ASSERT_EQ(got.size(), 2u);
  for (const Sample& s : got) {
    EXPECT_EQ(s.status, SampleStatus::kFailed);
    EXPECT_EQ(s.reason, "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (CUDA error 2)");
    EXPECT_EQ(s.peer, 0);
  }
  EXPECT_EQ(N.recv_peer, -1);  // nothing was posted into no buffer
  EXPECT_EQ(N.aborts, 1);
  EXPECT_EQ(N.destroys, 0);
  std::vector<Sample> sent = b.run_link_end(r, {0, "", 0}, {1, "", 1}, true, fake_uid_hex(), mono_ns() + 1'000'000'000);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].reason, "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (CUDA error 2)");
  EXPECT_EQ(N.send_peer, -1);
  EXPECT_EQ(N.aborts, 2);
}

}  // namespace
