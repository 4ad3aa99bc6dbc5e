// scout-sim's NCCL call sequences, checked against an in-process recording plugin: the exact
// order, threads, parent links, descriptors and seqNumbers NCCL 2.28.9 produces (docs/nccl-notes.md §1.4,
// 2.2, 3.1-3.3, 3.6, 3.10), and the bytes the emulated kernels deliver.
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "test/sim/data.h"
#include "test/sim/inproc_job.h"
#include "test/sim/recording_plugin.h"
#include "test/sim/tuning.h"

namespace {

using namespace scout::sim;
namespace abi = scout::abi;

pid_t gettid_() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

SimOptions opts(int ranks, int tp = 1, int pp = 1, int ep = 1) {
  SimOptions o;
  o.ranks = ranks;
  o.tp = tp;
  o.pp = pp;
  o.ep = ep;
  o.bytes = 64 * 1024;
  o.steps = 1;
  return o;
}

const char* type_name(uint64_t t) {
  switch (t) {
    case abi::kEvGroup: return "Group";
    case abi::kEvColl: return "Coll";
    case abi::kEvP2p: return "P2p";
    case abi::kEvKernelCh: return "KernelCh";
    case abi::kEvGroupApi: return "GroupApi";
    case abi::kEvCollApi: return "CollApi";
    case abi::kEvP2pApi: return "P2pApi";
    case abi::kEvKernelLaunch: return "KernelLaunch";
    case abi::kEvProxyOp: return "ProxyOp";
    case abi::kEvProxyStep: return "ProxyStep";
    default: return "?";
  }
}

const char* state_name(int s) {
  switch (s) {
    case abi::kStateGroupStartApiStop: return "GroupStartApiStop";
    case abi::kStateGroupEndApiStart: return "GroupEndApiStart";
    case abi::kStateKernelChStop: return "KernelChStop";
    case abi::kStateProxyOpInProgress: return "InProgress";
    case abi::kStateProxyStepSendGPUWait: return "SendGPUWait";
    case abi::kStateProxyStepSendPeerWait: return "SendPeerWait";
    case abi::kStateProxyStepSendWait: return "SendWait";
    case abi::kStateProxyStepRecvWait: return "RecvWait";
    case abi::kStateProxyStepRecvFlushWait: return "RecvFlushWait";
    case abi::kStateProxyStepRecvGPUWait: return "RecvGPUWait";
    default: return "?";
  }
}

// The calls made on thread `tid` after the inits, as "start X" / "stop X" / "record X S" lines,
// plus a map from handle to its start call.
struct Trace {
  std::vector<std::string> lines;
  std::vector<RecordedCall> starts;  // in order
  std::map<void*, RecordedCall> by_handle;
};

Trace trace_of(const std::vector<RecordedCall>& calls, pid_t tid) {
  Trace t;
  std::map<void*, RecordedCall> all;
  for (const RecordedCall& c : calls)
    if (c.kind == RecordedCall::kStart) all[c.handle] = c;
  for (const RecordedCall& c : calls) {
    if (c.tid != tid) continue;
    switch (c.kind) {
      case RecordedCall::kStart:
        t.lines.push_back(std::string("start ") + type_name(c.descr.type));
        t.starts.push_back(c);
        break;
      case RecordedCall::kStop: t.lines.push_back(std::string("stop ") + type_name(all[c.handle].descr.type)); break;
      case RecordedCall::kRecord:
        t.lines.push_back(std::string("record ") + type_name(all[c.handle].descr.type) + " " + state_name(c.state));
        break;
      default: break;
    }
  }
  t.by_handle = all;
  return t;
}

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<std::string> repeat(const std::vector<std::string>& v, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.insert(out.end(), v.begin(), v.end());
  return out;
}

// KernelCh calls of a proxy thread for tasks with the given channel counts, in order.
std::vector<std::string> kernelch_lines(std::initializer_list<int> channels_per_task) {
  std::vector<std::string> out;
  for (int n : channels_per_task) {
    out.insert(out.end(), n, "start KernelCh");
    std::vector<std::string> stops = repeat({"record KernelCh KernelChStop", "stop KernelCh"}, n);
    out.insert(out.end(), stops.begin(), stops.end());
  }
  return out;
}

struct RankThreads {
  std::mutex mu;
  std::map<int, pid_t> main_tid;
  void set(int g) {
    std::lock_guard<std::mutex> lock(mu);
    main_tid[g] = gettid_();
  }
};

// The proxy thread of the communicator whose context is `ctx`: the thread of its KernelCh calls.
pid_t proxy_tid(const std::vector<RecordedCall>& calls, void* ctx) {
  for (const RecordedCall& c : calls)
    if (c.kind == RecordedCall::kStart && c.descr.type == abi::kEvKernelCh && c.context == ctx) return c.tid;
  return 0;
}

class CallSequence : public ::testing::Test {
 protected:
  void SetUp() override { CallRecorder::reset(0xFFF); }
  ProfilerDriver prof_{CallRecorder::table()};
};

TEST_F(CallSequence, SingleAllReduceOutsideAGroup) {
  SimOptions o = opts(2);  // world + dp0 = {0, 1}
  InProcJob job(o, &prof_);
  const uint64_t count = 16384;  // 64 KiB of float32
  RankThreads th;
  std::vector<std::vector<float>> in(2), out(2);
  std::vector<void*> ctx(2);
  job.run([&](RankJob& r, int g) {
    th.set(g);
    Communicator* dp = r.comm(CommKind::kDp);
    ctx[g] = dp->context();
    in[g].resize(count);
    fill_input(in[g].data(), count, 7, g, 0);
    out[g] = in[g];
    r.api().all_reduce(out[g].data(), out[g].data(), count, *dp);  // in place, as DDP does
    r.api().synchronize();
  });
  auto calls = CallRecorder::calls();
  // Both ranks' dp inits: same commHash, name, sizes; one mask pointer per rank for all inits.
  const RecordedCall* i0 = CallRecorder::init_of(calls, ctx[0]);
  const RecordedCall* i1 = CallRecorder::init_of(calls, ctx[1]);
  ASSERT_TRUE(i0 && i1);
  EXPECT_EQ(i0->comm_name, "dp0");
  EXPECT_EQ(i0->comm_hash, i1->comm_hash);
  EXPECT_EQ(i0->nranks, 2);
  EXPECT_EQ(i0->n_nodes, 1);
  EXPECT_EQ(i0->rank, 0);
  EXPECT_EQ(i1->rank, 1);
  int inits = 0;
  for (const RecordedCall& c : calls)
    if (c.kind == RecordedCall::kInit && c.tid == i0->tid) {
      ++inits;
      EXPECT_EQ(c.mask_ptr, i0->mask_ptr);  // the process-wide ncclProfilerEventMask
    }
  EXPECT_EQ(inits, 2);  // world and dp0

  const Tuning tu = tune_coll(Func::kAllReduce, count * 4, 1);
  for (int g = 0; g < 2; ++g) {
    SCOPED_TRACE("rank " + std::to_string(g));
    Trace t = trace_of(calls, th.main_tid[g]);
    EXPECT_EQ(t.lines, (std::vector<std::string>{"start GroupApi", "record GroupApi GroupStartApiStop", "start CollApi",
                                                 "stop CollApi", "record GroupApi GroupEndApiStart",
                                                 "start KernelLaunch", "stop KernelLaunch", "start Group", "start Coll",
                                                 "stop Coll", "stop Group", "stop GroupApi"}));
    ASSERT_EQ(t.starts.size(), 5u);
    const RecordedCall& gapi = t.starts[0];
    const RecordedCall& capi = t.starts[1];
    const RecordedCall& kl = t.starts[2];
    const RecordedCall& grp = t.starts[3];
    const RecordedCall& coll = t.starts[4];
    for (const RecordedCall* c : {&gapi, &capi, &kl, &grp, &coll}) EXPECT_EQ(c->context, ctx[g]);
    EXPECT_EQ(gapi.descr.parentObj, nullptr);
    EXPECT_EQ(gapi.descr.rank, g);
    EXPECT_EQ(gapi.descr.groupApi.groupDepth, 1);
    EXPECT_FALSE(gapi.descr.groupApi.graphCaptured);
    EXPECT_EQ(capi.descr.parentObj, gapi.handle);
    EXPECT_STREQ(capi.descr.collApi.func, "AllReduce");
    EXPECT_EQ(capi.descr.collApi.count, count);
    EXPECT_STREQ(capi.descr.collApi.datatype, "ncclFloat32");
    EXPECT_NE(capi.descr.collApi.stream, nullptr);
    EXPECT_EQ(kl.descr.parentObj, gapi.handle);
    EXPECT_EQ(kl.descr.kernelLaunch.stream, capi.descr.collApi.stream);
    EXPECT_EQ(grp.descr.parentObj, nullptr);
    EXPECT_EQ(grp.descr.rank, 0);  // NCCL does not fill rank for Group
    EXPECT_EQ(coll.descr.parentObj, capi.handle);
    EXPECT_EQ(coll.descr.coll.parentGroup, grp.handle);
    EXPECT_EQ(coll.descr.rank, g);
    EXPECT_EQ(coll.descr.coll.seqNumber, 0u);
    EXPECT_STREQ(coll.descr.coll.func, "AllReduce");
    EXPECT_EQ(coll.descr.coll.count, count);
    EXPECT_STREQ(coll.descr.coll.datatype, "ncclFloat32");
    EXPECT_EQ(coll.descr.coll.sendBuff, out[g].data());
    EXPECT_EQ(coll.descr.coll.recvBuff, out[g].data());
    EXPECT_EQ(coll.descr.coll.nChannels, tu.n_channels);
    EXPECT_EQ(coll.descr.coll.nWarps, tu.n_warps);
    EXPECT_STREQ(coll.descr.coll.algo, tu.algo);
    EXPECT_STREQ(coll.descr.coll.proto, tu.proto);

    // KernelCh from the communicator's proxy thread, parent = Coll, channels 0..n-1.
    pid_t ptid = proxy_tid(calls, ctx[g]);
    ASSERT_NE(ptid, 0);
    EXPECT_NE(ptid, th.main_tid[g]);
    Trace p = trace_of(calls, ptid);
    EXPECT_EQ(p.lines, kernelch_lines({tu.n_channels}));
    uint64_t start_timer = 0;
    for (size_t i = 0; i < p.starts.size(); ++i) {
      EXPECT_EQ(p.starts[i].descr.parentObj, coll.handle);
      EXPECT_EQ(p.starts[i].descr.kernelCh.channelId, i);
      EXPECT_EQ(p.starts[i].descr.rank, 0);
      EXPECT_EQ(p.starts[i].context, ctx[g]);
      start_timer = p.starts[i].descr.kernelCh.pTimer;
      EXPECT_GT(start_timer, 1700000000ull * 1000000000ull);  // CLOCK_REALTIME ns
    }
    for (const RecordedCall& c : calls)
      if (c.kind == RecordedCall::kRecord && c.tid == ptid) {
        EXPECT_FALSE(c.args_null);
        EXPECT_GE(c.p_timer, start_timer);
      }
  }
  // Real bytes: every rank holds in0 + in1, computed in rank order.
  for (uint64_t e = 0; e < count; ++e) {
    float want = 0.0f;
    want += in[0][e];
    want += in[1][e];
    ASSERT_EQ(out[0][e], want) << e;
    ASSERT_EQ(out[1][e], want) << e;
  }
}

TEST_F(CallSequence, UserGroupOfThreeAllReducesAndSeqNumbers) {
  SimOptions o = opts(2);
  InProcJob job(o, &prof_);
  const uint64_t count = 4096;
  RankThreads th;
  std::vector<void*> ctx(2);
  job.run([&](RankJob& r, int g) {
    th.set(g);
    Communicator* dp = r.comm(CommKind::kDp);
    ctx[g] = dp->context();
    std::vector<std::vector<float>> b(4, std::vector<float>(count, 1.0f));
    r.api().all_reduce(b[3].data(), b[3].data(), count, *dp);  // seq 0, outside the group
    r.api().group_start();
    for (int i = 0; i < 3; ++i) r.api().all_reduce(b[i].data(), b[i].data(), count, *dp);
    r.api().group_end();
    r.api().synchronize();
  });
  auto calls = CallRecorder::calls();
  for (int g = 0; g < 2; ++g) {
    SCOPED_TRACE("rank " + std::to_string(g));
    Trace t = trace_of(calls, th.main_tid[g]);
    std::vector<std::string> single = {"start GroupApi",
                                       "record GroupApi GroupStartApiStop",
                                       "start CollApi",
                                       "stop CollApi",
                                       "record GroupApi GroupEndApiStart",
                                       "start KernelLaunch",
                                       "stop KernelLaunch",
                                       "start Group",
                                       "start Coll",
                                       "stop Coll",
                                       "stop Group",
                                       "stop GroupApi"};
    std::vector<std::string> group =
        concat({{"start GroupApi", "record GroupApi GroupStartApiStop"},
                repeat({"start CollApi", "stop CollApi"}, 3),
                {"record GroupApi GroupEndApiStart", "start KernelLaunch", "stop KernelLaunch", "start Group"},
                repeat({"start Coll"}, 3),
                repeat({"stop Coll"}, 3),
                {"stop Group", "stop GroupApi"}});
    EXPECT_EQ(t.lines, concat({single, group}));
    // The group's GroupApi: depth 2 (user group + the implicit one).
    std::vector<RecordedCall> gapis, colls, capis;
    const RecordedCall* grp = nullptr;
    for (const RecordedCall& c : t.starts) {
      if (c.descr.type == abi::kEvGroupApi) gapis.push_back(c);
      if (c.descr.type == abi::kEvColl) colls.push_back(c);
      if (c.descr.type == abi::kEvCollApi) capis.push_back(c);
      if (c.descr.type == abi::kEvGroup) grp = &c;
    }
    ASSERT_EQ(gapis.size(), 2u);
    EXPECT_EQ(gapis[0].descr.groupApi.groupDepth, 1);
    EXPECT_EQ(gapis[1].descr.groupApi.groupDepth, 2);
    ASSERT_EQ(colls.size(), 4u);
    ASSERT_EQ(capis.size(), 4u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(colls[i].descr.coll.seqNumber, static_cast<uint64_t>(i));
      EXPECT_EQ(colls[i].descr.parentObj, capis[i].handle);
    }
    for (int i = 1; i < 4; ++i) {
      EXPECT_EQ(capis[i].descr.parentObj, gapis[1].handle);
      EXPECT_EQ(colls[i].descr.coll.parentGroup, grp->handle);
    }
    // The proxy runs the group's three tasks in order.
    Trace p = trace_of(calls, proxy_tid(calls, ctx[g]));
    int n = tune_coll(Func::kAllReduce, count * 4, 1).n_channels;
    EXPECT_EQ(p.lines, kernelch_lines({n, n, n, n}));
    for (size_t i = 0; i < p.starts.size(); ++i) EXPECT_EQ(p.starts[i].descr.parentObj, colls[i / n].handle);
  }
}

TEST_F(CallSequence, SendRecvPairAndGroupedExchange) {
  SimOptions o = opts(2, 1, 2);  // world + pp0 = {0, 1}
  InProcJob job(o, &prof_);
  const uint64_t count = 8192;  // c / 2 of 64 KiB
  RankThreads th;
  std::vector<void*> ctx(2);
  std::vector<std::vector<float>> sent(2, std::vector<float>(count)), got(2, std::vector<float>(count, 0.0f)),
      got2(2, std::vector<float>(count, 0.0f));
  job.run([&](RankJob& r, int g) {
    th.set(g);
    Communicator* pp = r.comm(CommKind::kPp);
    ctx[g] = pp->context();
    fill_input(sent[g].data(), count, 3, g, 0);
    if (g == 0)
      r.api().send(sent[0].data(), count, 1, *pp);
    else
      r.api().recv(got[1].data(), count, 0, *pp);
    // batch_isend_irecv: both directions in one group
    r.api().group_start();
    r.api().send(sent[g].data(), count, 1 - g, *pp);
    r.api().recv(got2[g].data(), count, 1 - g, *pp);
    r.api().group_end();
    r.api().synchronize();
  });
  EXPECT_EQ(got[1], sent[0]);
  EXPECT_EQ(got2[1], sent[0]);
  EXPECT_EQ(got2[0], sent[1]);
  auto calls = CallRecorder::calls();
  const std::vector<std::string> single = {"start GroupApi",
                                           "record GroupApi GroupStartApiStop",
                                           "start P2pApi",
                                           "stop P2pApi",
                                           "record GroupApi GroupEndApiStart",
                                           "start KernelLaunch",
                                           "stop KernelLaunch",
                                           "start Group",
                                           "start P2p",
                                           "stop P2p",
                                           "stop Group",
                                           "stop GroupApi"};
  const std::vector<std::string> grouped =
      concat({{"start GroupApi", "record GroupApi GroupStartApiStop"},
              repeat({"start P2pApi", "stop P2pApi"}, 2),
              {"record GroupApi GroupEndApiStart", "start KernelLaunch", "stop KernelLaunch", "start Group",
               "start P2p", "start P2p", "stop P2p", "stop P2p", "stop Group", "stop GroupApi"}});
  for (int g = 0; g < 2; ++g) {
    SCOPED_TRACE("rank " + std::to_string(g));
    Trace t = trace_of(calls, th.main_tid[g]);
    EXPECT_EQ(t.lines, concat({single, grouped}));
    std::vector<RecordedCall> p2ps, apis;
    for (const RecordedCall& c : t.starts) {
      if (c.descr.type == abi::kEvP2p) p2ps.push_back(c);
      if (c.descr.type == abi::kEvP2pApi) apis.push_back(c);
    }
    ASSERT_EQ(p2ps.size(), 3u);
    ASSERT_EQ(apis.size(), 3u);
    EXPECT_STREQ(apis[0].descr.p2pApi.func, g == 0 ? "Send" : "Recv");
    EXPECT_EQ(apis[0].descr.p2pApi.count, count);
    EXPECT_STREQ(apis[0].descr.p2pApi.datatype, "ncclFloat32");
    EXPECT_STREQ(p2ps[0].descr.p2p.func, g == 0 ? "Send" : "Recv");
    EXPECT_EQ(p2ps[0].descr.p2p.peer, 1 - g);
    EXPECT_EQ(p2ps[0].descr.p2p.count, count);
    EXPECT_EQ(p2ps[0].descr.parentObj, apis[0].handle);
    EXPECT_EQ(p2ps[0].descr.p2p.buff, g == 0 ? static_cast<void*>(sent[0].data()) : got[1].data());
    // Grouped: schedule order (round 1: send to peer, then receive from it); parents follow.
    EXPECT_STREQ(p2ps[1].descr.p2p.func, "Send");
    EXPECT_STREQ(p2ps[2].descr.p2p.func, "Recv");
    EXPECT_EQ(p2ps[1].descr.parentObj, apis[1].handle);
    EXPECT_EQ(p2ps[2].descr.parentObj, apis[2].handle);
    EXPECT_EQ(p2ps[1].descr.p2p.parentGroup, p2ps[2].descr.p2p.parentGroup);
    Trace p = trace_of(calls, proxy_tid(calls, ctx[g]));
    int nch = tune_p2p(count * 4, 0, 1, 2).n_channels;
    // First plan: one task; second plan: KernelCh starts for both tasks, then their stops.
    EXPECT_EQ(p.lines, concat({kernelch_lines({nch}), repeat({"start KernelCh"}, 2 * nch),
                               repeat({"record KernelCh KernelChStop", "stop KernelCh"}, 2 * nch)}));
    EXPECT_EQ(p.starts[0].descr.parentObj, p2ps[0].handle);
    EXPECT_EQ(p.starts[nch].descr.parentObj, p2ps[1].handle);
    EXPECT_EQ(p.starts[2 * nch].descr.parentObj, p2ps[2].handle);
    // Both ends of a pair use the same channel.
    EXPECT_EQ(p.starts[0].descr.kernelCh.channelId, tune_p2p(count * 4, 0, 1, 2).channel_base);
  }
}

TEST_F(CallSequence, AlltoAllIsLoweredToSendRecvTasks) {
  SimOptions o = opts(2, 1, 1, 2);  // world, dp0, ep0 = {0, 1}
  InProcJob job(o, &prof_);
  const uint64_t count = 1024;
  RankThreads th;
  std::vector<void*> ctx(2);
  std::vector<std::vector<float>> in(2, std::vector<float>(2 * count)), out(2, std::vector<float>(2 * count));
  job.run([&](RankJob& r, int g) {
    th.set(g);
    Communicator* ep = r.comm(CommKind::kEp);
    ctx[g] = ep->context();
    fill_input(in[g].data(), 2 * count, 5, g, 0);
    r.api().all_to_all(in[g].data(), out[g].data(), count, *ep);
    r.api().synchronize();
  });
  for (int g = 0; g < 2; ++g)
    for (int j = 0; j < 2; ++j)
      for (uint64_t e = 0; e < count; ++e) ASSERT_EQ(out[g][j * count + e], in[j][g * count + e]);
  auto calls = CallRecorder::calls();
  for (int g = 0; g < 2; ++g) {
    SCOPED_TRACE("rank " + std::to_string(g));
    Trace t = trace_of(calls, th.main_tid[g]);
    EXPECT_EQ(t.lines,
              concat({{"start GroupApi", "record GroupApi GroupStartApiStop"},
                      repeat({"start P2pApi", "stop P2pApi"}, 4),
                      {"record GroupApi GroupEndApiStart", "start KernelLaunch", "stop KernelLaunch", "start Group"},
                      repeat({"start P2p"}, 4),
                      repeat({"stop P2p"}, 4),
                      {"stop Group", "stop GroupApi"}}));
    std::vector<RecordedCall> apis, p2ps;
    for (const RecordedCall& c : t.starts) {
      if (c.descr.type == abi::kEvP2pApi) apis.push_back(c);
      if (c.descr.type == abi::kEvP2p) p2ps.push_back(c);
      EXPECT_NE(c.descr.type, abi::kEvCollApi);
      EXPECT_NE(c.descr.type, abi::kEvColl);
    }
    ASSERT_EQ(apis.size(), 4u);
    const char* api_funcs[] = {"Send", "Recv", "Send", "Recv"};
    for (int i = 0; i < 4; ++i) {
      EXPECT_STREQ(apis[i].descr.p2pApi.func, api_funcs[i]);
      EXPECT_EQ(apis[i].descr.p2pApi.count, count);
    }
    // Plan order by rounds: delta 0 (self), then delta 1 (the other rank).
    ASSERT_EQ(p2ps.size(), 4u);
    int peers[] = {g, g, 1 - g, 1 - g};
    for (int i = 0; i < 4; ++i) {
      EXPECT_STREQ(p2ps[i].descr.p2p.func, api_funcs[i]);
      EXPECT_EQ(p2ps[i].descr.p2p.peer, peers[i]);
      // parent: the P2pApi of the same (func, peer): API order is Send0, Recv0, Send1, Recv1.
      int api_index = 2 * peers[i] + (i % 2);
      EXPECT_EQ(p2ps[i].descr.parentObj, apis[api_index].handle);
    }
  }
}

// With ProxyOp | ProxyStep in the mask and a communicator over two hosts (ranks 0, 1 on node0,
// 2, 3 on node1), the proxy thread emits the ProxyOp and ProxyStep events of the emulated ring's
// host crossings (docs/scout-sim.md, "Network steps"; docs/nccl-notes.md §3.4): channel 0 crosses
// 1 -> 2 and 3 -> 0, channel 1 crosses 0 -> 3 and 2 -> 1, channel 2 again as channel 0. A 128 KiB
// AllReduce on 3 channels moves 2 * 3/4 * 128 KiB / 3 = 64 KiB per channel: one step.
TEST_F(CallSequence, ProxyEventsOfTheRingsHostCrossings) {
  SimOptions o = opts(4);
  o.nodes = 2;
  InProcJob job(o, &prof_);
  const uint64_t count = 32768;
  std::vector<void*> ctx(4);
  std::vector<std::vector<float>> buf(4, std::vector<float>(count, 1.0f));
  job.run([&](RankJob& r, int g) {
    Communicator* dp = r.comm(CommKind::kDp);
    ctx[g] = dp->context();
    r.api().all_reduce(buf[g].data(), buf[g].data(), count, *dp);
    r.api().synchronize();
  });
  auto calls = CallRecorder::calls();
  const Tuning tu = tune_coll(Func::kAllReduce, count * 4, 2);
  ASSERT_EQ(tu.n_channels, 3);
  ASSERT_STREQ(tu.algo, "RING");
  // Rank 0: receives from 3 on channels 0 and 2, sends to 3 on channel 1.
  Trace p = trace_of(calls, proxy_tid(calls, ctx[0]));
  const std::vector<std::string> recv = {"start ProxyStep", "record ProxyStep RecvWait",
                                         "record ProxyStep RecvFlushWait", "record ProxyStep RecvGPUWait",
                                         "stop ProxyStep"};
  const std::vector<std::string> send = {"start ProxyStep", "record ProxyStep SendGPUWait",
                                         "record ProxyStep SendPeerWait", "record ProxyStep SendWait",
                                         "stop ProxyStep"};
  EXPECT_EQ(p.lines, concat({repeat({"start KernelCh"}, 3), repeat({"start ProxyOp", "record ProxyOp InProgress"}, 3),
                             recv, send, recv, repeat({"stop ProxyOp"}, 3),
                             repeat({"record KernelCh KernelChStop", "stop KernelCh"}, 3)}));
  std::vector<const RecordedCall*> ops, steps;
  for (const RecordedCall& c : p.starts) {
    if (c.descr.type == abi::kEvProxyOp) ops.push_back(&c);
    if (c.descr.type == abi::kEvProxyStep) steps.push_back(&c);
  }
  ASSERT_EQ(ops.size(), 3u);
  ASSERT_EQ(steps.size(), 3u);
  void* coll = p.starts[0].descr.parentObj;  // KernelCh's parent: the Coll handle
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("channel " + std::to_string(i));
    const abi::DescrV5& d = ops[size_t(i)]->descr;
    EXPECT_EQ(d.parentObj, coll);
    EXPECT_EQ(d.rank, 0);
    EXPECT_EQ(d.proxyOp.pid, ::getpid());
    EXPECT_EQ(d.proxyOp.channelId, i);
    EXPECT_EQ(d.proxyOp.peer, 3);
    EXPECT_EQ(d.proxyOp.isSend, i == 1 ? 1 : 0);
    EXPECT_EQ(d.proxyOp.nSteps, 1);
    EXPECT_EQ(d.proxyOp.chunkSize, 64 * 1024);
    EXPECT_EQ(steps[size_t(i)]->descr.parentObj, ops[size_t(i)]->handle);
    EXPECT_EQ(steps[size_t(i)]->descr.proxyStep.step, 0);
  }
  int sized = 0;
  for (const RecordedCall& c : calls)
    if (c.kind == RecordedCall::kRecord && c.trans_size != 0 && p.by_handle.count(c.handle) &&
        c.tid == proxy_tid(calls, ctx[0])) {
      EXPECT_EQ(c.trans_size, 64u * 1024u);
      ++sized;
    }
  EXPECT_EQ(sized, 3);  // SendWait of the send step, RecvFlushWait of the two receive steps
  // Rank 1 sends to 2 on channels 0 and 2 and receives from 2 on channel 1; ranks on one host
  // only would have none (node-local communicators: no network).
  Trace p1 = trace_of(calls, proxy_tid(calls, ctx[1]));
  std::vector<int> peers, sends;
  for (const RecordedCall& c : p1.starts)
    if (c.descr.type == abi::kEvProxyOp) {
      peers.push_back(c.descr.proxyOp.peer);
      sends.push_back(c.descr.proxyOp.isSend);
    }
  EXPECT_EQ(peers, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(sends, (std::vector<int>{1, 0, 1}));
}

// The same job with the mask of scout outside a ProxyStep window: no ProxyOp, no ProxyStep.
TEST_F(CallSequence, NoProxyEventsWithoutTheirBits) {
  CallRecorder::reset(0xE46);
  SimOptions o = opts(4);
  o.nodes = 2;
  InProcJob job(o, &prof_);
  std::vector<std::vector<float>> buf(4, std::vector<float>(32768, 1.0f));
  job.run([&](RankJob& r, int g) {
    r.api().all_reduce(buf[g].data(), buf[g].data(), 32768, *r.comm(CommKind::kDp));
    r.api().synchronize();
  });
  int proxy = 0, kernelch = 0;
  for (const RecordedCall& c : CallRecorder::calls()) {
    if (c.kind != RecordedCall::kStart) continue;
    proxy += c.descr.type == abi::kEvProxyOp || c.descr.type == abi::kEvProxyStep;
    kernelch += c.descr.type == abi::kEvKernelCh;
  }
  EXPECT_EQ(proxy, 0);
  EXPECT_EQ(kernelch, 4 * 3);
}

TEST_F(CallSequence, ActivationMaskGatesEventsAndIsReadAtEveryCall) {
  SimOptions o = opts(2);
  CallRecorder::reset(abi::kEvColl);  // Coll alone also yields GroupApi, CollApi, Group (docs/nccl-notes.md §2.2)
  InProcJob job(o, &prof_);
  RankThreads th;
  job.run([&](RankJob& r, int g) {
    th.set(g);
    Communicator* dp = r.comm(CommKind::kDp);
    std::vector<float> b(1024, 1.0f);
    r.api().all_reduce(b.data(), b.data(), 1024, *dp);
    r.api().synchronize();
    // The plugin changes the mask: KernelLaunch only. NCCL re-reads it at the next call.
    __atomic_store_n(&r.comm(CommKind::kDp)->rc()->mask, static_cast<int>(abi::kEvKernelLaunch), __ATOMIC_RELAXED);
    r.api().all_reduce(b.data(), b.data(), 1024, *dp);
    r.api().synchronize();
    __atomic_store_n(&r.comm(CommKind::kDp)->rc()->mask, 0, __ATOMIC_RELAXED);
    r.api().all_reduce(b.data(), b.data(), 1024, *dp);
    r.api().synchronize();
    __atomic_store_n(&r.comm(CommKind::kDp)->rc()->mask, static_cast<int>(abi::kEvColl), __ATOMIC_RELAXED);
    r.api().all_reduce(b.data(), b.data(), 1024, *dp);
    r.api().synchronize();
  });
  auto calls = CallRecorder::calls();
  for (int g = 0; g < 2; ++g) {
    Trace t = trace_of(calls, th.main_tid[g]);
    std::vector<std::string> coll_only = {"start GroupApi",
                                          "record GroupApi GroupStartApiStop",
                                          "start CollApi",
                                          "stop CollApi",
                                          "record GroupApi GroupEndApiStart",
                                          "start Group",
                                          "start Coll",
                                          "stop Coll",
                                          "stop Group",
                                          "stop GroupApi"};
    std::vector<std::string> launch_only = {"start GroupApi",
                                            "record GroupApi GroupStartApiStop",
                                            "record GroupApi GroupEndApiStart",
                                            "start KernelLaunch",
                                            "stop KernelLaunch",
                                            "stop GroupApi"};
    EXPECT_EQ(t.lines, concat({coll_only, launch_only, coll_only}));
    // seqNumber counts every launch, also the ones without a Coll event (docs/nccl-notes.md §3.6).
    std::vector<uint64_t> seqs;
    for (const RecordedCall& c : t.starts)
      if (c.descr.type == abi::kEvColl) seqs.push_back(c.descr.coll.seqNumber);
    EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 3}));
  }
  // No KernelCh without its own bit.
  for (const RecordedCall& c : calls) EXPECT_NE(c.descr.type, abi::kEvKernelCh);
}

