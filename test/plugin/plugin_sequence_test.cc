// The built plugin driven with the exact call sequences NCCL makes, on the threads it makes
// them (docs/nccl-notes.md §1.4, 3.1-3.5, 3.8, 3.9), records checked field by field from the
// segment through SegmentReader.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include <cmath>
#include <limits>

#include "scout/fingerprint.h"
#include "test/plugin/plugin_fixture.h"
#include "test/support/call_replay.h"

namespace scout::testing {
namespace {

using shm::RecordSnapshot;

constexpr uint64_t kHashA = 0xA11CE5EEDull;
constexpr uint64_t kHashB = 0xB0B0B0B0ull;

void* const kStream = reinterpret_cast<void*>(0x5000);

TEST_F(PluginTest, SingleCollectiveOutsideGroupIsRecordedAndCompletes) {
  load();
  int mask = 0;
  void* ctx = pl_->init(kHashA, 4, 1, "dp", 2, &mask);
  ASSERT_NE(ctx, nullptr);
  // CollApi|P2pApi|KernelLaunch|Coll|P2p|KernelCh, and ProxyOp|ProxyStep kept (SCOUT_PROXY_PROGRESS=1)
  EXPECT_EQ(mask, 0xE5E);

  OpSpec op;
  op.seq = 7;
  op.count = 1024;
  op.rank = 1;
  int64_t before = shm::wall_ns();
  CollHandles h = nccl_single_coll(*pl_, ctx, op);
  int64_t after = shm::wall_ns();
  for (void* x : {h.group_api, h.coll_api, h.launch, h.group, h.coll}) EXPECT_NE(x, nullptr);

  // Enqueued, not complete: Coll stop only means "handed to the proxy" (docs/nccl-notes.md §3.3).
  SegmentView v = segment();
  ASSERT_EQ(v.records.size(), 1u);
  ASSERT_EQ(v.records[0].size(), 1u);
  EXPECT_EQ(v.records[0][0].state, uint32_t(shm::kStateEnqueued));

  // The proxy thread: channel starts at GPU time t0 (+ channel), stops at t1 (+ channel), each
  // callback after the GPU time it reports, as on a real GPU.
  uint64_t t0 = 0, t1 = 0;
  std::thread proxy([&] {
    t0 = gpu_now();
    void* k[4];
    for (int ch = 0; ch < 4; ++ch) k[ch] = pl_->start(ctx, d_kernel_ch(uint8_t(ch), t0 + ch, h.coll));
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    t1 = gpu_now();
    for (int ch = 0; ch < 4; ++ch) pl_->kernel_ch_stop(k[ch], t1 + ch);
  });
  proxy.join();

  v = segment();
  EXPECT_EQ(v.info.job, "testjob");
  EXPECT_EQ(v.info.host, "node-a");
  EXPECT_EQ(v.info.global_rank, 3);
  EXPECT_EQ(v.info.local_rank, 1);
  EXPECT_EQ(v.info.world_size, 8);
  EXPECT_EQ(v.info.owner_pid, ::getpid());
  EXPECT_EQ(v.info.abi_version, 5u);
  EXPECT_EQ(v.info.events_bad_handle, 0u);
  EXPECT_EQ(v.info.events_unknown, 0u);
  ASSERT_EQ(v.comms.size(), 1u);
  const shm::CommSnapshot& c = v.comms[0];
  EXPECT_EQ(c.comm_hash, kHashA);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.nnodes, 2);
  EXPECT_EQ(c.name, "dp");
  EXPECT_EQ(c.state, uint32_t(shm::kCommActive));
  EXPECT_EQ(c.n_coll, 1u);
  EXPECT_EQ(c.api_calls, 1u);
  EXPECT_EQ(c.bad_handles, 0u);
  EXPECT_EQ(c.n_unmatched, 0u);
  EXPECT_EQ(c.kernelch_extra, 0u);
  // Offset estimate: an upper bound of the true 1000 s, by at most the callback delay (less a
  // possible microsecond of difference between the plugin's TSC clock and clock_gettime).
  EXPECT_GE(c.gpu_clock_offset_ns, kGpuBehindNs - 1000);
  EXPECT_LT(c.gpu_clock_offset_ns, kGpuBehindNs + 1000000000);
  EXPECT_EQ(c.kernel_ns, (t1 + 3) - t0);

  ASSERT_EQ(v.records[0].size(), 1u);
  const RecordSnapshot& r = v.records[0][0];
  EXPECT_EQ(r.index, 0u);
  EXPECT_EQ(r.kind, shm::kKindColl);
  EXPECT_EQ(r.key, 7u);
  EXPECT_EQ(r.func, shm::kFuncAllReduce);
  EXPECT_EQ(r.datatype, shm::kTypeFloat32);
  EXPECT_EQ(r.api_datatype, shm::kTypeFloat32);
  EXPECT_EQ(r.algo, shm::kAlgoRing);
  EXPECT_EQ(r.proto, shm::kProtoSimple);
  EXPECT_EQ(r.n_channels, 4);
  EXPECT_EQ(r.n_warps, 16);
  EXPECT_EQ(r.flags, 0u);
  EXPECT_EQ(r.peer, 0);
  EXPECT_EQ(r.count, 1024u);
  EXPECT_EQ(r.api_count, 1024u);
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_NE(r.group, 0u);
  EXPECT_GE(r.api_ns, before);
  EXPECT_GE(r.launch_ns, r.api_ns);
  EXPECT_GE(r.enqueue_ns, r.launch_ns);
  EXPECT_LE(r.enqueue_ns, after);
  EXPECT_EQ(r.send_buf, 0x7000u);
  EXPECT_EQ(r.recv_buf, 0x8000u);
  EXPECT_EQ(r.stream, 0x5000u);
  EXPECT_EQ(r.thread, gettid_now());
  EXPECT_EQ(r.state, uint32_t(shm::kStateComplete));
  EXPECT_EQ(r.ch_started, 4);
  EXPECT_EQ(r.ch_stopped, 4);
  EXPECT_EQ(r.gpu_start_raw, t0);
  EXPECT_EQ(r.gpu_start_ns, int64_t(t0) + c.gpu_clock_offset_ns);
  EXPECT_EQ(r.gpu_end_ns, int64_t(t1 + 3) + c.gpu_clock_offset_ns);
  EXPECT_GE(r.complete_ns, r.enqueue_ns);

