// Unit tests of the event layer's building blocks (plugin/core), called directly: handle
// encoding, NCCL string mapping, identity from the launcher's environment, the GPU clock offset
// estimator, the v4 descriptor translation, and the event entry points in-process.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/names.h"
#include "plugin/core/clock.h"
#include "plugin/core/events.h"
#include "plugin/core/handle.h"
#include "plugin/core/identity.h"
#include "plugin/core/proxy_window.h"
#include "plugin/core/v4_adapter.h"
#include "test/support/plugin_driver.h"
#include "test/support/tmpdir.h"

namespace scout::core {
namespace {

TEST(Handle, EncodesAndValidatesSaltAndType) {
  const uint16_t salt = 0xBEEF;
  uint64_t v = encode(salt, HandleType::kOp, op_payload(7, 123456789));
  Decoded d = decode(to_ptr(v), salt);
  EXPECT_EQ(d.type, HandleType::kOp);
  EXPECT_EQ(op_ring(d.payload), 7u);
  EXPECT_EQ(op_index_low(d.payload), 123456789u);
  EXPECT_EQ(decode(to_ptr(v), 0xBEEE).type, HandleType::kInvalid);  // another load/process
  EXPECT_EQ(decode(nullptr, salt).type, HandleType::kInvalid);
  EXPECT_EQ(decode(to_ptr(v), 0).type, HandleType::kInvalid);
  for (uint64_t t : {uint64_t(0), uint64_t(kLastHandleType) + 1, uint64_t(15)}) {  // unused type ids
    uint64_t bad = (uint64_t(salt) << 48) | (t << 44) | 5;
    EXPECT_EQ(decode(to_ptr(bad), salt).type, HandleType::kInvalid) << t;
  }
  uint64_t ch = encode(salt, HandleType::kKernelCh, ch_payload(254, 63, (1ull << 40) + 77));
  d = decode(to_ptr(ch), salt);
  EXPECT_EQ(d.type, HandleType::kKernelCh);
  EXPECT_EQ(ch_ring(d.payload), 254u);
  EXPECT_EQ(ch_channel(d.payload), 63u);
  EXPECT_EQ(ch_index_low(d.payload), 77u);
  uint64_t api = encode(salt, HandleType::kApi, api_payload(200, true, (1ull << 35) + 9));
  d = decode(to_ptr(api), salt);
  EXPECT_EQ(api_block(d.payload), 200u);
  EXPECT_TRUE(api_captured_ring(d.payload));
  EXPECT_EQ(api_counter(d.payload), 9u);
  uint64_t g = encode(salt, HandleType::kGroupApi, group_payload(77, 12345, true, false));
  d = decode(to_ptr(g), salt);
  EXPECT_EQ(group_block(d.payload), 77u);
  EXPECT_EQ(group_id(d.payload), 12345u);
  EXPECT_TRUE(group_captured(d.payload));
  EXPECT_FALSE(group_user(d.payload));
}

TEST(Handle, FullIndexFromLowBits) {
  uint64_t out = 0;
  EXPECT_FALSE(full_index(0, 0, 30, &out));
  ASSERT_TRUE(full_index(10, 5, 30, &out));
  EXPECT_EQ(out, 5u);
  ASSERT_TRUE(full_index(10, 9, 30, &out));
  EXPECT_EQ(out, 9u);
  EXPECT_FALSE(full_index(10, 10, 30, &out));  // not written yet
  EXPECT_FALSE(full_index(3, 7, 30, &out));
  uint64_t head = (1ull << 36) + 10;
  ASSERT_TRUE(full_index(head, 5, 36, &out));
  EXPECT_EQ(out, (1ull << 36) + 5);
  ASSERT_TRUE(full_index(head, (1ull << 36) - 1, 36, &out));
  EXPECT_EQ(out, (1ull << 36) - 1);
}

TEST(Names, MapsEveryNcclString) {
  EXPECT_EQ(shm::func_id("AllReduce"), shm::kFuncAllReduce);
  EXPECT_EQ(shm::func_id("Broadcast"), shm::kFuncBroadcast);
  EXPECT_EQ(shm::func_id("Reduce"), shm::kFuncReduce);
  EXPECT_EQ(shm::func_id("AllGather"), shm::kFuncAllGather);
  EXPECT_EQ(shm::func_id("ReduceScatter"), shm::kFuncReduceScatter);
  EXPECT_EQ(shm::func_id("Send"), shm::kFuncSend);
  EXPECT_EQ(shm::func_id("Recv"), shm::kFuncRecv);
  EXPECT_EQ(shm::func_id("AlltoAll"), shm::kFuncAlltoAll);
  EXPECT_EQ(shm::func_id("Gather"), shm::kFuncGather);
  EXPECT_EQ(shm::func_id("Scatter"), shm::kFuncScatter);
  EXPECT_EQ(shm::func_id("SendRecv"), shm::kFuncSendRecv);
  EXPECT_EQ(shm::func_id("Unknown"), shm::kFuncUnknown);
  EXPECT_EQ(shm::func_id(nullptr), shm::kFuncUnknown);
  EXPECT_EQ(shm::func_id("allreduce"), shm::kFuncUnknown);
  const char* types[] = {"ncclInt8",    "ncclUint8",    "ncclInt32",      "ncclUint32",
                         "ncclInt64",   "ncclUint64",   "ncclFloat16",    "ncclFloat32",
                         "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(shm::datatype_id(types[i]), i) << types[i];
  EXPECT_EQ(shm::datatype_id("ncclHalf"), shm::kTypeFloat16);
  EXPECT_EQ(shm::datatype_id("ncclFloat"), shm::kTypeFloat32);
  EXPECT_EQ(shm::datatype_id("ncclDouble"), shm::kTypeFloat64);
  EXPECT_EQ(shm::datatype_id("Unknown"), shm::kTypeUnknown);
  EXPECT_EQ(shm::datatype_id(nullptr), shm::kTypeUnknown);
  EXPECT_EQ(shm::algo_id("RING"), shm::kAlgoRing);
  EXPECT_EQ(shm::algo_id("TREE"), shm::kAlgoTree);
  EXPECT_EQ(shm::algo_id("COLLNET_DIRECT"), shm::kAlgoCollnetDirect);
  EXPECT_EQ(shm::algo_id("COLLNET_CHAIN"), shm::kAlgoCollnetChain);
  EXPECT_EQ(shm::algo_id("NVLS"), shm::kAlgoNvls);
  EXPECT_EQ(shm::algo_id("NVLS_TREE"), shm::kAlgoNvlsTree);
  EXPECT_EQ(shm::algo_id("PAT"), shm::kAlgoPat);
  EXPECT_EQ(shm::algo_id(nullptr), shm::kAlgoUnknown);
  EXPECT_EQ(shm::proto_id("LL"), shm::kProtoLL);
  EXPECT_EQ(shm::proto_id("LL128"), shm::kProtoLL128);
  EXPECT_EQ(shm::proto_id("SIMPLE"), shm::kProtoSimple);
  EXPECT_EQ(shm::proto_id("Unknown"), shm::kProtoUnknown);
  EXPECT_EQ(shm::datatype_size(shm::kTypeBfloat16), 2u);
  EXPECT_EQ(shm::datatype_size(shm::kTypeFloat64), 8u);
  EXPECT_EQ(shm::datatype_size(shm::kTypeFloat8e5m2), 1u);
  EXPECT_EQ(shm::datatype_size(shm::kTypeUnknown), 0u);
  EXPECT_STREQ(shm::func_name(shm::kFuncReduceScatter), "ReduceScatter");
  EXPECT_STREQ(shm::nccl_datatype_name(shm::kTypeFloat32), "ncclFloat32");
  EXPECT_STREQ(shm::algo_name(shm::kAlgoNvlsTree), "NVLS_TREE");
  EXPECT_STREQ(shm::proto_name(shm::kProtoUnknown), "Unknown");
}

TEST(Names, PointerCacheChecksTheFirstCharacter) {
  // A buffer reused for a name with another first character is mapped again.
  char buf[32] = "AllGather";
  EXPECT_EQ(shm::func_id(buf), shm::kFuncAllGather);
  EXPECT_EQ(shm::func_id(buf), shm::kFuncAllGather);  // cached
  std::snprintf(buf, sizeof(buf), "Recv");
  EXPECT_EQ(shm::func_id(buf), shm::kFuncRecv);
  EXPECT_EQ(shm::func_id(buf), shm::kFuncRecv);
  std::snprintf(buf, sizeof(buf), "Nonsense");
  EXPECT_EQ(shm::func_id(buf), shm::kFuncUnknown);
  // Many distinct addresses (more than the cache holds) keep mapping.
  std::vector<std::string> copies(40, "ncclBfloat16");
  for (auto& c : copies) EXPECT_EQ(shm::datatype_id(c.c_str()), shm::kTypeBfloat16);
}

Identity ident(const std::map<std::string, std::string>& env, std::vector<std::string>* warns,
               config::Config cfg = config::defaults()) {
  return identity_from_env(
      cfg,
      [&](const char* n) -> const char* {
        auto it = env.find(n);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      [&](const std::string& m) { warns->push_back(m); });
}

TEST(Identity, JobIdPrecedence) {
  std::vector<std::string> w;
  EXPECT_EQ(ident({}, &w).job, "default");
  EXPECT_EQ(ident({{"SLURM_JOB_ID", "777"}}, &w).job, "777");
  EXPECT_EQ(ident({{"SLURM_JOB_ID", "777"}, {"TORCHELASTIC_RUN_ID", "te"}}, &w).job, "te");
  config::Config cfg = config::defaults();
  cfg.job_id = "mine";
  EXPECT_EQ(ident({{"SLURM_JOB_ID", "777"}, {"TORCHELASTIC_RUN_ID", "te"}}, &w, cfg).job, "mine");
  EXPECT_TRUE(w.empty());
}

TEST(Identity, RanksFromTheFirstLauncherVariableSet) {
  std::vector<std::string> w;
  Identity a = ident({}, &w);
  EXPECT_EQ(a.global_rank, -1);
  EXPECT_EQ(a.local_rank, -1);
  EXPECT_EQ(a.world_size, -1);
  Identity b = ident(
      {{"PMIX_RANK", "9"}, {"PMI_RANK", "8"}, {"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "3"}, {"SLURM_NTASKS", "64"}},
      &w);
  EXPECT_EQ(b.global_rank, 7);
  EXPECT_EQ(b.local_rank, 3);
  EXPECT_EQ(b.world_size, 64);
  Identity c = ident({{"RANK", "1"},
                      {"OMPI_COMM_WORLD_RANK", "2"},
                      {"LOCAL_RANK", "0"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "5"},
                      {"WORLD_SIZE", "16"},
                      {"OMPI_COMM_WORLD_SIZE", "32"}},
                     &w);
  EXPECT_EQ(c.global_rank, 1);
  EXPECT_EQ(c.local_rank, 0);
  EXPECT_EQ(c.world_size, 16);
  EXPECT_EQ(ident({{"PMI_RANK", "4"}}, &w).global_rank, 4);
  EXPECT_TRUE(w.empty());
  Identity d = ident({{"RANK", "x1"}, {"OMPI_COMM_WORLD_RANK", "-3"}, {"SLURM_PROCID", "12"}}, &w);
  EXPECT_EQ(d.global_rank, 12);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("RANK=\"x1\" ignored"), std::string::npos);
  EXPECT_NE(w[1].find("OMPI_COMM_WORLD_RANK=\"-3\" ignored"), std::string::npos);
}

TEST(Identity, HostAndGpu) {
  std::vector<std::string> w;
  config::Config cfg = config::defaults();
  EXPECT_FALSE(ident({}, &w, cfg).host.empty());  // gethostname()
  EXPECT_EQ(ident({}, &w, cfg).gpu, "");
  cfg.host = "node17";
  cfg.gpu = "GPU-abc";
  EXPECT_EQ(ident({}, &w, cfg).host, "node17");
  EXPECT_EQ(ident({}, &w, cfg).gpu, "GPU-abc");
}

TEST(ClockOffset, MinimumOfRecentSamples) {
  ClockOffset c;
  bool valid = true;
  EXPECT_EQ(c.estimate(&valid), 0);
  EXPECT_FALSE(valid);
  EXPECT_EQ(c.to_wall(123), 0);
  // Callback delays of 5, 3, 8 us over a GPU clock 1 s behind: the estimate is 1 s + 3 us.
  const int64_t behind = 1000000000;
  EXPECT_EQ(c.sample(behind + 5000 + 100, 100), behind + 5000);
  EXPECT_EQ(c.sample(behind + 3000 + 200, 200), behind + 3000);
  EXPECT_EQ(c.sample(behind + 8000 + 300, 300), behind + 3000);
  EXPECT_EQ(c.estimate(&valid), behind + 3000);
  EXPECT_TRUE(valid);
  EXPECT_EQ(c.to_wall(1000), 1000 + behind + 3000);
  EXPECT_EQ(c.to_wall(0), 0);
  // The clocks drift by +1 ms: after two full windows the old minimum is forgotten.
  for (uint32_t i = 3; i < ClockOffset::kWindow; ++i) c.sample(behind + 1000000 + 4000, 0);
  EXPECT_EQ(c.estimate(), behind + 3000);  // still the current window
  for (uint32_t i = 0; i < ClockOffset::kWindow; ++i) c.sample(behind + 1000000 + 4000, 0);
  EXPECT_EQ(c.estimate(), behind + 3000);  // now the previous window
  c.sample(behind + 1000000 + 4000, 0);    // a third window starts
  EXPECT_EQ(c.estimate(), behind + 1000000 + 4000);
}

TEST(V4Adapter, TranslatesCollAndP2pAndRejectsWideTypes) {
  abi::DescrV4 in{};
  in.type = abi::kEvColl;
  in.parentObj = reinterpret_cast<void*>(0x99);
  in.rank = 3;
  in.coll.seqNumber = 17;
  in.coll.func = "Reduce";
  in.coll.count = 5;
  in.coll.root = 2;
  in.coll.datatype = "ncclInt64";
  in.coll.nChannels = 6;
  in.coll.nWarps = 8;
  in.coll.algo = "TREE";
  in.coll.proto = "LL";
  abi::DescrV5 out;
  ASSERT_TRUE(descr_from_v4(in, &out));
  EXPECT_EQ(out.type, abi::kEvColl);
  EXPECT_EQ(out.parentObj, in.parentObj);
  EXPECT_EQ(out.coll.parentGroup, in.parentObj);
  EXPECT_EQ(out.coll.seqNumber, 17u);
  EXPECT_STREQ(out.coll.func, "Reduce");
  EXPECT_EQ(out.coll.root, 2);
  EXPECT_EQ(out.coll.nChannels, 6);
  EXPECT_EQ(out.rank, 3);
  abi::DescrV4 p{};
  p.type = abi::kEvP2p;
  p.p2p.func = "Send";
  p.p2p.peer = 4;
  p.p2p.count = 9;
  p.p2p.nChannels = 0xCC;  // garbage in v4
  ASSERT_TRUE(descr_from_v4(p, &out));
  EXPECT_EQ(out.p2p.peer, 4);
  EXPECT_EQ(out.p2p.nChannels, 0);
  abi::DescrV4 w{};
  w.type = 3;  // two bits
  EXPECT_FALSE(descr_from_v4(w, &out));
}

// The entry points are callable in-process (the tests and tools link the same code as the .so).
TEST(Events, InProcessSequenceWithoutTheSharedObject) {
  testing::TempDir dir;
  testing::ScopedEnv env;
  env.set("SCOUT_SHM_DIR", dir.path());
  env.set("SCOUT_JOB_ID", "inproc");
  env.set("SCOUT_FP", "0");  // made-up buffer addresses
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(init(&ctx, 0x55, &mask, "x", 1, 2, 0, nullptr, 5), abi::kSuccess);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(mask, kActivationMask | kProxyMaskBits);  // ProxyOp|ProxyStep kept (SCOUT_PROXY_PROGRESS=1)
  abi::DescrV5 g = testing::d_group_api(false, 1);
  void* ga = nullptr;
  start_event(ctx, &ga, &g, 5);
  abi::DescrV5 a = testing::d_coll_api("Reduce", 4, "ncclFloat64", 1, nullptr, false, ga);
  void* ca = nullptr;
  start_event(ctx, &ca, &a, 5);
  abi::DescrV5 c =
      testing::d_coll(2, "Reduce", (void*)1, (void*)2, 4, 1, "ncclFloat64", 1, "TREE", "LL", ca, nullptr, 0);
  void* op = nullptr;
  start_event(ctx, &op, &c, 5);
  stop_event(op);
  stop_event(ga);
  abi::DescrV5 k = testing::d_kernel_ch(0, 1000, op);
  void* kh = nullptr;
  start_event(ctx, &kh, &k, 5);
  abi::StateArgs sa{};
  sa.kernelCh.pTimer = 2000;
  record_state(kh, abi::kStateKernelChStop, &sa);
  stop_event(kh);
  testing::SegmentView v = testing::read_segment(dir.path());
  ASSERT_TRUE(v.ok) << v.error;
  ASSERT_EQ(v.records[0].size(), 1u);
  EXPECT_EQ(v.records[0][0].func, shm::kFuncReduce);
  EXPECT_EQ(v.records[0][0].key, 2u);
  EXPECT_EQ(v.records[0][0].peer, 1);
  EXPECT_EQ(v.records[0][0].bytes, 32u);
  EXPECT_EQ(v.records[0][0].state, uint32_t(shm::kStateComplete));
  EXPECT_EQ(v.comms[0].kernel_ns, 1000u);
  EXPECT_EQ(finalize(ctx), abi::kSuccess);
}

}  // namespace
}  // namespace scout::core