TEST_F(CallSequence, FinalizeAfterProxyStopsAndOnlyForNonNullContexts) {
  SimOptions o = opts(2);
  InProcJob job(o, &prof_);
  job.run([&](RankJob& r, int) {
    std::vector<float> b(1024, 1.0f);
    r.api().all_reduce(b.data(), b.data(), 1024, *r.comm(CommKind::kDp));
    r.api().synchronize();  // the buffer must outlive the kernel, as device memory would
  });
  auto calls = CallRecorder::calls();
  int finals = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].kind != RecordedCall::kFinalize) continue;
    ++finals;
    ASSERT_NE(CallRecorder::init_of(calls, calls[i].context), nullptr);
    for (size_t j = i + 1; j < calls.size(); ++j)
      EXPECT_NE(calls[j].context, calls[i].context) << "event after finalize";
  }
  EXPECT_EQ(finals, 4);  // world and dp0 on two ranks
}

// A v4-only plugin: what NCCL 2.28.9's v4 adapter hands it (docs/nccl-notes.md §2.5, "v4 caveats").
struct V4Call {
  std::string what;
  uint8_t type = 0;
  void* parent = nullptr;
  void* handle = nullptr;
  int state = -1;
};
std::mutex g_v4_mu;
std::vector<V4Call> g_v4;
std::vector<int*> g_v4_masks;
uintptr_t g_v4_next = 1;

