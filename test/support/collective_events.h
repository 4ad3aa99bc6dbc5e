// The callbacks NCCL makes for one collective outside a group on a blocking communicator, and a
// do-nothing plugin table, shared by the plugin cost benchmarks (plugin_cost_bench,
// gemm_capture_bench). Header-only: each benchmark is one binary.
#pragma once

#include <time.h>

#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::bench {

constexpr int kChannels = 4;

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
  }
}

// Every callback of one collective, in NCCL's order.
inline void one_collective(const abi::ProfilerV5* t, CommDescr& c, uint64_t gpu_t) {
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
  for (int i = 0; i < kChannels; ++i) {
    abi::StateArgs a;
    a.kernelCh.pTimer = gpu_t + 20000 + uint64_t(i);
    t->recordEventState(kh[i], abi::kStateKernelChStop, &a);
    t->stopEvent(kh[i]);
  }
}

}  // namespace scout::bench
