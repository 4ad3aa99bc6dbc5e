// The callbacks NCCL makes for one collective outside a group on a blocking communicator, and a
// do-nothing plugin table, shared by the plugin cost benchmarks (plugin_cost_bench,
// gemm_capture_bench). Header-only: each benchmark is one binary.
#pragma once

#include <time.h>
#include <unistd.h>

#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::bench {

constexpr int kChannels = 4;

// NCCL's one process-wide activation mask: every init gets its address and a plugin may write it
// at any time (docs/nccl-notes.md §0.6), so it must outlive every communicator.
inline int g_nccl_mask = 0;

// ---- the do-nothing plugin
inline int g_sink = 0;
__attribute__((noinline)) inline abi::Result nop_init(void** ctx, uint64_t, int* mask, const char*, int, int, int,
                                                      abi::Logger) {
  *ctx = &g_sink;
  *mask = 0xE46;
  return abi::kSuccess;
}
__attribute__((noinline)) inline abi::Result nop_start(void*, void** h, abi::DescrV5* d) {
  *h = d;
  return abi::kSuccess;
}
__attribute__((noinline)) inline abi::Result nop_stop(void* h) {
  asm volatile("" ::"r"(h));
  return abi::kSuccess;
}
__attribute__((noinline)) inline abi::Result nop_record(void* h, int, abi::StateArgs*) {
  asm volatile("" ::"r"(h));
  return abi::kSuccess;
}
__attribute__((noinline)) inline abi::Result nop_fini(void*) { return abi::kSuccess; }
inline abi::ProfilerV5 g_nop = {"nop", nop_init, nop_start, nop_stop, nop_record, nop_fini};

inline uint64_t fake_gpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec) - 5000;
}

// Descriptors of one communicator's collective, built once (NCCL builds them on its stack).
struct CommDescr {
  void* ctx = nullptr;
  abi::DescrV5 group_api{}, coll_api{}, launch{}, group{}, coll{}, kch[kChannels]{};
  abi::DescrV5 proxy_send[kChannels]{}, proxy_recv[kChannels]{}, proxy_step{};
  uint64_t seq = 0;
};

inline void build(CommDescr& c) {
  c.group_api.type = abi::kEvGroupApi;
  c.group_api.groupApi.groupDepth = 1;
  c.coll_api.type = abi::kEvCollApi;
  c.coll_api.collApi = {"AllReduce", 1 << 20, "ncclBfloat16", 0, (void*)0x5000, false};
  c.launch.type = abi::kEvKernelLaunch;
  c.launch.kernelLaunch.stream = (void*)0x5000;
  c.group.type = abi::kEvGroup;
  c.coll.type = abi::kEvColl;
  c.coll.coll.func = "AllReduce";
  c.coll.coll.sendBuff = (void*)0x7000;
  c.coll.coll.recvBuff = (void*)0x8000;
  c.coll.coll.count = 1 << 20;
  c.coll.coll.datatype = "ncclBfloat16";
  c.coll.coll.nChannels = kChannels;
  c.coll.coll.nWarps = 16;
  c.coll.coll.algo = "RING";
  c.coll.coll.proto = "SIMPLE";
  for (int i = 0; i < kChannels; ++i) {
    c.kch[i].type = abi::kEvKernelCh;
    c.kch[i].kernelCh.channelId = uint8_t(i);
    for (abi::DescrV5* d : {&c.proxy_send[i], &c.proxy_recv[i]}) {
      d->type = abi::kEvProxyOp;
      d->proxyOp.pid = ::getpid();
      d->proxyOp.channelId = uint8_t(i);
      d->proxyOp.nSteps = 2;
      d->proxyOp.chunkSize = 1 << 19;
    }
    c.proxy_send[i].proxyOp.peer = 1;  // the ring's next rank
    c.proxy_send[i].proxyOp.isSend = 1;
    c.proxy_recv[i].proxyOp.peer = 7;  // and its previous one
  }
  c.proxy_step.type = abi::kEvProxyStep;
}

