// ProxyStep windows and per-peer step timing (plugin/core/proxy_window.h, proxy_steps.h;
// docs/net-plugin.md, "ProxyStep timing"): the built plugin driven with NCCL's ProxyOp/ProxyStep
// call sequences (docs/nccl-notes.md §3.4, §6.7) on a proxy thread, the mask and the segment's
// link table checked value by value.
#include <chrono>
#include <thread>
#include <vector>

#include "common/link_reader.h"
#include "common/progress_reader.h"
#include "common/segment_control.h"
#include "common/clock.h"
#include "test/plugin/plugin_fixture.h"

namespace scout::testing {
namespace {

constexpr uint64_t kHash = 0x5EED5EEDull;
constexpr int kProxyBits = int(abi::kEvProxyOp | abi::kEvProxyStep);
constexpr size_t kTrans = 1 << 19;

class ProxyTimingTest : public PluginTest {
 protected:
  // Loads the plugin (with the SCOUT_* variables set so far) and inits the 4-rank communicator
  // "dp" (kHash, rank 0, 2 channels) with NCCL's event mask at `mask`.
  void* load_dp(int* mask) {
    load();
    return pl_->init(kHash, 4, 0, "dp", 2, mask);
  }
  // A reader of this process's one segment (the test fails when there is none or it cannot be read).
  std::unique_ptr<shm::SegmentReader> open_segment() {
    std::vector<std::string> f = segment_files(dir_.path());
    EXPECT_EQ(f.size(), 1u);
    std::string err;
    auto rd = shm::SegmentReader::open(f.at(0), &err);
    EXPECT_TRUE(rd) << err;
    return rd;
  }
  // The segment's link table header and published entries.
  shm::LinkTableInfo info(std::vector<shm::LinkSnapshot>* links = nullptr) {
    auto rd = open_segment();
    uint32_t cap = 0;
    const shm::LinkTableHeader* t = shm::link_table(*rd, &cap);
    EXPECT_NE(t, nullptr);
    if (t == nullptr) return {};
    if (links != nullptr) shm::read_links(t, cap, links);
    return shm::read_link_info(t, cap);
  }
  // One API call (a collective outside a group): the point where windows switch.
  void* api_call(void* ctx, uint64_t seq = 0) {
    OpSpec op;
    op.seq = seq;
    return nccl_single_coll(*pl_, ctx, op).coll;
  }
  abi::DescrV5 proxy_op(void* op, int peer, bool send) {
    abi::DescrV5 d = d_proxy_op(::getpid(), op, peer, 0);
    d.proxyOp.isSend = send ? 1 : 0;
    return d;
  }
  // A send step as NCCL's net transport reports it, taking about `hold_us` on the network.
  void send_step(void* ctx, void* op, int hold_us) {
    abi::DescrV5 d{};
    d.type = abi::kEvProxyStep;
    d.parentObj = op;
    void* s = pl_->start(ctx, d);
    pl_->state(s, abi::kStateProxyStepSendGPUWait, nullptr);
    pl_->state(s, abi::kStateProxyStepSendPeerWait, nullptr);
    abi::StateArgs a{};
    a.proxyStep.transSize = kTrans;
    pl_->state(s, abi::kStateProxyStepSendWait, &a);
    if (hold_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(hold_us));
    pl_->stop(s);
  }
  void recv_step(void* ctx, void* op, int hold_us) {
    abi::DescrV5 d{};
    d.type = abi::kEvProxyStep;
    d.parentObj = op;
    void* s = pl_->start(ctx, d);
    pl_->state(s, abi::kStateProxyStepRecvWait, nullptr);
    if (hold_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(hold_us));
    abi::StateArgs a{};
    a.proxyStep.transSize = kTrans / 2;
    pl_->state(s, abi::kStateProxyStepRecvFlushWait, &a);
    pl_->state(s, abi::kStateProxyStepRecvGPUWait, nullptr);
    pl_->stop(s);
  }
};

// The window adds exactly the bits that were missing and takes exactly those away again; the next
// one opens window / budget after the previous one opened.
TEST_F(ProxyTimingTest, WindowsAddAndRemoveOnlyTheirBits) {
  env_.set("SCOUT_PROXY_PROGRESS", "0");  // the bits only in windows
  env_.set("SCOUT_PROXY_WINDOW_MS", "200");
  env_.set("SCOUT_PROXY_BUDGET", "0.25");  // a window every 800 ms
  load();
  int mask = 0;  // NCCL's one mask: every init gets its address (docs/nccl-notes.md §0.6)
  void* ctx = pl_->init(kHash, 4, 0, "w", 2, &mask);
  EXPECT_EQ(mask, 0xE46);  // no window before the first API call
  EXPECT_EQ(info().proxy_state, uint32_t(shm::kProxyWaiting));
  auto t0 = std::chrono::steady_clock::now();
  api_call(ctx, 0);
  EXPECT_EQ(mask, 0xE46 | kProxyBits);
  shm::LinkTableInfo i = info();
  EXPECT_EQ(i.proxy_state, uint32_t(shm::kProxyOpen));
  EXPECT_EQ(i.proxy_windows, 1u);
  EXPECT_EQ(i.proxy_window_end_ns, 0);
  // A second communicator's init while the window is open keeps the window's bits.
  void* ctx2 = pl_->init(kHash + 1, 2, 1, "w2", 2, &mask);
  EXPECT_EQ(mask, 0xE46 | kProxyBits);
  mask |= int(abi::kEvNetPlugin);  // another party's bit
  std::this_thread::sleep_until(t0 + std::chrono::milliseconds(300));
  api_call(ctx, 1);
  EXPECT_EQ(mask, 0xE46 | int(abi::kEvNetPlugin));
  i = info();
  EXPECT_EQ(i.proxy_state, uint32_t(shm::kProxyWaiting));
  EXPECT_GE(i.proxy_window_ns, 200000000u);
  EXPECT_EQ(i.proxy_window_end_ns - i.proxy_window_start_ns, int64_t(i.proxy_window_ns));
  // ProxyOp was already on (someone asked for it): the next window adds ProxyStep only and
  // leaves ProxyOp on when it closes.
  mask |= int(abi::kEvProxyOp);
  std::this_thread::sleep_until(t0 + std::chrono::milliseconds(500));
  api_call(ctx, 2);
  EXPECT_EQ(info().proxy_windows, 1u);  // not yet: 800 ms after the first opened
  std::this_thread::sleep_until(t0 + std::chrono::milliseconds(900));
  api_call(ctx, 3);
  EXPECT_EQ(info().proxy_windows, 2u);
  EXPECT_EQ(mask, 0xE46 | int(abi::kEvNetPlugin) | kProxyBits);
  std::this_thread::sleep_until(t0 + std::chrono::milliseconds(1200));
  api_call(ctx, 4);
  EXPECT_EQ(mask, 0xE46 | int(abi::kEvNetPlugin) | int(abi::kEvProxyOp));
  // The last finalize closes an open window (none now) and leaves the mask alone.
  pl_->finalize(ctx2);
  pl_->finalize(ctx);
  EXPECT_EQ(mask, 0xE46 | int(abi::kEvNetPlugin) | int(abi::kEvProxyOp));
  EXPECT_EQ(pl_->bad_results(), 0);
}

// The last finalize closes an open window: the mask is NCCL's again.
TEST_F(ProxyTimingTest, LastFinalizeClosesAnOpenWindow) {
  env_.set("SCOUT_PROXY_WINDOW_MS", "600000");
  load();
  int mask = 0;
  void* ctx = pl_->init(kHash, 4, 0, "w", 2, &mask);
  api_call(ctx);
  EXPECT_EQ(mask, 0xE46 | kProxyBits);
  pl_->finalize(ctx);
  EXPECT_EQ(mask, 0xE46);
  shm::LinkTableInfo i = info();
  EXPECT_EQ(i.proxy_state, uint32_t(shm::kProxyWaiting));
  EXPECT_GT(i.proxy_window_end_ns, i.proxy_window_start_ns);
}

// Steps of this process's ProxyOps become one link entry per (peer, direction), source proxy:
// sends timed SendWait -> stop with SendWait's transSize, receives RecvWait -> RecvFlushWait with
// RecvFlushWait's.
TEST_F(ProxyTimingTest, StepsAreTimedPerPeerAndDirection) {
  env_.set("SCOUT_PROXY_WINDOW_MS", "600000");
  load();
  int mask = 0;
  void* ctx = pl_->init(kHash, 8, 2, "dp", 2, &mask);
  void* coll = api_call(ctx);
  ASSERT_EQ(mask & kProxyBits, kProxyBits);
  int64_t before = shm::wall_ns();
  std::thread proxy([&] {
    run_kernel_ch(*pl_, ctx, coll, 4, gpu_now(), gpu_now() + 1);
    void* so = pl_->start(ctx, proxy_op(coll, 3, true));
    void* ro = pl_->start(ctx, proxy_op(coll, 1, false));
    void* so2 = pl_->start(ctx, proxy_op(coll, 3, true));  // another channel, same peer: same entry
    pl_->state(so, abi::kStateProxyOpInProgress, nullptr);
    for (int s = 0; s < 4; ++s) {
      send_step(ctx, so, 2000);
      recv_step(ctx, ro, 1000);
      send_step(ctx, so2, 0);
    }
    pl_->stop(so);
    pl_->stop(ro);
    pl_->stop(so2);
  });
  proxy.join();
  int64_t after = shm::wall_ns();
  std::vector<shm::LinkSnapshot> ls;
  shm::LinkTableInfo i = info(&ls);
  EXPECT_EQ(i.proxy_steps, 12u);
  EXPECT_EQ(i.proxy_untimed, 0u);
  EXPECT_EQ(i.claimed, 2u);
  ASSERT_EQ(ls.size(), 2u);
  const shm::LinkSnapshot& snd = ls[0];
  const shm::LinkSnapshot& rcv = ls[1];
  for (const shm::LinkSnapshot* e : {&snd, &rcv}) {
    EXPECT_EQ(e->source, shm::kLinkSourceProxy);
    EXPECT_EQ(e->state, uint32_t(shm::kLinkOpen));
    EXPECT_EQ(e->comm_hash, kHash);
    EXPECT_EQ(e->comm_nranks, 8);
    EXPECT_EQ(e->comm_rank, 2);
    EXPECT_EQ(e->peer_global_rank, -1);
    EXPECT_EQ(e->conn_id, 0u);
    EXPECT_GE(e->open_ns, before);
    EXPECT_LE(e->last_ns, after);
    uint64_t in_hist = 0;
    for (uint32_t h : e->hist) in_hist += h;
    EXPECT_EQ(in_hist, e->transfers);
  }
  EXPECT_EQ(snd.dir, shm::kLinkSend);
  EXPECT_EQ(snd.peer_rank, 3);
  EXPECT_EQ(snd.transfers, 8u);
  EXPECT_EQ(snd.posted, 8u);
  EXPECT_EQ(snd.bytes, 8u * kTrans);
  EXPECT_GE(snd.busy_ns, 4u * 2000000u);
  EXPECT_GE(snd.max_ns, 2000000u);
  EXPECT_EQ(rcv.dir, shm::kLinkRecv);
  EXPECT_EQ(rcv.peer_rank, 1);
  EXPECT_EQ(rcv.transfers, 4u);
  EXPECT_EQ(rcv.posted, 4u);
  EXPECT_EQ(rcv.bytes, 4u * kTrans / 2);
  EXPECT_GE(rcv.busy_ns, 4u * 1000000u);
  SegmentView v = segment();
  EXPECT_EQ(v.comms[0].ignored_events, 0u);
  EXPECT_EQ(v.comms[0].bad_handles, 0u);
  EXPECT_EQ(v.info.events_unknown, 0u);
  pl_->finalize(ctx);
  EXPECT_EQ(pl_->bad_results(), 0);
}

// Events outside a window record nothing: ProxyOps before the first window are ignored (and
// their steps); a window closes early after SCOUT_PROXY_MAX_STEPS steps, restoring the mask, and
// the later steps of its ops are counted as untimed.
TEST_F(ProxyTimingTest, NothingIsRecordedOutsideAWindow) {
  env_.set("SCOUT_PROXY_PROGRESS", "0");  // the bits only in windows
  env_.set("SCOUT_PROXY_WINDOW_MS", "600000");
  env_.set("SCOUT_PROXY_MAX_STEPS", "3");
  int mask = 0;
  void* ctx = load_dp(&mask);
  std::thread early([&] {
    void* op = pl_->start(ctx, proxy_op(nullptr, 1, true));  // no API call yet: no window
    send_step(ctx, op, 0);
    pl_->stop(op);
  });
  early.join();
  shm::LinkTableInfo i = info();
  EXPECT_EQ(i.claimed, 0u);
  EXPECT_EQ(i.proxy_steps, 0u);
  EXPECT_EQ(i.proxy_untimed, 0u);
  EXPECT_EQ(segment().comms[0].ignored_events, 2u);  // the op and its step

  void* coll = api_call(ctx);
  ASSERT_EQ(mask, 0xE46 | kProxyBits);
  std::thread proxy([&] {
    void* op = pl_->start(ctx, proxy_op(coll, 1, true));
    for (int s = 0; s < 5; ++s) send_step(ctx, op, 0);
    pl_->stop(op);
    void* late = pl_->start(ctx, proxy_op(coll, 2, true));  // the window is closed
    send_step(ctx, late, 0);
    pl_->stop(late);
  });
  proxy.join();
  EXPECT_EQ(mask, 0xE46);
  std::vector<shm::LinkSnapshot> ls;
  i = info(&ls);
  EXPECT_EQ(i.proxy_state, uint32_t(shm::kProxyWaiting));
  EXPECT_EQ(i.proxy_windows, 1u);
  EXPECT_EQ(i.proxy_steps, 3u);
  EXPECT_EQ(i.proxy_untimed, 2u);
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(ls[0].peer_rank, 1);
  EXPECT_EQ(ls[0].transfers, 3u);
  EXPECT_EQ(ls[0].posted, 3u);
  EXPECT_EQ(segment().comms[0].ignored_events, 4u);
  pl_->finalize(ctx);
}

// A send step stopped without SendWait, a receive without RecvFlushWait: not timed, counted. A
// stale step handle (its slot reused) is ignored. PXN: ProxySteps under another process's
// ProxyOp (whose context and parent are garbage here) record nothing and touch nothing.
TEST_F(ProxyTimingTest, MissingStatesAndForeignOpsAreCountedNotTimed) {
  env_.set("SCOUT_PROXY_WINDOW_MS", "600000");
  int mask = 0;
  void* ctx = load_dp(&mask);
  void* garbage_ctx = reinterpret_cast<void*>(0x10);
  void* garbage_parent = reinterpret_cast<void*>(0xfffffffffffff000ull);
  std::thread proxy([&] {
    // As in PluginTest.ForeignPxnProxyOpsAreCountedNeverTouched: this thread's KernelCh events
    // name the communicator a foreign op is counted on.
    void* coll = api_call(ctx);
    run_kernel_ch(*pl_, ctx, coll, 4, gpu_now(), gpu_now() + 1);
    void* so = pl_->start(ctx, proxy_op(coll, 1, true));
    void* ro = pl_->start(ctx, proxy_op(coll, 1, false));
    abi::DescrV5 d{};
    d.type = abi::kEvProxyStep;
    d.parentObj = so;
    void* s = pl_->start(ctx, d);
    pl_->stop(s);  // no SendWait
    d.parentObj = ro;
    s = pl_->start(ctx, d);
    pl_->state(s, abi::kStateProxyStepRecvWait, nullptr);
    pl_->stop(s);  // no RecvFlushWait
    pl_->stop(s);  // stale now
    pl_->state(s, abi::kStateProxyStepRecvFlushWait, nullptr);
    void* foreign = pl_->start(garbage_ctx, d_proxy_op(::getpid() + 1, garbage_parent, 2, 0));
    d.parentObj = foreign;
    s = pl_->start(garbage_ctx, d);
    pl_->state(s, abi::kStateProxyStepSendWait, nullptr);
    pl_->stop(s);
    pl_->stop(foreign);
  });
  proxy.join();
  std::vector<shm::LinkSnapshot> ls;
  shm::LinkTableInfo i = info(&ls);
  EXPECT_EQ(i.proxy_steps, 0u);
  EXPECT_EQ(i.proxy_untimed, 2u);
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].transfers, 0u);
  EXPECT_EQ(ls[0].posted, 1u);
  EXPECT_EQ(ls[1].transfers, 0u);
  SegmentView v = segment();
  EXPECT_EQ(v.comms[0].foreign_proxy, 1u);
  EXPECT_EQ(v.comms[0].bad_handles, 0u);
  EXPECT_EQ(v.info.events_bad_handle, 0u);
  pl_->finalize(ctx);
}