  pl_->finalize(ctx);
  v = segment();
  EXPECT_EQ(v.comms[0].state, uint32_t(shm::kCommFinalized));
  EXPECT_GT(v.comms[0].finalize_ns, 0);
  EXPECT_GT(v.info.closed_ns, 0);
  EXPECT_EQ(pl_->bad_results(), 0);
}

TEST_F(PluginTest, KernelChOnProxyThreadBeforeCollStop) {
  load();
  void* ctx = pl_->init(kHashA, 2, 0);
  // NCCL's hostStreamPlanTask: the proxy may start KernelCh children between Coll start and
  // Coll stop (docs/nccl-notes.md §3.3 step 4).
  void* ga = pl_->start(ctx, d_group_api(false, 1));
  void* ca = pl_->start(ctx, d_coll_api("AllGather", 256, "ncclBfloat16", 0, kStream, false, ga));
  pl_->stop(ca);
  void* kl = pl_->start(ctx, d_kernel_launch(kStream, ga));
  pl_->stop(kl);
  void* g = pl_->start(ctx, d_group());
  void* coll = pl_->start(
      ctx, d_coll(0, "AllGather", (void*)0x100, (void*)0x200, 512, 0, "ncclInt8", 2, "RING", "LL", ca, g, 0));
  uint64_t t0 = gpu_now();
  std::thread proxy([&] { run_kernel_ch(*pl_, ctx, coll, 2, t0, t0 + 100); });
  proxy.join();
  pl_->stop(coll);
  pl_->stop(g);
  pl_->stop(ga);
  SegmentView v = segment();
  ASSERT_EQ(v.records[0].size(), 1u);
  const RecordSnapshot& r = v.records[0][0];
  EXPECT_EQ(r.state, uint32_t(shm::kStateComplete));
  EXPECT_EQ(r.func, shm::kFuncAllGather);
  // Task values: count in bytes with ncclInt8 (docs/nccl-notes.md §2.5); the API's count and type kept.
  EXPECT_EQ(r.datatype, shm::kTypeInt8);
  EXPECT_EQ(r.count, 512u);
  EXPECT_EQ(r.bytes, 512u);
  EXPECT_EQ(r.api_datatype, shm::kTypeBfloat16);
  EXPECT_EQ(r.api_count, 256u);
  EXPECT_EQ(r.proto, shm::kProtoLL);
  EXPECT_EQ(v.comms[0].n_unmatched, 0u);
  pl_->finalize(ctx);
}

TEST_F(PluginTest, UserGroupWithSeveralCollectivesOnSeveralCommunicators) {
  load();
  void* a = pl_->init(kHashA, 4, 2, "tp");
  void* b = pl_->init(kHashB, 2, 1, "dp");
  ASSERT_NE(a, b);
  // ncclGroupStart(); ncclAllReduce(A); ncclAllGather(B); ncclBroadcast(A, root 2);
  // ncclGroupEnd(): the GroupApi event comes with the first call, groupDepth 2.
  void* ga = pl_->start(a, d_group_api(false, 2));
  pl_->state(ga, abi::kStateGroupStartApiStop, nullptr);
  void* ar = pl_->start(a, d_coll_api("AllReduce", 100, "ncclFloat16", 0, kStream, false, ga));
  pl_->stop(ar);
  void* ag = pl_->start(b, d_coll_api("AllGather", 100, "ncclFloat16", 0, kStream, false, ga));
  pl_->stop(ag);
  void* bc = pl_->start(a, d_coll_api("Broadcast", 10, "ncclBfloat16", 2, kStream, false, ga));
  pl_->stop(bc);
  pl_->state(ga, abi::kStateGroupEndApiStart, nullptr);
  // Launch + plan tasks per communicator.
  void* kla = pl_->start(a, d_kernel_launch(kStream, ga));
  pl_->stop(kla);
  void* gra = pl_->start(a, d_group());
  void* c1 = pl_->start(
      a, d_coll(0, "AllReduce", (void*)0x10, (void*)0x10, 100, 0, "ncclFloat16", 2, "TREE", "LL128", ar, gra, 2));
  void* c2 = pl_->start(
      a, d_coll(0, "Broadcast", (void*)0x20, (void*)0x30, 20, 2, "ncclInt8", 1, "RING", "SIMPLE", bc, gra, 2));
  pl_->stop(c1);
  pl_->stop(c2);
  pl_->stop(gra);
  void* klb = pl_->start(b, d_kernel_launch(kStream, ga));
  pl_->stop(klb);
  void* grb = pl_->start(b, d_group());
  void* c3 = pl_->start(
      b, d_coll(0, "AllGather", (void*)0x40, (void*)0x50, 200, 0, "ncclInt8", 2, "RING", "SIMPLE", ag, grb, 1));
  pl_->stop(c3);
  pl_->stop(grb);
  pl_->stop(ga);

  SegmentView v = segment();
  ASSERT_EQ(v.comms.size(), 2u);
  ASSERT_EQ(v.records[0].size(), 2u);
  ASSERT_EQ(v.records[1].size(), 1u);
  const RecordSnapshot& r1 = v.records[0][0];
  const RecordSnapshot& r2 = v.records[0][1];
  const RecordSnapshot& r3 = v.records[1][0];
  EXPECT_EQ(r1.func, shm::kFuncAllReduce);
  EXPECT_EQ(r1.flags, uint32_t(shm::kFlagUserGroup | shm::kFlagInPlace));
  EXPECT_EQ(r1.algo, shm::kAlgoTree);
  EXPECT_EQ(r1.proto, shm::kProtoLL128);
  EXPECT_EQ(r1.bytes, 200u);
  EXPECT_EQ(r2.func, shm::kFuncBroadcast);
  EXPECT_EQ(r2.peer, 2);
  EXPECT_EQ(r2.flags, uint32_t(shm::kFlagUserGroup));
  EXPECT_EQ(r2.api_count, 10u);
  EXPECT_EQ(r2.api_datatype, shm::kTypeBfloat16);
  EXPECT_EQ(r2.count, 20u);
  EXPECT_EQ(r3.func, shm::kFuncAllGather);
  EXPECT_EQ(r3.key, 0u);
  EXPECT_EQ(r3.flags, uint32_t(shm::kFlagUserGroup));
  // One group: the same group id on all three operations.
  EXPECT_NE(r1.group, 0u);
  EXPECT_EQ(r2.group, r1.group);
  EXPECT_EQ(r3.group, r1.group);
  EXPECT_EQ(v.comms[0].api_calls, 2u);
  EXPECT_EQ(v.comms[1].api_calls, 1u);
  EXPECT_EQ(v.comms[0].n_unmatched + v.comms[1].n_unmatched, 0u);
  pl_->finalize(a);
  pl_->finalize(b);
}

// Send #k of rank a to b pairs with recv #k of b from a (docs/record-format.md).
TEST_F(PluginTest, SendRecvKeysPairUpAcrossCommunicators) {
  load();
  // Two ranks of one communicator in this process (ncclCommInitAll): same commHash.
  void* r0 = pl_->init(kHashA, 2, 0);
  void* r1 = pl_->init(kHashA, 2, 1);
  auto p2p = [&](void* ctx, const char* func, int peer, size_t count) {
    void* ga = pl_->start(ctx, d_group_api(false, 1));
    void* api = pl_->start(ctx, d_p2p_api(func, count, "ncclFloat32", kStream, false, ga));
    pl_->stop(api);
    void* kl = pl_->start(ctx, d_kernel_launch(kStream, ga));
    pl_->stop(kl);
    void* g = pl_->start(ctx, d_group());
    void* op = pl_->start(ctx, d_p2p(func, (void*)0x900, "ncclFloat32", count, peer, 2, api, g, 0));
    pl_->stop(op);
    pl_->stop(g);
    pl_->stop(ga);
    return op;
  };
  std::vector<void*> ops;
  for (int k = 0; k < 3; ++k) {
    ops.push_back(p2p(r0, "Send", 1, 10 + k));
    ops.push_back(p2p(r1, "Recv", 0, 10 + k));
  }
  ops.push_back(p2p(r0, "Recv", 1, 99));  // the other direction has its own counter
  ops.push_back(p2p(r1, "Send", 0, 99));
  for (void* op : ops) run_kernel_ch(*pl_, nullptr, op, 2, gpu_now(), gpu_now() + 10);

  SegmentView v = segment();
  ASSERT_EQ(v.records.size(), 2u);
  ASSERT_EQ(v.records[0].size(), 4u);
  ASSERT_EQ(v.records[1].size(), 4u);
  for (int k = 0; k < 3; ++k) {
    const RecordSnapshot& s = v.records[0][k];
    const RecordSnapshot& r = v.records[1][k];
    EXPECT_EQ(s.kind, shm::kKindSend);
    EXPECT_EQ(r.kind, shm::kKindRecv);
    EXPECT_EQ(s.key, uint64_t(k));
    EXPECT_EQ(r.key, uint64_t(k));
    EXPECT_EQ(s.peer, 1);
    EXPECT_EQ(r.peer, 0);
    EXPECT_EQ(s.count, uint64_t(10 + k));
    EXPECT_EQ(s.bytes, uint64_t(4 * (10 + k)));
    EXPECT_EQ(s.send_buf, 0x900u);
    EXPECT_EQ(s.recv_buf, 0u);
    EXPECT_EQ(r.recv_buf, 0x900u);
    EXPECT_EQ(s.func, shm::kFuncSend);
    EXPECT_EQ(r.func, shm::kFuncRecv);
    EXPECT_EQ(s.n_channels, 2);
    EXPECT_EQ(s.state, uint32_t(shm::kStateComplete));
    EXPECT_EQ(r.state, uint32_t(shm::kStateComplete));
  }
  EXPECT_EQ(v.records[0][3].kind, shm::kKindRecv);
  EXPECT_EQ(v.records[0][3].key, 0u);
  EXPECT_EQ(v.records[1][3].kind, shm::kKindSend);
  EXPECT_EQ(v.records[1][3].key, 0u);
  EXPECT_EQ(v.comms[0].n_p2p, 4u);
  EXPECT_EQ(v.comms[1].n_p2p, 4u);
  pl_->finalize(r0);
  pl_->finalize(r1);
}

// Non-blocking communicator: ncclGroupEnd returns ncclInProgress and GroupApi stops before the
// group job thread launches the kernel and posts the Coll (docs/nccl-notes.md §3.1).
TEST_F(PluginTest, NonBlockingCommunicatorLaunchesAfterGroupApiStop) {
  load();
  void* ctx = pl_->init(kHashA, 2, 0);
  void* ga = pl_->start(ctx, d_group_api(false, 1));
  pl_->state(ga, abi::kStateGroupStartApiStop, nullptr);
  void* ca = pl_->start(ctx, d_coll_api("ReduceScatter", 64, "ncclFloat64", 0, kStream, false, ga));
  pl_->stop(ca);
  pl_->state(ga, abi::kStateGroupEndApiStart, nullptr);
  pl_->stop(ga);  // before any launch
  uint32_t user_tid = gettid_now();
  void* coll = nullptr;
  int64_t launch_before = 0;
  std::thread job([&] {
    launch_before = shm::wall_ns();
    void* kl = pl_->start(ctx, d_kernel_launch((void*)0x6000, ga));
    pl_->stop(kl);
    void* g = pl_->start(ctx, d_group());
    coll = pl_->start(
        ctx, d_coll(3, "ReduceScatter", (void*)1, (void*)2, 64, 0, "ncclFloat64", 1, "RING", "SIMPLE", ca, g, 0));
    pl_->stop(coll);
    pl_->stop(g);
  });
  job.join();
  // The next call on the user thread (after the user saw ncclSuccess) ends another group: the
  // first call was claimed by its Coll, so nothing is recorded as unmatched.
  OpSpec next;
  next.seq = 4;
  next.func = "ReduceScatter";
  CollHandles h2 = nccl_single_coll(*pl_, ctx, next);
  run_kernel_ch(*pl_, ctx, coll, 1, gpu_now(), gpu_now() + 5);
  run_kernel_ch(*pl_, ctx, h2.coll, 4, gpu_now(), gpu_now() + 5);

  SegmentView v = segment();
  ASSERT_EQ(v.records[0].size(), 2u);
  const RecordSnapshot& r = v.records[0][0];
  EXPECT_EQ(r.kind, shm::kKindColl);
  EXPECT_EQ(r.key, 3u);
  EXPECT_EQ(r.func, shm::kFuncReduceScatter);
  EXPECT_EQ(r.api_count, 64u);
  EXPECT_EQ(r.thread, user_tid);  // the API call's thread
  EXPECT_EQ(r.stream, 0x6000u);   // the launch stream
  EXPECT_GE(r.launch_ns, launch_before);
  EXPECT_EQ(r.flags, 0u);
  EXPECT_EQ(r.state, uint32_t(shm::kStateComplete));
  EXPECT_EQ(v.records[0][1].key, 4u);
  EXPECT_EQ(v.comms[0].n_unmatched, 0u);
  EXPECT_EQ(v.comms[0].bad_handles, 0u);
  pl_->finalize(ctx);
  EXPECT_EQ(segment().comms[0].n_unmatched, 0u);
}

// CUDA graph capture (docs/nccl-notes.md §3.8): API events and KernelLaunch at capture time only; Group/Coll
// from a host-callback thread at every replay with the capture-time CollApi as parent;
// KernelCh on the proxy thread.
TEST_F(PluginTest, GraphCapturedCollectiveRecordedAtEachReplay) {
  load();
  void* ctx = pl_->init(kHashA, 2, 0);
  void* ga = pl_->start(ctx, d_group_api(true, 1));
  void* ca = pl_->start(ctx, d_coll_api("AllReduce", 32, "ncclFloat32", 0, kStream, true, ga));
  pl_->stop(ca);
  void* kl = pl_->start(ctx, d_kernel_launch(kStream, ga));
  pl_->stop(kl);
  pl_->stop(ga);
  // A second captured call NCCL never posts a Coll for (a symmetric kernel).
  void* ga2 = pl_->start(ctx, d_group_api(true, 1));
  void* sym = pl_->start(ctx, d_coll_api("AllReduce", 8, "ncclFloat32", 0, kStream, true, ga2));
  pl_->stop(sym);
  pl_->stop(ga2);

  // Three replays later, each on a CUDA callback thread, unrelated eager work in between.
  for (uint64_t replay = 0; replay < 3; ++replay) {
    void* op = nullptr;
    std::thread cb([&] {
      void* g = pl_->start(ctx, d_group());
      op = pl_->start(
          ctx, d_coll(replay, "AllReduce", (void*)0xa, (void*)0xb, 32, 0, "ncclFloat32", 2, "RING", "LL", ca, g, 0));
      pl_->stop(op);
      pl_->stop(g);
    });
    cb.join();
    std::thread proxy([&] { run_kernel_ch(*pl_, ctx, op, 2, gpu_now(), gpu_now() + 9); });
    proxy.join();
  }
  SegmentView v = segment();
  ASSERT_EQ(v.records[0].size(), 3u);
  for (uint64_t k = 0; k < 3; ++k) {
    const RecordSnapshot& r = v.records[0][k];
    EXPECT_EQ(r.kind, shm::kKindColl);
    EXPECT_EQ(r.key, k);
    EXPECT_EQ(r.flags, uint32_t(shm::kFlagGraphCaptured));
    EXPECT_EQ(r.api_count, 32u);
    EXPECT_EQ(r.launch_ns, 0);  // launched at capture time, not at this replay
    EXPECT_EQ(r.state, uint32_t(shm::kStateComplete));
  }
  EXPECT_EQ(v.comms[0].bad_handles, 0u);
  EXPECT_EQ(v.comms[0].n_unmatched, 0u);
  // At finalize the never-posted captured call is recorded as unmatched, never guessed.
  pl_->finalize(ctx);
  v = segment();
  ASSERT_EQ(v.records[0].size(), 4u);
  const RecordSnapshot& u = v.records[0][3];
  EXPECT_EQ(u.kind, shm::kKindUnmatched);
  EXPECT_EQ(u.state, uint32_t(shm::kStateApiOnly));
  EXPECT_EQ(u.flags, uint32_t(shm::kFlagUnmatched | shm::kFlagNoKernelCh | shm::kFlagGraphCaptured));
  EXPECT_EQ(u.api_count, 8u);
  EXPECT_EQ(u.key, 0u);
  EXPECT_EQ(v.comms[0].n_unmatched, 1u);
}

// API calls NCCL never turns into a Coll (symmetric kernels, CE in 2.28): one unmatched record
// each, with the communicator's fallback key.
TEST_F(PluginTest, ApiCallsWithoutCollAreRecordedAsUnmatched) {
  load();
  void* ctx = pl_->init(kHashA, 2, 0);
  // A user group mixing a symmetric AllReduce (no Coll) with a regular AllGather: decided at the
  // GroupApi stop, because the AllGather's Coll shows that the group's plans were launched.
  void* ga = pl_->start(ctx, d_group_api(false, 2));
  void* sym = pl_->start(ctx, d_coll_api("AllReduce", 77, "ncclBfloat16", 0, kStream, false, ga));
  pl_->stop(sym);
  void* reg = pl_->start(ctx, d_coll_api("AllGather", 5, "ncclInt32", 0, kStream, false, ga));
  pl_->stop(reg);
  void* kl = pl_->start(ctx, d_kernel_launch(kStream, ga));
  pl_->stop(kl);
  void* g = pl_->start(ctx, d_group());
  void* op =
      pl_->start(ctx, d_coll(9, "AllGather", (void*)1, (void*)2, 20, 0, "ncclInt8", 1, "RING", "SIMPLE", reg, g, 0));
  pl_->stop(op);
  pl_->stop(g);
  pl_->stop(ga);
  SegmentView v = segment();
  ASSERT_EQ(v.records[0].size(), 2u);
  EXPECT_EQ(v.records[0][0].kind, shm::kKindColl);
  const RecordSnapshot& u = v.records[0][1];
  EXPECT_EQ(u.kind, shm::kKindUnmatched);
  EXPECT_EQ(u.key, 0u);
  EXPECT_EQ(u.func, shm::kFuncAllReduce);
  EXPECT_EQ(u.datatype, shm::kTypeBfloat16);
  EXPECT_EQ(u.api_datatype, shm::kTypeBfloat16);
  EXPECT_EQ(u.count, 77u);
  EXPECT_EQ(u.api_count, 77u);
  EXPECT_EQ(u.bytes, 154u);
  EXPECT_EQ(u.state, uint32_t(shm::kStateApiOnly));
  EXPECT_EQ(u.flags, uint32_t(shm::kFlagUnmatched | shm::kFlagNoKernelCh | shm::kFlagUserGroup));
  EXPECT_EQ(u.group, v.records[0][0].group);
  EXPECT_EQ(u.stream, 0x5000u);
  EXPECT_EQ(u.thread, gettid_now());
  EXPECT_GT(u.api_ns, 0);

  // A lone symmetric collective: nothing launched in its group, so the decision waits for the
  // thread's next group end (a non-blocking launch could still come); then it is unmatched.
  void* ga2 = pl_->start(ctx, d_group_api(false, 1));
  void* sym2 = pl_->start(ctx, d_coll_api("ReduceScatter", 3, "ncclFloat32", 0, kStream, false, ga2));
  pl_->stop(sym2);
  pl_->stop(ga2);
  EXPECT_EQ(segment().records[0].size(), 2u);
  OpSpec next;
  next.seq = 10;
  next.func = "AllGather";
  nccl_single_coll(*pl_, ctx, next);
  v = segment();
  ASSERT_EQ(v.records[0].size(), 4u);
  EXPECT_EQ(v.records[0][2].kind, shm::kKindColl);
  EXPECT_EQ(v.records[0][2].key, 10u);
  EXPECT_EQ(v.records[0][3].kind, shm::kKindUnmatched);
  EXPECT_EQ(v.records[0][3].func, shm::kFuncReduceScatter);
  EXPECT_EQ(v.records[0][3].key, 1u);
  EXPECT_EQ(v.comms[0].n_unmatched, 2u);
  EXPECT_EQ(v.comms[0].n_coll, 2u);
  pl_->finalize(ctx);
  EXPECT_EQ(segment().comms[0].n_unmatched, 2u);
}

// KernelCh ring-overrun shapes (docs/nccl-notes.md §3.5 caveat 2) and channel bookkeeping limits.
TEST_F(PluginTest, KernelChOverrunDuplicateAndExtraChannels) {
  env_.set("SCOUT_RING_SLOTS", "16");
  load();
  void* ctx = pl_->init(kHashA, 2, 0);
  std::vector<CollHandles> ops;
  for (uint64_t k = 0; k < 20; ++k) {
    OpSpec op;
    op.seq = k;
    op.nch = 2;
    ops.push_back(nccl_single_coll(*pl_, ctx, op));
  }
  // The proxy lags: KernelCh for operation 0 arrives after its record was overwritten.
  void* orphan = pl_->start(ctx, d_kernel_ch(0, gpu_now(), ops[0].coll));
  EXPECT_NE(orphan, nullptr);
  pl_->kernel_ch_stop(orphan, gpu_now());
  // Operation 19: channel 0 twice, channel 1, then channel 5 beyond nChannels = 2.
  void* c0 = pl_->start(ctx, d_kernel_ch(0, gpu_now(), ops[19].coll));
  void* dup = pl_->start(ctx, d_kernel_ch(0, gpu_now(), ops[19].coll));
  void* c1 = pl_->start(ctx, d_kernel_ch(1, gpu_now(), ops[19].coll));
  void* extra = pl_->start(ctx, d_kernel_ch(5, gpu_now(), ops[19].coll));
  pl_->kernel_ch_stop(dup, gpu_now());
  pl_->kernel_ch_stop(extra, gpu_now());
  pl_->kernel_ch_stop(c0, gpu_now());
  SegmentView v = segment();
  const RecordSnapshot& r19 = v.records[0].back();
  EXPECT_EQ(r19.key, 19u);
  EXPECT_EQ(r19.state, uint32_t(shm::kStateRunning));
  EXPECT_EQ(r19.ch_started, 2);
  EXPECT_EQ(r19.ch_stopped, 1);
  pl_->kernel_ch_stop(c1, gpu_now());
  pl_->kernel_ch_stop(c1, gpu_now());  // a stop repeated: ignored
  v = segment();
  EXPECT_EQ(v.records[0].back().state, uint32_t(shm::kStateComplete));
  EXPECT_EQ(v.records[0].back().ch_stopped, 2);
  EXPECT_EQ(v.comms[0].head, 20u);
  EXPECT_EQ(v.records[0].size(), 16u);
  EXPECT_EQ(v.records[0].front().key, 4u);
  EXPECT_EQ(v.comms[0].overwritten_live, 4u);  // ops 0-3 reused while enqueued
  EXPECT_EQ(v.comms[0].kernelch_orphans, 1u);  // its start (its handle's stop is then inert)
  EXPECT_EQ(v.comms[0].kernelch_extra, 3u);    // duplicate start, extra start, repeated stop
  EXPECT_EQ(v.comms[0].bad_handles, 0u);

  // nChannels == 0: completion cannot be observed; flagged, never counted as lost when reused.
  OpSpec none;
  none.seq = 20;
  none.nch = 0;
  nccl_single_coll(*pl_, ctx, none);
  v = segment();
  EXPECT_EQ(v.records[0].back().flags, uint32_t(shm::kFlagNoKernelCh));
  EXPECT_EQ(v.records[0].back().state, uint32_t(shm::kStateEnqueued));
  for (uint64_t k = 21; k < 21 + 16; ++k) {
    OpSpec op;
    op.seq = k;
    op.nch = 1;
    nccl_single_coll(*pl_, ctx, op);
  }
  // Op 20 reused the slot of op 4 (enqueued); the 16 more reused those of 5..20: 5..18
  // incomplete, 19 complete, 20 without KernelCh (never counted).
  EXPECT_EQ(segment().comms[0].overwritten_live, 4u + 1u + 14u);
  pl_->finalize(ctx);
}

// PXN (docs/nccl-notes.md §3.9): a ProxyOp of another process arrives with that process's context and
// parent; both are garbage here and would crash if touched.
TEST_F(PluginTest, ForeignPxnProxyOpsAreCountedNeverTouched) {
  load();
  void* ctx = pl_->init(kHashA, 2, 0);
  pid_t other = ::getpid() + 1;
  void* garbage_ctx = reinterpret_cast<void*>(0x10);
  void* garbage_parent = reinterpret_cast<void*>(0xfffffffffffff000ull);
  // On a thread that never delivered one of our KernelCh events: counted on the segment.
  void* h0 = pl_->start(garbage_ctx, d_proxy_op(other, garbage_parent, 1, 3));
  EXPECT_NE(h0, nullptr);
  pl_->stop(h0);
  // On the proxy thread of our communicator: counted on it.
  std::thread proxy([&] {
    OpSpec op;
    CollHandles h = nccl_single_coll(*pl_, ctx, op);
    run_kernel_ch(*pl_, ctx, h.coll, 4, gpu_now(), gpu_now() + 1);
    for (int i = 0; i < 3; ++i) {
      void* x = pl_->start(garbage_ctx, d_proxy_op(other, garbage_parent, 1, i));
      abi::StateArgs a{};
      pl_->state(x, abi::kStateProxyOpInProgress, &a);
      pl_->stop(x);
    }
  });
  proxy.join();
  SegmentView v = segment();
  EXPECT_EQ(v.info.events_bad_handle, 1u);
  EXPECT_EQ(v.comms[0].foreign_proxy, 3u);
  EXPECT_EQ(v.comms[0].bad_handles, 0u);
  EXPECT_EQ(v.records[0].size(), 1u);
  bool said = false;
  for (auto& m : captured_logs()) said |= m.find("PXN") != std::string::npos;
  EXPECT_TRUE(said);
  pl_->finalize(ctx);
}

// NCCL 2.27 loads v4: no API or KernelLaunch events; Coll/P2p parent = legacy Group handle;
// p2p.nChannels uninitialised (docs/nccl-notes.md §2.5).
TEST_F(PluginTest, V4SequencesAreRecordedWithoutApiInformation) {
  load_v4();
  int mask = 0;
  void* ctx = pl_->init(kHashA, 2, 1, "v4comm", 1, &mask);
  EXPECT_EQ(mask, 0xE5E);
  OpSpec op;
  op.seq = 11;
  op.rank = 1;
  CollHandles h = nccl_single_coll(*pl_, ctx, op);
  EXPECT_EQ(h.group_api, nullptr);  // never delivered to v4
  EXPECT_EQ(h.coll_api, nullptr);
  std::thread proxy([&] { run_kernel_ch(*pl_, ctx, h.coll, 4, gpu_now(), gpu_now() + 3); });
  proxy.join();
  OpSpec send;
  send.func = "Send";
  send.root = 0;
  CollHandles s = nccl_single_coll(*pl_, ctx, send);
  void* k0 = pl_->start(ctx, d_kernel_ch(0, gpu_now(), s.coll));
  pl_->kernel_ch_stop(k0, gpu_now());

  SegmentView v = segment();
  EXPECT_EQ(v.info.abi_version, 4u);
  EXPECT_EQ(v.comms[0].name, "v4comm");
  ASSERT_EQ(v.records[0].size(), 2u);
  const RecordSnapshot& c = v.records[0][0];
  EXPECT_EQ(c.kind, shm::kKindColl);
  EXPECT_EQ(c.key, 11u);
  EXPECT_EQ(c.flags, uint32_t(shm::kFlagNoApi));
  EXPECT_EQ(c.api_ns, 0);
  EXPECT_EQ(c.launch_ns, 0);
  EXPECT_EQ(c.api_count, 0u);
  EXPECT_EQ(c.api_datatype, shm::kTypeUnknown);
  EXPECT_EQ(c.thread, gettid_now());
  EXPECT_EQ(c.state, uint32_t(shm::kStateComplete));
  const RecordSnapshot& p = v.records[0][1];
  EXPECT_EQ(p.kind, shm::kKindSend);
  EXPECT_EQ(p.key, 0u);
  EXPECT_EQ(p.n_channels, 0);  // not 0xCD: the v4 value is never trusted
  EXPECT_EQ(p.flags, uint32_t(shm::kFlagNoApi | shm::kFlagNoKernelCh));
  EXPECT_EQ(p.state, uint32_t(shm::kStateRunning));  // progress seen, completion unknowable
  EXPECT_EQ(p.ch_started, 1);
  EXPECT_EQ(v.comms[0].bad_handles, 0u);
  EXPECT_EQ(v.info.events_unknown, 0u);
  pl_->finalize(ctx);
}

// NCCL 2.30 loads v6: copy-engine collectives are recorded as kKindCeColl (unmatched), CeSync
// and CeBatch ignored and counted; the rest as in v5.
TEST_F(PluginTest, V6CopyEngineCollectives) {
  load(sim::NcclLookup::k2_30);
  ASSERT_EQ(pl_->version(), 6);
  void* ctx = pl_->init(kHashA, 8, 5);
  void* ga = pl_->start(ctx, d_group_api(false, 1));
  void* ca = pl_->start(ctx, d_coll_api("AllGather", 1000, "ncclFloat16", 0, kStream, false, ga));
  pl_->stop(ca);
  abi::DescrV6 ce{};
  ce.type = abi::kEvCeColl;
  ce.parentObj = ca;
  ce.ceColl.seqNumber = 42;
  ce.ceColl.func = "AllGather";
  ce.ceColl.sendBuff = (void*)0x11;
  ce.ceColl.recvBuff = (void*)0x22;
  ce.ceColl.count = 2000;
  ce.ceColl.datatype = "ncclInt8";
  ce.ceColl.syncStrategy = "MC";
  ce.ceColl.stream = (void*)0x6600;
  void* ceh = pl_->start_v6(ctx, ce);
  abi::DescrV6 sync{};
  sync.type = abi::kEvCeSync;
  sync.parentObj = ceh;
  void* sh = pl_->start_v6(ctx, sync);
  pl_->stop(sh);
  abi::DescrV6 batch{};
  batch.type = abi::kEvCeBatch;
  batch.parentObj = ceh;
  void* bh = pl_->start_v6(ctx, batch);
  pl_->stop(bh);
  pl_->stop(ceh);
  pl_->stop(ga);
  OpSpec op;
  op.seq = 0;
  CollHandles h = nccl_single_coll(*pl_, ctx, op);
  run_kernel_ch(*pl_, ctx, h.coll, 4, gpu_now(), gpu_now() + 2);

  SegmentView v = segment();
  EXPECT_EQ(v.info.abi_version, 6u);
  ASSERT_EQ(v.records[0].size(), 2u);
  const RecordSnapshot& r = v.records[0][0];
  EXPECT_EQ(r.kind, shm::kKindCeColl);
  EXPECT_EQ(r.key, 42u);
  EXPECT_EQ(r.func, shm::kFuncAllGather);
  EXPECT_EQ(r.flags, uint32_t(shm::kFlagUnmatched | shm::kFlagNoKernelCh));
  EXPECT_EQ(r.count, 2000u);
  EXPECT_EQ(r.api_count, 1000u);
  EXPECT_EQ(r.api_datatype, shm::kTypeFloat16);
  EXPECT_EQ(r.stream, 0x6600u);
  EXPECT_EQ(r.state, uint32_t(shm::kStateEnqueued));
  EXPECT_EQ(v.records[0][1].kind, shm::kKindColl);
  EXPECT_EQ(v.records[0][1].state, uint32_t(shm::kStateComplete));
  EXPECT_EQ(v.comms[0].ignored_events, 2u);
  EXPECT_EQ(v.comms[0].n_unmatched, 1u);  // the CeColl record; its API call was claimed
  pl_->finalize(ctx);
  EXPECT_EQ(segment().comms[0].n_unmatched, 1u);
}

TEST_F(PluginTest, P2pIgnoredWhenScoutP2pIsOff) {
  env_.set("SCOUT_P2P", "0");
  load();
  void* ctx = pl_->init(kHashA, 2, 0);
  OpSpec send;
  send.func = "Send";
  send.root = 1;
  CollHandles h = nccl_single_coll(*pl_, ctx, send);
  run_kernel_ch(*pl_, ctx, h.coll, 4, gpu_now(), gpu_now() + 1);
  OpSpec ar;
  CollHandles a = nccl_single_coll(*pl_, ctx, ar);
  OpSpec ar2;
  ar2.seq = 1;
  nccl_single_coll(*pl_, ctx, ar2);
  SegmentView v = segment();
  ASSERT_EQ(v.records[0].size(), 2u);
  EXPECT_EQ(v.records[0][0].func, shm::kFuncAllReduce);
  EXPECT_EQ(v.comms[0].n_p2p, 0u);
  EXPECT_EQ(v.comms[0].n_unmatched, 0u);
  EXPECT_EQ(v.comms[0].api_calls, 3u);
  EXPECT_EQ(v.comms[0].bad_handles + v.info.events_bad_handle, 0u);
  (void)a;
  pl_->finalize(ctx);
}

TEST_F(PluginTest, DisabledByScoutEnableLeavesMaskAndRecordsNothing) {
  env_.set("SCOUT_ENABLE", "0");
  load();
  int mask = 0x1234;
  void* ctx = pl_->init(kHashA, 2, 0, nullptr, 1, &mask);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(mask, 0x1234);
  OpSpec op;
  CollHandles h = nccl_single_coll(*pl_, ctx, op);
  EXPECT_EQ(h.coll, nullptr);
  pl_->stop(nullptr);
  EXPECT_TRUE(segment_files(dir_.path()).empty());
  EXPECT_EQ(pl_->bad_results(), 0);
}

// The fingerprint engine's hooks get the operation as the table says (send/receive
// bytes per function, API datatype for NaN counting): with host buffers and the CPU engine,
// the fingerprints in the records equal the reference over exactly those bytes.
TEST_F(PluginTest, FingerprintHooksSeeTheRightBuffersAndSizes) {
  env_.set("SCOUT_FP", "1");
  load();
  const int nranks = 4, rank = 1;
  void* ctx = pl_->init(kHashA, nranks, rank);
  std::vector<float> send(256), recv(256 * nranks);
  for (size_t i = 0; i < send.size(); ++i) send[i] = float(i) * 0.5f;
  send[7] = send[9] = send[11] = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i < recv.size(); ++i) recv[i] = float(i);
  auto run = [&](const char* func, uint64_t seq, size_t count, const char* dtype, size_t task_count,
                 const char* task_dtype, int root) {
    OpSpec op;
    op.func = func;
    op.seq = seq;
    op.count = count;
    op.dtype = dtype;
    op.task_count = task_count;
    op.task_dtype = task_dtype;
    op.root = root;
    op.rank = rank;
    op.send = send.data();
    op.recv = recv.data();
    op.nch = 2;
    CollHandles h = nccl_single_coll(*pl_, ctx, op);
    uint64_t t0 = gpu_now();
    run_kernel_ch(*pl_, ctx, h.coll, 2, t0, t0 + 100);
  };
  run("AllReduce", 0, 256, "ncclFloat32", 0, nullptr, 0);
  run("AllGather", 0, 256, "ncclFloat32", 1024, "ncclInt8", 0);  // task: bytes as ncclInt8
  run("Reduce", 0, 256, "ncclFloat32", 0, nullptr, 0);           // rank 1 is not the root
  SegmentView v = segment();
  ASSERT_EQ(v.records[0].size(), 3u);
  auto fpv = [](const void* p, uint64_t n, uint8_t dt, fp::Counts* c) { return fp::fingerprint(p, n, dt, c); };
  fp::Counts sc;
  uint64_t want_send = fpv(send.data(), 1024, shm::kTypeFloat32, &sc);
  EXPECT_EQ(sc.nan, 3u);
  for (const auto& r : v.records[0]) {
    EXPECT_TRUE(r.flags & shm::kFlagFpSampled) << int(r.func);
    EXPECT_EQ(r.fp_send_status, shm::kFpDone) << int(r.func);
    EXPECT_EQ(r.fp_send, want_send) << int(r.func);
    EXPECT_EQ(r.send_nan, 3u) << int(r.func);  // counted as float32: the API datatype
  }
  const auto& ar = v.records[0][0];
  EXPECT_EQ(ar.fp_recv_status, shm::kFpDone);
  EXPECT_EQ(ar.fp_recv, fpv(recv.data(), 1024, shm::kTypeFloat32, nullptr));
  const auto& ag = v.records[0][1];
  EXPECT_EQ(ag.fp_recv_status, shm::kFpDone);
  EXPECT_EQ(ag.fp_recv, fpv(recv.data(), 1024 * nranks, shm::kTypeFloat32, nullptr));
  EXPECT_EQ(ag.fp_bytes, uint64_t(1024 * nranks));
  const auto& rd = v.records[0][2];
  EXPECT_EQ(rd.fp_recv_status, shm::kFpNone);  // only the root receives
  EXPECT_EQ(v.comms[0].fp_sampled, 3u);
  EXPECT_GT(v.comms[0].kernel_ns, 0u);
  EXPECT_EQ(v.comms[0].kernel_ns, 3u * (100u + 1u));  // counted once (by the event layer)
  pl_->finalize(ctx);
}