// NCCL's ProxyOp/ProxyStep events of one collective's network transfers when the activation
// mask asks for them (docs/nccl-notes.md §3.4): per channel a send op and a receive op of
// `steps` steps each, with every state NCCL records, on the calling thread (the proxy thread).
inline void proxy_events(const abi::ProfilerV5* t, CommDescr& c, void* op, int steps) {
  for (int i = 0; i < kChannels; ++i) {
    void* so;
    void* ro;
    c.proxy_send[i].parentObj = op;
    c.proxy_recv[i].parentObj = op;
    t->startEvent(c.ctx, &so, &c.proxy_send[i]);
    t->startEvent(c.ctx, &ro, &c.proxy_recv[i]);
    t->recordEventState(so, abi::kStateProxyOpInProgress, nullptr);
    t->recordEventState(ro, abi::kStateProxyOpInProgress, nullptr);
    for (int s = 0; s < steps; ++s) {
      abi::StateArgs a;
      a.proxyStep.transSize = 1 << 19;
      void* ss;
      void* rs;
      c.proxy_step.parentObj = so;
      c.proxy_step.proxyStep.step = s;
      t->startEvent(c.ctx, &ss, &c.proxy_step);
      t->recordEventState(ss, abi::kStateProxyStepSendGPUWait, nullptr);
      t->recordEventState(ss, abi::kStateProxyStepSendPeerWait, nullptr);
      t->recordEventState(ss, abi::kStateProxyStepSendWait, &a);
      c.proxy_step.parentObj = ro;
      t->startEvent(c.ctx, &rs, &c.proxy_step);
      t->recordEventState(rs, abi::kStateProxyStepRecvWait, nullptr);
      t->stopEvent(ss);
      t->recordEventState(rs, abi::kStateProxyStepRecvFlushWait, &a);
      t->recordEventState(rs, abi::kStateProxyStepRecvGPUWait, nullptr);
      t->stopEvent(rs);
    }
    t->stopEvent(so);
    t->stopEvent(ro);
  }
}

// Every callback of one collective, in NCCL's order; with `proxy_steps` > 0 also the ProxyOp and
// ProxyStep events of its network transfers while the kernel runs (proxy_events).
inline void one_collective(const abi::ProfilerV5* t, CommDescr& c, uint64_t gpu_t, int proxy_steps = 0) {
  void* ga;
  t->startEvent(c.ctx, &ga, &c.group_api);
  t->recordEventState(ga, abi::kStateGroupStartApiStop, nullptr);
  c.coll_api.parentObj = ga;
  void* ca;
  t->startEvent(c.ctx, &ca, &c.coll_api);
  t->stopEvent(ca);
  t->recordEventState(ga, abi::kStateGroupEndApiStart, nullptr);
  c.launch.parentObj = ga;
  void* kl;
  t->startEvent(c.ctx, &kl, &c.launch);
  t->stopEvent(kl);
  void* g;
  t->startEvent(c.ctx, &g, &c.group);
  c.coll.parentObj = ca;
  c.coll.coll.parentGroup = g;
  c.coll.coll.seqNumber = c.seq++;
  void* op;
  t->startEvent(c.ctx, &op, &c.coll);
  t->stopEvent(op);
  t->stopEvent(g);
  t->stopEvent(ga);
  void* kh[kChannels];
  for (int i = 0; i < kChannels; ++i) {
    c.kch[i].parentObj = op;
    c.kch[i].kernelCh.pTimer = gpu_t + uint64_t(i);
    t->startEvent(c.ctx, &kh[i], &c.kch[i]);
  }
  if (proxy_steps > 0) proxy_events(t, c, op, proxy_steps);
  for (int i = 0; i < kChannels; ++i) {
    abi::StateArgs a;
    a.kernelCh.pTimer = gpu_t + 20000 + uint64_t(i);
    t->recordEventState(kh[i], abi::kStateKernelChStop, &a);
    t->stopEvent(kh[i]);
  }
}

}  // namespace scout::bench