// SCOUT_PROXY_TIMING=0: the mask is never touched and ProxyOps of this process stay ignored.
TEST_F(ProxyTimingTest, OffLeavesTheMaskAlone) {
  env_.set("SCOUT_PROXY_TIMING", "0");
  int mask = 0;
  void* ctx = load_dp(&mask);
  void* coll = api_call(ctx);
  EXPECT_EQ(mask, 0xE46);
  std::thread proxy([&] {
    void* op = pl_->start(ctx, proxy_op(coll, 1, true));
    send_step(ctx, op, 0);
    pl_->stop(op);
  });
  proxy.join();
  EXPECT_EQ(segment().comms[0].ignored_events, 2u);
  pl_->finalize(ctx);
}

// ---- Tracing a stuck collective (plugin/core/progress.h; docs/plugin.md, "Tracing a stuck collective")

class TraceTest : public ProxyTimingTest {
 protected:
  // The segment's progress table header and published entries.
  shm::ProgressTableInfo progress(std::vector<shm::ProgressSnapshot>* entries = nullptr) {
    auto rd = open_segment();
    uint32_t cap = 0;
    const shm::ProgressTableHeader* t = shm::progress_table(*rd, &cap);
    EXPECT_NE(t, nullptr);
    if (t == nullptr) return {};
    if (entries != nullptr) shm::read_progress(t, cap, entries);
    return shm::read_progress_info(t, cap);
  }
  // The observer's request: trace communicator (hash, nranks) for `ms` more milliseconds.
  uint64_t request(uint64_t hash, int nranks, int64_t ms) {
    auto rd = open_segment();
    std::string err;
    uint64_t seq = shm::request_trace(*rd, {hash, nranks, shm::wall_ns() + ms * 1000000}, &err);
    EXPECT_NE(seq, 0u) << err;
    return seq;
  }
};