abi::Result v4_init(void** ctx, int* mask, const char*, uint64_t, int, int, int, abi::Logger) {
  std::lock_guard<std::mutex> lock(g_v4_mu);
  *ctx = reinterpret_cast<void*>(0x500000 + 16 * g_v4_next++);
  *mask = 0xFFF;
  g_v4_masks.push_back(mask);
  return abi::kSuccess;
}
abi::Result v4_start(void*, void** h, abi::DescrV4* d) {
  std::lock_guard<std::mutex> lock(g_v4_mu);
  *h = reinterpret_cast<void*>(0x600000 + 16 * g_v4_next++);
  g_v4.push_back({"start", d->type, d->parentObj, *h, -1});
  return abi::kSuccess;
}
abi::Result v4_stop(void* h) {
  std::lock_guard<std::mutex> lock(g_v4_mu);
  g_v4.push_back({"stop", 0, nullptr, h, -1});
  return abi::kSuccess;
}
abi::Result v4_record(void* h, int state, abi::StateArgs*) {
  std::lock_guard<std::mutex> lock(g_v4_mu);
  g_v4.push_back({"record", 0, nullptr, h, state});
  return abi::kSuccess;
}
abi::Result v4_fini(void*) { return abi::kSuccess; }
const abi::ProfilerV4 kV4Table = {"v4-recorder", v4_init, v4_start, v4_stop, v4_record, v4_fini};