// SCOUT_RECORD_CALLS: the ABI layer appends every callback to PATH.<pid>.bin; replaying
// that file into a fresh load of the plugin gives the same records.
TEST_F(PluginTest, RecordedCallsReplayToTheSameRecords) {
  std::string a = dir_.path() + "/a", b = dir_.path() + "/b", prefix = dir_.path() + "/calls";
  ASSERT_EQ(::mkdir(a.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(b.c_str(), 0700), 0);
  env_.set("SCOUT_SHM_DIR", a);
  env_.set("SCOUT_RECORD_CALLS", prefix);
  load();
  void* ctx = pl_->init(kHashA, 2, 0, "rec");
  for (uint64_t k = 0; k < 3; ++k) {
    OpSpec op;
    op.seq = k;
    op.func = k == 1 ? "AllGather" : "AllReduce";
    CollHandles h = nccl_single_coll(*pl_, ctx, op);
    std::thread proxy([&] { run_kernel_ch(*pl_, ctx, h.coll, 4, gpu_now(), gpu_now() + 5); });
    proxy.join();
  }
  OpSpec send;
  send.func = "Send";
  send.root = 1;
  nccl_single_coll(*pl_, ctx, send);
  pl_->finalize(ctx);
  TearDown();
  SegmentView va = read_segment(a);
  ASSERT_TRUE(va.ok) << va.error;

  std::string path = prefix + "." + std::to_string(::getpid()) + ".bin";
  std::string err;
  EXPECT_EQ(recording_abi(path, &err), 5) << err;
  env_.unset("SCOUT_RECORD_CALLS");
  env_.set("SCOUT_SHM_DIR", b);
  load();
  ReplayStats stats;
  ASSERT_TRUE(replay_calls(path, lp_, &stats, &err)) << err;
  EXPECT_EQ(stats.inits, 1u);
  EXPECT_EQ(stats.unmapped, 0u);
  EXPECT_GE(stats.threads, 2u);  // the user thread and the proxy thread
  TearDown();
  SegmentView vb = read_segment(b);
  ASSERT_TRUE(vb.ok) << vb.error;
  ASSERT_EQ(va.records.size(), 1u);
  ASSERT_EQ(vb.records.size(), 1u);
  ASSERT_EQ(va.records[0].size(), 4u);
  ASSERT_EQ(vb.records[0].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const RecordSnapshot& x = va.records[0][i];
    const RecordSnapshot& y = vb.records[0][i];
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.key, y.key) << i;
    EXPECT_EQ(x.func, y.func) << i;
    EXPECT_EQ(x.count, y.count) << i;
    EXPECT_EQ(x.api_count, y.api_count) << i;
    EXPECT_EQ(x.n_channels, y.n_channels) << i;
    EXPECT_EQ(x.state, y.state) << i;
    EXPECT_EQ(x.ch_stopped, y.ch_stopped) << i;
    EXPECT_EQ(x.gpu_start_raw, y.gpu_start_raw) << i;
  }
  EXPECT_EQ(vb.records[0][1].func, shm::kFuncAllGather);
  EXPECT_EQ(vb.records[0][3].kind, shm::kKindSend);
  EXPECT_EQ(vb.comms[0].name, "rec");
}

}  // namespace
}  // namespace scout::testing