// Outside any window, a request for one communicator keeps ProxyOp | ProxyStep in the mask from
// the next API call until its time, and that communicator's ProxyOps take progress entries that
// follow their steps: a send handed to the network that never completes, a receive handed to the
// GPU that is never consumed. Then the bits go again; the trace is over.
TEST_F(TraceTest, ARequestKeepsTheBitsUntilItsTimeAndRecordsWhereTheStepsAre) {
  env_.set("SCOUT_PROXY_PROGRESS", "0");  // the bits only in windows and traces
  env_.set("SCOUT_PROXY_WINDOW_MS", "20");
  env_.set("SCOUT_PROXY_BUDGET", "0.001");  // the next window 20 s after the first
  int mask = 0;
  void* ctx = load_dp(&mask);
  void* other = pl_->init(kHash + 1, 2, 0, "tp", 1, &mask);
  api_call(ctx, 0);  // opens the first window
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  api_call(ctx, 1);  // closes it
  EXPECT_EQ(mask, 0xE46);
  EXPECT_EQ(progress().trace_state, uint32_t(shm::kTraceNone));
  const uint64_t seq = request(kHash, 4, 400);
  EXPECT_EQ(seq, 1u);
  EXPECT_EQ(mask, 0xE46);  // acted on at the next API call, not before
  void* coll = api_call(ctx, 2);
  EXPECT_EQ(mask, 0xE46 | kProxyBits);
  shm::ProgressTableInfo pi = progress();
  EXPECT_EQ(pi.trace_state, uint32_t(shm::kTraceActive));
  EXPECT_EQ(pi.ack_seq, 1u);
  EXPECT_EQ(pi.request_seq, 1u);
  EXPECT_EQ(pi.trace_comm_hash, kHash);
  EXPECT_EQ(pi.requests, 1u);
  EXPECT_GT(pi.ack_ns, 0);
  EXPECT_EQ(info().proxy_state, uint32_t(shm::kProxyWaiting));  // no window: nothing is timed
  std::thread proxy([&] {
    // The traced communicator: a send on channel 3 to rank 1 in the network that never completes,
    // a receive on channel 3 from rank 3 received and handed to the GPU, never consumed.
    abi::DescrV5 d = proxy_op(coll, 1, true);
    d.proxyOp.channelId = 3;
    d.proxyOp.nSteps = 4;
    void* send = pl_->start(ctx, d);
    abi::DescrV5 st{};
    st.type = abi::kEvProxyStep;
    st.parentObj = send;
    void* s0 = pl_->start(ctx, st);
    pl_->state(s0, abi::kStateProxyStepSendGPUWait, nullptr);
    pl_->state(s0, abi::kStateProxyStepSendPeerWait, nullptr);
    abi::StateArgs a{};
    a.proxyStep.transSize = kTrans;
    pl_->state(s0, abi::kStateProxyStepSendWait, &a);
    void* s1 = pl_->start(ctx, st);
    pl_->state(s1, abi::kStateProxyStepSendGPUWait, nullptr);
    d = proxy_op(coll, 3, false);
    d.proxyOp.channelId = 3;
    d.proxyOp.nSteps = 4;
    void* recv = pl_->start(ctx, d);
    st.parentObj = recv;
    void* r0 = pl_->start(ctx, st);
    pl_->state(r0, abi::kStateProxyStepRecvWait, nullptr);
    pl_->state(r0, abi::kStateProxyStepRecvFlushWait, &a);
    pl_->state(r0, abi::kStateProxyStepRecvGPUWait, nullptr);
    // Another communicator is not traced: ignored.
    void* o = pl_->start(other, proxy_op(coll, 1, true));
    pl_->stop(o);
  });
  proxy.join();
  std::vector<shm::ProgressSnapshot> es;
  pi = progress(&es);
  EXPECT_EQ(pi.claimed, 2u);
  EXPECT_EQ(pi.traced_ops, 2u);
  ASSERT_EQ(es.size(), 2u);
  const shm::ProgressSnapshot& snd = es[0];
  EXPECT_EQ(snd.dir, uint8_t(shm::kProgressSend));
  EXPECT_EQ(snd.comm_hash, kHash);
  EXPECT_EQ(snd.comm_nranks, 4);
  EXPECT_EQ(snd.comm_rank, 0);
  EXPECT_EQ(snd.peer, 1);
  EXPECT_EQ(snd.channel, 3);
  EXPECT_EQ(snd.op_gen, 1u);
  EXPECT_EQ(snd.op_key, 2u);  // the collective's seqNumber
  EXPECT_EQ(snd.op_func, uint32_t(shm::kFuncAllReduce));
  EXPECT_EQ(snd.n_steps, 4u);
  EXPECT_EQ(snd.posted, 2u);
  EXPECT_EQ(snd.gpu_wait, 2u);
  EXPECT_EQ(snd.peer_wait, 0u);  // not timed: SendPeerWait (which may repeat) is not counted
  EXPECT_EQ(snd.in_net, 1u);
  EXPECT_EQ(snd.net_done, 0u);  // in the network, never completed
  EXPECT_FALSE(snd.op_stopped);
  const shm::ProgressSnapshot& rcv = es[1];
  EXPECT_EQ(rcv.dir, uint8_t(shm::kProgressRecv));
  EXPECT_EQ(rcv.peer, 3);
  EXPECT_EQ(rcv.posted, 1u);
  EXPECT_EQ(rcv.in_net, 1u);
  EXPECT_EQ(rcv.net_done, 1u);
  EXPECT_EQ(rcv.gpu_wait, 1u);
  EXPECT_EQ(rcv.consumed, 0u);  // handed to the GPU, never consumed
  EXPECT_GE(rcv.last_ns, rcv.start_ns);
  EXPECT_EQ(segment().comms[1].ignored_events, 1u);
  EXPECT_EQ(info().proxy_steps, 0u);
  // The request's time passes: the next API call takes the bits away.
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  api_call(ctx, 3);
  EXPECT_EQ(mask, 0xE46);
  EXPECT_EQ(progress().trace_state, uint32_t(shm::kTraceExpired));
  pl_->finalize(other);
  pl_->finalize(ctx);
  EXPECT_EQ(pl_->bad_results(), 0);
}

