// Bad input never crashes the host process and is counted: NULL,
// stale and garbage handles, unknown event types and states, NULL strings, a full ring, an
// unusable SCOUT_SHM_DIR, dlclose/re-dlopen cycles, concurrent inits. All through the real .so.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "test/plugin/plugin_fixture.h"

namespace scout::testing {
namespace {

using shm::RecordSnapshot;

constexpr uint64_t kHash = 0x1234567890ull;

bool logged(const std::string& needle) {
  for (const auto& m : captured_logs()) {
    if (m.find(needle) != std::string::npos) return true;
  }
  return false;
}

int count_logged(const std::string& needle) {
  int n = 0;
  for (const auto& m : captured_logs()) n += m.find(needle) != std::string::npos;
  return n;
}

TEST_F(PluginTest, NullHandlesAndNullPointersAreCounted) {
  load();
  void* ctx = pl_->init(kHash, 2, 0);
  pl_->stop(nullptr);
  pl_->state(nullptr, abi::kStateKernelChStop, nullptr);
  void* k = pl_->start(ctx, d_kernel_ch(0, gpu_now(), nullptr));  // KernelCh without parent
  EXPECT_NE(k, nullptr);
  pl_->kernel_ch_stop(k, gpu_now());
  // A Coll whose CollApi handle is NULL: recorded, flagged, counted.
  void* coll = pl_->start(
      ctx, d_coll(5, "AllReduce", (void*)1, (void*)2, 8, 0, "ncclFloat32", 1, "RING", "LL", nullptr, nullptr, 0));
  // NULL out-pointer and NULL descriptor straight into the table.
  abi::DescrV5 d = d_group();
  EXPECT_EQ(lp_.v5->startEvent(ctx, nullptr, &d), abi::kSuccess);
  void* h = reinterpret_cast<void*>(0x77);
  EXPECT_EQ(lp_.v5->startEvent(ctx, &h, nullptr), abi::kSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(lp_.v5->init(nullptr, kHash, nullptr, nullptr, 1, 2, 1, nullptr), abi::kSuccess);
  EXPECT_EQ(lp_.v5->finalize(nullptr), abi::kSuccess);

  SegmentView v = segment();
  EXPECT_EQ(v.info.events_bad_handle, 2u);  // stop(NULL), recordEventState(NULL)
  EXPECT_EQ(v.comms[0].bad_handles, 2u);    // KernelCh parent NULL, Coll parent NULL
  ASSERT_EQ(v.records[0].size(), 1u);
  EXPECT_EQ(v.records[0][0].key, 5u);
  EXPECT_EQ(v.records[0][0].flags, uint32_t(shm::kFlagNoApi));
  EXPECT_EQ(count_logged("invalid, stale or foreign handle"), 1);  // said once
  (void)coll;
  pl_->finalize(ctx);
}

TEST_F(PluginTest, StaleHandlesAreCountedNeverFollowed) {
  load();
  void* ctx = pl_->init(kHash, 2, 0);
  OpSpec op;
  CollHandles h = nccl_single_coll(*pl_, ctx, op);
  // GroupApi stopped twice.
  pl_->stop(h.group_api);
  // docs/nccl-notes.md §3.10: a later task inherits an already used CollApi handle.
  void* g = pl_->start(ctx, d_group());
  pl_->start(ctx, d_coll(1, "AllReduce", (void*)1, (void*)2, 8, 0, "ncclFloat32", 1, "RING", "LL", h.coll_api, g, 0));
  SegmentView v = segment();
  ASSERT_EQ(v.records[0].size(), 2u);
  EXPECT_EQ(v.records[0][0].flags, 0u);
  EXPECT_EQ(v.records[0][1].flags, uint32_t(shm::kFlagNoApi));
  EXPECT_EQ(v.records[0][1].api_count, 0u);
  EXPECT_EQ(v.comms[0].bad_handles, 1u);
  EXPECT_EQ(v.info.events_bad_handle, 1u);

  // A context used after its finalize, and the finalize repeated.
  void* other = pl_->init(kHash + 1, 2, 0);
  pl_->finalize(ctx);
  void* x = pl_->start(ctx, d_coll_api("AllReduce", 1, "ncclFloat32", 0, nullptr, false, nullptr));
  EXPECT_NE(x, nullptr);
  pl_->stop(x);
  pl_->finalize(ctx);
  v = segment();
  EXPECT_EQ(v.info.events_bad_handle, 3u);
  EXPECT_EQ(v.comms[0].api_calls, 1u);
  EXPECT_EQ(v.comms[0].state, uint32_t(shm::kCommFinalized));
  pl_->finalize(other);

  // Handles of an earlier load of the library (dlclose + dlopen: new salt, new state).
  TearDown();
  load();
  void* ctx2 = pl_->init(kHash, 2, 0);
  pl_->stop(h.coll);
  pl_->stop(h.group_api);
  void* k = pl_->start(ctx2, d_kernel_ch(0, gpu_now(), h.coll));
  pl_->kernel_ch_stop(k, gpu_now());
  pl_->start(ctx, d_kernel_launch(nullptr, nullptr));  // the old context
  v = segment();
  ASSERT_EQ(v.comms.size(), 3u);  // the segment was reopened: rings 0, 1 old, 2 new
  EXPECT_EQ(v.comms[2].bad_handles, 1u);
  // Old Coll and GroupApi handles stopped, the old context: counted on the segment, which kept
  // its counters across the reload.
  EXPECT_EQ(v.info.events_bad_handle, 3u + 3u);
  pl_->finalize(ctx2);
}

TEST_F(PluginTest, GarbageHandleValuesNeverCrash) {
  load();
  void* ctx = pl_->init(kHash, 2, 0);
  OpSpec op;
  op.nch = 2;
  CollHandles h = nccl_single_coll(*pl_, ctx, op);
  void* kch = pl_->start(ctx, d_kernel_ch(0, gpu_now(), h.coll));
  uint64_t opv = reinterpret_cast<uintptr_t>(h.coll);
  uint64_t chv = reinterpret_cast<uintptr_t>(kch);
  std::vector<void*> garbage = {
      reinterpret_cast<void*>(0x1),
      reinterpret_cast<void*>(0xdeadbeefull),
      reinterpret_cast<void*>(~0ull),
      reinterpret_cast<void*>(opv | (0xfull << 44)),   // our salt, no such type
      reinterpret_cast<void*>(opv ^ (0x40ull << 36)),  // Op naming ring 64 (of 32)
      reinterpret_cast<void*>(chv ^ 0x12345ull),       // KernelCh of a record never made
      reinterpret_cast<void*>(uintptr_t(&garbage)),    // a real address
  };
  for (void* g : garbage) {
    pl_->stop(g);
    pl_->state(g, abi::kStateGroupEndApiStart, nullptr);
    abi::StateArgs a{};
    a.kernelCh.pTimer = 1;
    pl_->state(g, abi::kStateKernelChStop, &a);
    pl_->start(ctx, d_kernel_ch(1, gpu_now(), g));
    pl_->start(ctx, d_coll(0, "AllReduce", nullptr, nullptr, 1, 0, "ncclFloat32", 1, "RING", "LL", g, nullptr, 0));
    pl_->start(g, d_kernel_launch(nullptr, nullptr));  // as a context
  }
  SegmentView v = segment();
  // Five values are not handles of this load (0x1, 0xdeadbeef, ~0, a type that does not exist,
  // a real address): stop, both states and the use as a context count on the segment (4 each),
  // as parents of KernelCh and Coll on the communicator (2 each). The Op naming ring 64: its
  // stop is a Coll stop (nothing to do), the two states are unknown for an Op, KernelCh finds no
  // communicator 64 (segment), Coll and context count once each. The altered KernelCh: stop and
  // KernelChStop find no record (orphans), GroupEndApiStart is unknown for it, it is a bad
  // parent twice (communicator) and a bad context once (segment).
  EXPECT_EQ(v.info.events_bad_handle, 5u * 4u + 2u + 1u);
  EXPECT_EQ(v.info.events_unknown, 2u + 1u);
  EXPECT_EQ(v.comms[0].kernelch_orphans, 2u);
  EXPECT_EQ(v.comms[0].bad_handles, 5u * 2u + 1u + 2u);
  EXPECT_EQ(v.records[0].size(), 1u + 7u);
  for (size_t i = 1; i < v.records[0].size(); ++i) { EXPECT_EQ(v.records[0][i].flags, uint32_t(shm::kFlagNoApi)); }
  // The real operation is untouched by all of it.
  EXPECT_EQ(v.records[0][0].ch_started, 1);
  EXPECT_EQ(v.records[0][0].ch_stopped, 0);
  EXPECT_EQ(v.records[0][0].state, uint32_t(shm::kStateRunning));
  pl_->finalize(ctx);
}

TEST_F(PluginTest, UnknownEventTypesAndStatesAreCounted) {
  load();
  void* ctx = pl_->init(kHash, 2, 0);
  abi::DescrV5 weird{};
  weird.type = 1ull << 20;
  void* w1 = pl_->start(ctx, weird);
  EXPECT_NE(w1, nullptr);
  pl_->stop(w1);
  weird.type = 0;
  pl_->start(ctx, weird);
  weird.type = abi::kEvColl | abi::kEvP2p;  // two bits: not a type
  pl_->start(ctx, weird);
  OpSpec op;
  op.nch = 1;
  CollHandles h = nccl_single_coll(*pl_, ctx, op);
  void* k = pl_->start(ctx, d_kernel_ch(0, gpu_now(), h.coll));
  abi::StateArgs a{};
  pl_->state(k, 99, &a);
  pl_->state(k, abi::kStateGroupStartApiStop, nullptr);
  pl_->state(h.group_api, 5, &a);  // a deprecated ProxyOp state on a GroupApi handle
  pl_->state(h.coll, abi::kStateKernelChStop, &a);
  SegmentView v = segment();
  EXPECT_EQ(v.info.events_unknown, 7u);
  EXPECT_EQ(v.records[0][0].state, uint32_t(shm::kStateRunning));
  EXPECT_EQ(count_logged("unknown event type or state"), 1);
  pl_->finalize(ctx);
}

TEST_F(PluginTest, NullStringsAndNullStateArgs) {
  load();
  void* ctx = pl_->init(kHash, 4, 0);
  void* ga = pl_->start(ctx, d_group_api(false, 1));
  pl_->state(ga, abi::kStateGroupStartApiStop, nullptr);
  void* ca = pl_->start(ctx, d_coll_api(nullptr, 10, nullptr, 0, nullptr, false, ga));
  pl_->stop(ca);
  pl_->state(ga, abi::kStateGroupEndApiStart, nullptr);
  void* kl = pl_->start(ctx, d_kernel_launch(nullptr, ga));
  pl_->stop(kl);
  void* g = pl_->start(ctx, d_group());
  void* c1 = pl_->start(ctx, d_coll(3, nullptr, nullptr, nullptr, 10, 0, nullptr, 1, nullptr, nullptr, ca, g, 0));
  // NCCL prints ncclUint8 as "Unknown" (docs/nccl-notes.md §2.5).
  void* c2 =
      pl_->start(ctx, d_coll(4, "AllReduce", nullptr, nullptr, 10, 0, "Unknown", 1, "RING", "SIMPLE", nullptr, g, 0));
  void* p1 = pl_->start(ctx, d_p2p(nullptr, nullptr, nullptr, 7, 1, 1, nullptr, g, 0));
  pl_->stop(c1);
  pl_->stop(c2);
  pl_->stop(p1);
  pl_->stop(g);
  pl_->stop(ga);
  void* k = pl_->start(ctx, d_kernel_ch(0, gpu_now(), c2));
  pl_->state(k, abi::kStateKernelChStop, nullptr);  // args NULL
  pl_->stop(k);
  SegmentView v = segment();
  ASSERT_EQ(v.records[0].size(), 3u);  // all three readable: the reader validated them
  const RecordSnapshot& r1 = v.records[0][0];
  EXPECT_EQ(r1.kind, shm::kKindUnmatched);  // no function name: not matchable, never guessed
  EXPECT_EQ(r1.func, shm::kFuncUnknown);
  EXPECT_EQ(r1.datatype, shm::kTypeUnknown);
  EXPECT_EQ(r1.api_datatype, shm::kTypeUnknown);
  EXPECT_EQ(r1.algo, shm::kAlgoUnknown);
  EXPECT_EQ(r1.proto, shm::kProtoUnknown);
  EXPECT_EQ(r1.flags, uint32_t(shm::kFlagUnmatched));
  EXPECT_EQ(r1.key, 0u);
  EXPECT_EQ(r1.bytes, 0u);
  EXPECT_EQ(r1.api_count, 10u);
  const RecordSnapshot& r2 = v.records[0][1];
  EXPECT_EQ(r2.kind, shm::kKindColl);
  EXPECT_EQ(r2.datatype, shm::kTypeUnknown);
  EXPECT_EQ(r2.state, uint32_t(shm::kStateComplete));
  EXPECT_EQ(r2.gpu_end_ns, 0);  // no stop time given
  const RecordSnapshot& r3 = v.records[0][2];
  EXPECT_EQ(r3.kind, shm::kKindUnmatched);
  EXPECT_EQ(r3.key, 1u);
  EXPECT_EQ(r3.flags, uint32_t(shm::kFlagUnmatched | shm::kFlagNoApi));
  pl_->finalize(ctx);
}

TEST_F(PluginTest, FullRingOverwritesOldestAndCountsNothingLost) {
  env_.set("SCOUT_RING_SLOTS", "20");  // rounded up to 32
  load();
  void* ctx = pl_->init(kHash, 2, 0);
  for (uint64_t k = 0; k < 100; ++k) {
    OpSpec op;
    op.seq = k;
    op.nch = 2;
    CollHandles h = nccl_single_coll(*pl_, ctx, op);
    run_kernel_ch(*pl_, ctx, h.coll, 2, gpu_now(), gpu_now() + 1);
  }
  SegmentView v = segment();
  EXPECT_EQ(v.info.ring_capacity, 32u);
  EXPECT_EQ(v.comms[0].head, 100u);
  ASSERT_EQ(v.records[0].size(), 32u);
  EXPECT_EQ(v.records[0].front().key, 68u);
  EXPECT_EQ(v.records[0].back().key, 99u);
  EXPECT_EQ(v.comms[0].overwritten_live, 0u);  // every overwritten op had completed
  EXPECT_EQ(v.comms[0].n_coll, 100u);
  std::string err;
  auto r = shm::SegmentReader::open(segment_files(dir_.path())[0], &err);
  ASSERT_TRUE(r) << err;
  shm::RecordSnapshot s;
  EXPECT_EQ(r->read(0, 0, &s), shm::ReadStatus::kOverwritten);
  pl_->finalize(ctx);
}

TEST_F(PluginTest, UnusableShmDirLeavesTheJobRunning) {
  std::string missing = dir_.path() + "/no/such/dir";
  env_.set("SCOUT_SHM_DIR", missing);
  load();
  int mask = 0;
  void* ctx = pl_->init(kHash, 2, 0, "c", 1, &mask);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(mask, 0);  // nothing is recorded, so no events are asked for
  OpSpec op;
  CollHandles h = nccl_single_coll(*pl_, ctx, op);
  run_kernel_ch(*pl_, ctx, h.coll, 4, gpu_now(), gpu_now() + 1);
  EXPECT_TRUE(logged("WARN PROFILE scout: cannot create the shared-memory segment"));
  EXPECT_TRUE(logged(missing));
  EXPECT_TRUE(logged("No such file or directory"));
  // A second communicator: the failure is not repeated in the log.
  void* ctx2 = pl_->init(kHash + 1, 2, 0);
  EXPECT_EQ(ctx2, nullptr);
  EXPECT_EQ(count_logged("cannot create the shared-memory segment"), 1);

  // A regular file where the directory should be.
  std::string file = dir_.path() + "/plainfile";
  std::ofstream(file) << "x";
  env_.set("SCOUT_SHM_DIR", file);
  EXPECT_EQ(pl_->init(kHash + 2, 2, 0), nullptr);
  EXPECT_EQ(pl_->bad_results(), 0);
  // Once the directory is usable, the next communicator init records.
  env_.set("SCOUT_SHM_DIR", dir_.path());
  void* ctx3 = pl_->init(kHash + 3, 2, 0, "c", 1, &mask);
  EXPECT_NE(ctx3, nullptr);
  EXPECT_EQ(mask, 0xE5E);  // with ProxyOp|ProxyStep kept (SCOUT_PROXY_PROGRESS=1)
  pl_->finalize(ctx3);
}

TEST_F(PluginTest, BadScoutValuesAreReportedOnceAndDefaultsUsed) {
  env_.set("SCOUT_RING_SLOTS", "lots");
  env_.set("SCOUT_MAX_COMMS", "999");
  env_.set("RANK", "minus-one");
  env_.set("OMPI_COMM_WORLD_RANK", "6");
  load();
  void* ctx = pl_->init(kHash, 2, 0);
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(logged("WARN PROFILE scout: SCOUT_RING_SLOTS=\"lots\" ignored"));
  EXPECT_TRUE(logged("WARN PROFILE scout: SCOUT_MAX_COMMS=\"999\" ignored"));
  EXPECT_TRUE(logged("WARN PROFILE scout: RANK=\"minus-one\" ignored"));
  EXPECT_TRUE(logged("INFO PROFILE scout: recording to"));
  EXPECT_TRUE(logged("SCOUT_RING_SLOTS=2048"));  // the effective configuration, once
  SegmentView v = segment();
  EXPECT_EQ(v.info.ring_capacity, 2048u);
  EXPECT_EQ(v.info.max_comms, 32u);
  EXPECT_EQ(v.info.global_rank, 6);  // the next variable in the list
  pl_->finalize(ctx);
}

TEST_F(PluginTest, CommunicatorsBeyondMaxCommsAreCountedNotRecorded) {
  env_.set("SCOUT_MAX_COMMS", "4");
  load();
  std::vector<void*> ctxs;
  for (int i = 0; i < 6; ++i) ctxs.push_back(pl_->init(kHash + i, 2, 0));
  for (int i = 0; i < 4; ++i) EXPECT_NE(ctxs[i], nullptr);
  EXPECT_EQ(ctxs[4], nullptr);
  EXPECT_EQ(ctxs[5], nullptr);
  OpSpec op;
  nccl_single_coll(*pl_, ctxs[5], op);  // events of the unrecorded communicator: ignored
  SegmentView v = segment();
  EXPECT_EQ(v.comms.size(), 4u);
  EXPECT_EQ(v.info.comms_dropped, 2u);
  EXPECT_EQ(v.info.events_bad_handle, 0u);
  EXPECT_EQ(count_logged("more than SCOUT_MAX_COMMS=4"), 1);
  for (void* c : ctxs) {
    if (c) pl_->finalize(c);
  }
}

// Runs `n` collectives with completion on `ctx` from the calling thread.
void run_ops(Plugin& pl, void* ctx, int n) {
  for (int k = 0; k < n; ++k) {
    OpSpec op;
    op.seq = uint64_t(k);
    op.nch = 2;
    CollHandles h = nccl_single_coll(pl, ctx, op);
    run_kernel_ch(pl, ctx, h.coll, 2, gpu_now(), gpu_now() + 1);
  }
}

// NCCL dlcloses the plugin after the last communicator and may dlopen it again (docs/nccl-notes.md §1.2).
TEST_F(PluginTest, DlcloseAndReopenCyclesWithThreadsGone) {
  for (int cycle = 0; cycle < 5; ++cycle) {
    load();
    void* a = pl_->init(kHash + 2 * cycle, 2, 0);
    void* b = pl_->init(kHash + 2 * cycle + 1, 2, 1);
    std::thread ta([&] { run_ops(*pl_, a, 30); });
    std::thread tb([&] { run_ops(*pl_, b, 30); });
    ta.join();
    tb.join();
    pl_->finalize(a);
    pl_->finalize(b);
    TearDown();
    // Nothing of the library remains mapped.
    EXPECT_EQ(::dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr) << cycle;
  }
  SegmentView v = segment();  // one segment, reopened by each load
  ASSERT_EQ(v.comms.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(v.comms[i].comm_hash, kHash + i);
    EXPECT_EQ(v.comms[i].state, uint32_t(shm::kCommFinalized));
    ASSERT_EQ(v.records[i].size(), 30u);
    for (const auto& r : v.records[i]) EXPECT_EQ(r.state, uint32_t(shm::kStateComplete));
  }
  EXPECT_EQ(v.info.events_bad_handle, 0u);
  EXPECT_GT(v.info.closed_ns, 0);
}

TEST_F(PluginTest, ConcurrentInitOfEightCommunicatorsOnEightThreads) {
  load();
  constexpr int kThreads = 8;
  std::atomic<int> ready{0};
  std::vector<void*> ctxs(kThreads);
  std::vector<std::thread> ts;
  int mask = 0;  // NCCL's one process-wide mask (docs/nccl-notes.md §0.6)
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {}
      ctxs[t] = pl_->init(kHash * 3 + t, kThreads, t, nullptr, 1, &mask);
      // Plus ProxyOp | ProxyStep once another thread's API call opened a ProxyStep window.
      EXPECT_EQ(__atomic_load_n(&mask, __ATOMIC_RELAXED) & ~int(abi::kEvProxyOp | abi::kEvProxyStep), 0xE46);
      run_ops(*pl_, ctxs[t], 20);
      ready.fetch_add(1);
      while (ready.load() < 2 * kThreads) {}
      pl_->finalize(ctxs[t]);
    });
  }
  for (auto& t : ts) t.join();
  SegmentView v = segment();
  ASSERT_EQ(v.comms.size(), size_t(kThreads));
  std::set<uint64_t> hashes;
  for (int i = 0; i < kThreads; ++i) {
    hashes.insert(v.comms[i].comm_hash);
    EXPECT_EQ(v.comms[i].rank, int(v.comms[i].comm_hash - kHash * 3));
    ASSERT_EQ(v.records[i].size(), 20u);
    for (const auto& r : v.records[i]) EXPECT_EQ(r.state, uint32_t(shm::kStateComplete));
    EXPECT_EQ(v.comms[i].bad_handles, 0u);
  }
  EXPECT_EQ(hashes.size(), size_t(kThreads));
  EXPECT_EQ(v.info.events_bad_handle, 0u);
  EXPECT_GT(v.info.closed_ns, 0);
  EXPECT_EQ(pl_->bad_results(), 0);
}

}  // namespace
}  // namespace scout::testing