TEST(CallSequenceV4, V4PluginGetsOnlyLegacyEventsWithGroupParents) {
  LoadedPlugin lp;
  lp.version = 4;
  lp.v4 = &kV4Table;
  ProfilerDriver prof(lp);
  SimOptions o = opts(2);
  InProcJob job(o, &prof);
  job.run([&](RankJob& r, int) {
    std::vector<float> b(1024, 1.0f);
    r.api().all_reduce(b.data(), b.data(), 1024, *r.comm(CommKind::kDp));
    r.api().synchronize();
  });
  std::lock_guard<std::mutex> lock(g_v4_mu);
  ASSERT_EQ(g_v4_masks.size(), 4u);  // world and dp0 on two ranks: the mask pointer is 2nd
  std::map<void*, uint8_t> type_of;
  std::map<void*, void*> group_of_rank;
  int groups = 0, colls = 0, kernelch = 0;
  for (const V4Call& c : g_v4) {
    if (c.what == "start") {
      type_of[c.handle] = c.type;
      EXPECT_TRUE(c.type == abi::kEvGroup || c.type == abi::kEvColl || c.type == abi::kEvKernelCh) << int(c.type);
      if (c.type == abi::kEvGroup) ++groups;
      if (c.type == abi::kEvColl) {
        ++colls;
        ASSERT_TRUE(type_of.count(c.parent));
        EXPECT_EQ(type_of[c.parent], abi::kEvGroup);  // the adapter's parent is the legacy Group
      }
      if (c.type == abi::kEvKernelCh) {
        ++kernelch;
        EXPECT_EQ(type_of[c.parent], abi::kEvColl);
      }
    }
    if (c.what == "record") {
      EXPECT_EQ(c.state, abi::kStateKernelChStop);  // no GroupApi states
    }
  }
  EXPECT_EQ(groups, 2);
  EXPECT_EQ(colls, 2);
  EXPECT_EQ(kernelch, 2 * tune_coll(Func::kAllReduce, 4096, 1).n_channels);
}

}  // namespace