// A new ProxyOp on the same (channel, peer, direction) starts the entry over; a stopped one says so.
TEST_F(TraceTest, EachEntryFollowsItsLatestProxyOp) {
  env_.set("SCOUT_PROXY_WINDOW_MS", "600000");  // one window for the whole test
  int mask = 0;
  void* ctx = load_dp(&mask);
  void* c0 = api_call(ctx, 0);
  void* c1 = api_call(ctx, 1);
  std::thread proxy([&] {
    void* op = pl_->start(ctx, proxy_op(c0, 1, true));
    send_step(ctx, op, 0);
    pl_->stop(op);
    op = pl_->start(ctx, proxy_op(c1, 1, true));
    abi::DescrV5 st{};
    st.type = abi::kEvProxyStep;
    st.parentObj = op;
    void* s = pl_->start(ctx, st);
    pl_->state(s, abi::kStateProxyStepSendGPUWait, nullptr);
  });
  proxy.join();
  std::vector<shm::ProgressSnapshot> es;
  progress(&es);
  ASSERT_EQ(es.size(), 1u);
  EXPECT_EQ(es[0].op_gen, 2u);
  EXPECT_EQ(es[0].op_key, 1u);
  EXPECT_EQ(es[0].posted, 1u);
  EXPECT_EQ(es[0].gpu_wait, 1u);
  EXPECT_EQ(es[0].in_net, 0u);
  EXPECT_EQ(es[0].net_done, 0u);
  EXPECT_FALSE(es[0].op_stopped);
  EXPECT_EQ(info().proxy_steps, 1u);  // the first op's step, timed in the window
  pl_->finalize(ctx);
}

// A request naming no communicator of the process is answered so, and changes nothing.
TEST_F(TraceTest, ARequestForAnotherCommunicatorIsAnsweredNoComm) {
  env_.set("SCOUT_PROXY_PROGRESS", "0");  // the bits only in windows and traces
  env_.set("SCOUT_PROXY_WINDOW_MS", "20");
  env_.set("SCOUT_PROXY_BUDGET", "0.001");
  int mask = 0;
  void* ctx = load_dp(&mask);
  api_call(ctx, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  api_call(ctx, 1);
  request(kHash, 8, 1000);  // same hash, another size
  api_call(ctx, 2);
  EXPECT_EQ(mask, 0xE46);
  shm::ProgressTableInfo pi = progress();
  EXPECT_EQ(pi.trace_state, uint32_t(shm::kTraceNoComm));
  EXPECT_EQ(pi.ack_seq, 1u);
  EXPECT_EQ(pi.trace_comm_hash, 0u);
  pl_->finalize(ctx);
}

// ---- Progress at all times (SCOUT_PROXY_PROGRESS=1, the default; proxy_window.h, proxy_steps.h)

// At the defaults the bits are in the mask from the first init, window or not, and every ProxyOp
// of the process takes its progress entry; steps outside a window are counted in it (each state
// as NCCL records it) without a step slot, a link entry or a timing.
TEST_F(TraceTest, KeptBitsCountEveryStepOutsideWindows) {
  env_.set("SCOUT_PROXY_WINDOW_MS", "20");
  env_.set("SCOUT_PROXY_BUDGET", "0.001");  // the next window 20 s after the first
  load();
  int mask = 0;
  void* ctx = pl_->init(kHash, 4, 0, "dp", 2, &mask);
  EXPECT_EQ(mask, 0xE46 | kProxyBits);  // before any window
  api_call(ctx, 0);                     // opens the first window
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  void* coll = api_call(ctx, 1);  // closes it: the bits stay
  EXPECT_EQ(mask, 0xE46 | kProxyBits);
  EXPECT_EQ(info().proxy_state, uint32_t(shm::kProxyWaiting));
  std::thread proxy([&] {
    abi::DescrV5 d = proxy_op(coll, 1, true);
    d.proxyOp.channelId = 2;
    d.proxyOp.nSteps = 3;
    void* send = pl_->start(ctx, d);
    send_step(ctx, send, 0);  // completed
    abi::DescrV5 st{};
    st.type = abi::kEvProxyStep;
    st.parentObj = send;
    void* s1 = pl_->start(ctx, st);  // in the network, never completes
    pl_->state(s1, abi::kStateProxyStepSendGPUWait, nullptr);
    pl_->state(s1, abi::kStateProxyStepSendPeerWait, nullptr);
    pl_->state(s1, abi::kStateProxyStepSendPeerWait, nullptr);
    abi::StateArgs a{};
    a.proxyStep.transSize = kTrans;
    pl_->state(s1, abi::kStateProxyStepSendWait, &a);
    void* s2 = pl_->start(ctx, st);  // waits for the GPU's data
    pl_->state(s2, abi::kStateProxyStepSendGPUWait, nullptr);
    d = proxy_op(coll, 3, false);
    d.proxyOp.channelId = 2;
    d.proxyOp.nSteps = 3;
    void* recv = pl_->start(ctx, d);
    recv_step(ctx, recv, 0);  // received and consumed
    st.parentObj = recv;
    void* r1 = pl_->start(ctx, st);  // received, handed to the GPU, never consumed
    pl_->state(r1, abi::kStateProxyStepRecvWait, nullptr);
    pl_->state(r1, abi::kStateProxyStepRecvFlushWait, &a);
    pl_->state(r1, abi::kStateProxyStepRecvGPUWait, nullptr);
  });
  proxy.join();
  std::vector<shm::ProgressSnapshot> es;
  shm::ProgressTableInfo pi = progress(&es);
  EXPECT_EQ(pi.trace_state, uint32_t(shm::kTraceNone));  // nobody asked
  EXPECT_EQ(pi.traced_ops, 2u);
  ASSERT_EQ(es.size(), 2u);
  const shm::ProgressSnapshot& snd = es[0];
  EXPECT_EQ(snd.dir, uint8_t(shm::kProgressSend));
  EXPECT_EQ(snd.peer, 1);
  EXPECT_EQ(snd.channel, 2);
  EXPECT_EQ(snd.op_key, 1u);
  EXPECT_EQ(snd.n_steps, 3u);
  EXPECT_EQ(snd.posted, 3u);
  EXPECT_EQ(snd.gpu_wait, 3u);
  EXPECT_EQ(snd.peer_wait, 0u);  // not timed: not counted
  EXPECT_EQ(snd.in_net, 2u);
  EXPECT_EQ(snd.net_done, 1u);
  EXPECT_FALSE(snd.op_stopped);
  const shm::ProgressSnapshot& rcv = es[1];
  EXPECT_EQ(rcv.dir, uint8_t(shm::kProgressRecv));
  EXPECT_EQ(rcv.peer, 3);
  EXPECT_EQ(rcv.posted, 2u);
  EXPECT_EQ(rcv.in_net, 2u);
  EXPECT_EQ(rcv.net_done, 2u);
  EXPECT_EQ(rcv.gpu_wait, 2u);
  EXPECT_EQ(rcv.consumed, 1u);
  EXPECT_GE(rcv.last_ns, rcv.start_ns);
  shm::LinkTableInfo li = info();
  EXPECT_EQ(li.claimed, 0u);  // no link entry: nothing timed
  EXPECT_EQ(li.proxy_steps, 0u);
  EXPECT_EQ(li.proxy_untimed, 0u);
  EXPECT_EQ(segment().comms[0].ignored_events, 0u);
  pl_->finalize(ctx);
  EXPECT_EQ(mask, 0xE46);  // the last finalize takes the kept bits away
  EXPECT_EQ(pl_->bad_results(), 0);
}

// NCCL starts a ProxyOp when its proxy thread appends it but runs one connection's ops in order:
// an op appended while the entry's op runs (posted steps, not stopped) waits, so the entry stays
// with a stuck collective; it takes the entry when that op stops, or at its own first step. An op
// that never posts a step does not hold the entry.
TEST_F(TraceTest, LaterOpsWaitBehindTheRunningOpOfTheirTuple) {
  env_.set("SCOUT_PROXY_WINDOW_MS", "1");
  env_.set("SCOUT_PROXY_BUDGET", "0.0001");  // one 1 ms window, then none for 10 s
  load();
  int mask = 0;
  void* ctx = pl_->init(kHash, 4, 0, "dp", 2, &mask);
  void* c0 = api_call(ctx, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  void* c1 = api_call(ctx, 1);
  void* c2 = api_call(ctx, 2);
  void* c3 = api_call(ctx, 3);
  void* c4 = api_call(ctx, 4);
  abi::DescrV5 st{};
  st.type = abi::kEvProxyStep;
  auto entry = [&] {
    std::vector<shm::ProgressSnapshot> es;
    progress(&es);
    EXPECT_EQ(es.size(), 1u);
    return es.empty() ? shm::ProgressSnapshot{} : es[0];
  };
  std::thread proxy([&] {
    void* op0 = pl_->start(ctx, proxy_op(c0, 1, true));  // posts nothing, never stops
    void* op1 = pl_->start(ctx, proxy_op(c1, 1, true));  // takes the entry from op0
    st.parentObj = op1;
    void* s = pl_->start(ctx, st);
    pl_->state(s, abi::kStateProxyStepSendGPUWait, nullptr);
    void* op2 = pl_->start(ctx, proxy_op(c2, 1, true));  // queued behind op1
    void* op3 = pl_->start(ctx, proxy_op(c3, 1, true));  // queued behind op2
    shm::ProgressSnapshot e = entry();
    EXPECT_EQ(e.op_key, 1u);
    EXPECT_EQ(e.op_gen, 2u);
    EXPECT_EQ(e.posted, 1u);
    EXPECT_EQ(e.gpu_wait, 1u);
    EXPECT_EQ(pl_->bad_results(), 0);
    pl_->stop(s);
    pl_->stop(op1);  // op2 takes the entry
    e = entry();
    EXPECT_EQ(e.op_key, 2u);
    EXPECT_EQ(e.op_gen, 3u);
    EXPECT_EQ(e.posted, 0u);
    EXPECT_FALSE(e.op_stopped);
    st.parentObj = op3;  // op3's first step: op2 is over (it never posted; NCCL ran it before op3)
    void* s3 = pl_->start(ctx, st);
    pl_->state(s3, abi::kStateProxyStepSendGPUWait, nullptr);
    e = entry();
    EXPECT_EQ(e.op_key, 3u);
    EXPECT_EQ(e.op_gen, 4u);
    EXPECT_EQ(e.posted, 1u);
    st.parentObj = op2;  // a late step of op2: stale, counted nowhere
    void* late = pl_->start(ctx, st);
    pl_->state(late, abi::kStateProxyStepSendGPUWait, nullptr);
    pl_->stop(late);
    pl_->stop(op0);  // op0's stop: not the entry's op, changes nothing
    void* op4 = pl_->start(ctx, proxy_op(c4, 1, true));  // queued behind op3
    (void)op4;
  });
  proxy.join();
  shm::ProgressSnapshot e = entry();
  EXPECT_EQ(e.op_key, 3u);
  EXPECT_EQ(e.op_gen, 4u);
  EXPECT_EQ(e.posted, 1u);
  EXPECT_EQ(e.gpu_wait, 1u);
  EXPECT_EQ(e.net_done, 0u);
  EXPECT_FALSE(e.op_stopped);
  EXPECT_EQ(progress().traced_ops, 4u);  // op0, op1, op2, op3 took the entry in turn
  pl_->finalize(ctx);
  EXPECT_EQ(pl_->bad_results(), 0);
}

}  // namespace
}  // namespace scout::testing
