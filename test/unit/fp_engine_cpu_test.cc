// The fingerprint engine without a CUDA driver (plugin/fingerprint/engine.h): host buffers are
// hashed on the CPU, results land in the record with the slot's tag, configuration respected.
#include "plugin/fingerprint/engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scout/fingerprint.h"
#include "test/support/reference_sampling.h"

namespace {

using namespace scout;
constexpr uint32_t kCap = 16;

config::Config make_config(const std::map<std::string, std::string>& env) {
  return config::load([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// One communicator's ring held in ordinary memory.
struct Ring {
  std::unique_ptr<shm::CommHeader> header = std::make_unique<shm::CommHeader>();
  std::vector<shm::OpRecord> recs = std::vector<shm::OpRecord>(kCap);
  Ring() { header->ring_capacity = kCap; }
  shm::OpRecord* at(uint64_t index) { return &recs[index % kCap]; }
};

struct Rank {
  fp::Engine* engine;
  fp::CommFp* comm;
  Ring ring;
  explicit Rank(const config::Config& cfg, uint64_t comm_hash = 0xC0FFEE) {
    engine = fp::Engine::create(cfg, nullptr);
    comm = engine->comm_init(comm_hash, 4, -1, ring.header.get());
  }
  ~Rank() {
    engine->comm_fini(comm);
    fp::Engine::destroy(engine);
  }
};

std::vector<float> floats(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + float(i);
  return v;
}

fp::OpInfo allreduce(uint64_t key, const std::vector<float>& send, std::vector<float>& recv) {
  fp::OpInfo op;
  op.comm_hash = 0xC0FFEE;
  op.kind = shm::kKindColl;
  op.func = shm::kFuncAllReduce;
  op.key = key;
  op.send_buf = send.data();
  op.recv_buf = recv.data();
  op.send_bytes = send.size() * 4;
  op.recv_bytes = recv.size() * 4;
  op.dtype = shm::kTypeFloat32;
  return op;
}

TEST(EngineCpu, HashesSendAtEnqueueAndReceiveAtCompletion) {
  Rank r(make_config({}));
  ASSERT_NE(r.comm, nullptr);
  EXPECT_FALSE(r.engine->gpu_available());
  auto send = floats(3000, 1.0f);
  auto recv = floats(3000, 0.0f);
  send[5] = std::numeric_limits<float>::infinity();
  const uint64_t index = 5;
  shm::OpRecord* rec = r.ring.at(index);
  r.engine->on_op_enqueued(r.comm, rec, index, allreduce(7, send, recv));

  EXPECT_TRUE(rec->flags & shm::kFlagFpSampled);
  EXPECT_EQ(rec->fp_version, fp::kFormatVersion);
  EXPECT_EQ(rec->fp_level, 0u);
  EXPECT_EQ(rec->fp_send_word.load(), shm::fp_word(index, shm::kFpDone));
  EXPECT_EQ(rec->fp_send, fp::fingerprint(send.data(), send.size() * 4, shm::kTypeFloat32, nullptr));
  EXPECT_EQ(rec->send_inf, 1u);
  EXPECT_EQ(rec->send_nan, 0u);
  EXPECT_EQ(rec->fp_recv_word.load(), shm::fp_word(index, shm::kFpPending));
  EXPECT_EQ(r.ring.header->fp_sampled.load(), 1u);

  // The "kernel" writes the result; completion hashes the bytes delivered.
  for (size_t i = 0; i < recv.size(); ++i) recv[i] = 2.0f + float(i);  // in place: same buffer
  recv[0] = std::numeric_limits<float>::quiet_NaN();
  r.engine->on_op_complete(r.comm, rec, index, 50000);
  EXPECT_EQ(rec->fp_recv_word.load(), shm::fp_word(index, shm::kFpDone));
  EXPECT_EQ(rec->fp_recv, fp::fingerprint(recv.data(), recv.size() * 4, shm::kTypeFloat32, nullptr));
  EXPECT_EQ(rec->recv_nan, 1u);
  EXPECT_EQ(rec->fp_bytes, 12000u);
  // GPU time is counted by the event layer (kernel_ch.cc); the engine only budgets with it, so
  // the header is not counted twice.
  EXPECT_EQ(r.ring.header->kernel_ns.load(), 0u);
  EXPECT_GT(r.ring.header->fp_gpu_ns.load(), 0u);
}

TEST(EngineCpu, SimulatedRanksSampleTheSameOperations) {
  auto cfg = make_config({{"SCOUT_FP_SAMPLE", "5"}});  // rounded up to 8
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int i = 0; i < 4; ++i) ranks.push_back(std::make_unique<Rank>(cfg));
  auto send = floats(64, 0), recv = floats(64, 0);
  int n_sampled = 0, n_want = 0;
  for (uint64_t key = 0; key < 400; ++key) {
    uint32_t flags0 = 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
      shm::OpRecord* rec = ranks[i]->ring.at(key);
      rec->flags = 0;
      ranks[i]->engine->on_op_enqueued(ranks[i]->comm, rec, key, allreduce(key, send, recv));
      if (i == 0) flags0 = rec->flags;
      EXPECT_EQ(rec->flags, flags0) << "key " << key << " rank " << i;
    }
    bool s = flags0 & shm::kFlagFpSampled;
    const bool want = scout::testing::reference_sampled(0xC0FFEE, shm::kFuncAllReduce, key, 3, 0);
    EXPECT_EQ(s, want) << "key " << key;
    n_sampled += s;
    n_want += want;
  }
  EXPECT_EQ(n_sampled, n_want);
  EXPECT_NEAR(n_sampled, 50, 25);  // 1 in 8 of 400
  EXPECT_EQ(ranks[0]->ring.header->fp_sampled.load(), uint64_t(n_sampled));
}

TEST(EngineCpu, SendAndMatchingReceiveAreSampledTogether) {
  auto cfg = make_config({{"SCOUT_FP_SAMPLE", "8"}});
  Rank a(cfg), b(cfg);
  std::vector<float> buf = floats(16, 3);
  int both = 0;
  for (uint64_t k = 0; k < 200; ++k) {
    fp::OpInfo s;
    s.kind = shm::kKindSend;
    s.func = shm::kFuncSend;
    s.key = k;
    s.send_buf = buf.data();
    s.send_bytes = 64;
    fp::OpInfo r = s;
    r.kind = shm::kKindRecv;
    r.func = shm::kFuncRecv;
    r.send_buf = nullptr;
    r.send_bytes = 0;
    r.recv_buf = buf.data();
    r.recv_bytes = 64;
    shm::OpRecord* ra = a.ring.at(k);
    shm::OpRecord* rb = b.ring.at(k);
    ra->flags = rb->flags = 0;
    a.engine->on_op_enqueued(a.comm, ra, k, s);
    b.engine->on_op_enqueued(b.comm, rb, k, r);
    EXPECT_EQ(ra->flags & shm::kFlagFpSampled, rb->flags & shm::kFlagFpSampled) << k;
    both += (ra->flags & shm::kFlagFpSampled) != 0;
    if (ra->flags & shm::kFlagFpSampled) {
      b.engine->on_op_complete(b.comm, rb, k, 1000);
      EXPECT_EQ(ra->fp_send, rb->fp_recv);  // same bytes sent and received
    }
  }
  EXPECT_GT(both, 5);
}

TEST(EngineCpu, CapsBytesWithTheOperationsSelector) {
  Rank r(make_config({{"SCOUT_FP_MAX_BYTES", "16K"}}));
  auto send = floats(10000, 1), recv = floats(10000, 2);  // 40000 bytes: 10 blocks, 4 hashed
  shm::OpRecord* rec = r.ring.at(3);
  r.engine->on_op_enqueued(r.comm, rec, 3, allreduce(11, send, recv));
  r.engine->on_op_complete(r.comm, rec, 3, 1000);
  const uint64_t sel = fp::op_selector(0xC0FFEE, shm::kFuncAllReduce, 11);
  uint64_t bytes = 0;
  EXPECT_EQ(rec->fp_send, fp::fingerprint_capped(send.data(), 40000, 16384, sel, shm::kTypeFloat32, nullptr, nullptr));
  EXPECT_EQ(rec->fp_recv, fp::fingerprint_capped(recv.data(), 40000, 16384, sel, shm::kTypeFloat32, nullptr, &bytes));
  EXPECT_EQ(rec->fp_bytes, bytes);
  EXPECT_LE(bytes, 16384u);
  EXPECT_GE(bytes, 3 * 4096u);
}

TEST(EngineCpu, CapturedOperationsAreSkippedAndCounted) {
  Rank r(make_config({}));
  auto send = floats(10, 1), recv = floats(10, 2);
  auto op = allreduce(0, send, recv);
  op.graph_captured = true;
  shm::OpRecord* rec = r.ring.at(0);
  r.engine->on_op_enqueued(r.comm, rec, 0, op);
  EXPECT_EQ(rec->fp_send_word.load(), shm::fp_word(0, shm::kFpSkippedCaptured));
  EXPECT_EQ(rec->fp_recv_word.load(), shm::fp_word(0, shm::kFpSkippedCaptured));
  EXPECT_EQ(r.ring.header->fp_skipped.load(), 1u);
  r.engine->on_op_complete(r.comm, rec, 0, 1000);
  EXPECT_EQ(rec->fp_recv_word.load(), shm::fp_word(0, shm::kFpSkippedCaptured));
}

TEST(EngineCpu, ConfigurationSwitches) {
  Rank off(make_config({{"SCOUT_FP", "0"}}));
  EXPECT_EQ(off.comm, nullptr);
  Rank nosend(make_config({{"SCOUT_FP_SEND", "0"}}));
  auto send = floats(10, 1), recv = floats(10, 2);
  shm::OpRecord* rec = nosend.ring.at(1);
  nosend.engine->on_op_enqueued(nosend.comm, rec, 1, allreduce(0, send, recv));
  EXPECT_EQ(rec->fp_send_word.load(), 0u);
  EXPECT_EQ(rec->fp_recv_word.load(), shm::fp_word(1, shm::kFpPending));
  // Operations whose key is not comparable across ranks are never sampled.
  fp::OpInfo unmatched = allreduce(0, send, recv);
  unmatched.kind = shm::kKindUnmatched;
  shm::OpRecord* rec2 = nosend.ring.at(2);
  nosend.engine->on_op_enqueued(nosend.comm, rec2, 2, unmatched);
  EXPECT_EQ(rec2->flags, 0u);
  EXPECT_EQ(rec2->fp_recv_word.load(), 0u);
}

TEST(EngineCpu, LateCompletionOfAReusedSlotWritesNothing) {
  Rank r(make_config({}));
  auto send = floats(10, 1), recv = floats(10, 2);
  r.engine->on_op_enqueued(r.comm, r.ring.at(3), 3, allreduce(0, send, recv));
  // The ring wrapped: index 3 + kCap now owns the slot.
  shm::OpRecord* rec = r.ring.at(3 + kCap);
  r.engine->on_op_enqueued(r.comm, rec, 3 + kCap, allreduce(1, send, recv));
  r.engine->on_op_complete(r.comm, rec, 3, 1000);  // completion of the old op
  EXPECT_EQ(rec->fp_recv_word.load(), shm::fp_word(3 + kCap, shm::kFpPending));
  r.engine->on_op_complete(r.comm, rec, 3 + kCap, 1000);
  EXPECT_EQ(rec->fp_recv_word.load(), shm::fp_word(3 + kCap, shm::kFpDone));
  EXPECT_EQ(shm::fp_status(rec->fp_recv_word.load(), 3), shm::kFpNone);
}

TEST(EngineCpu, BudgetRaisesTheLevelAndPublishesIt) {
  Rank r(make_config({{"SCOUT_FP_BUDGET", "0.01"}}));
  auto send = floats(16384, 1), recv = floats(16384, 2);  // 64 KiB: microseconds to hash
  for (uint64_t i = 0; i < fp::Budget::kWindowOps; ++i) {
    shm::OpRecord* rec = r.ring.at(i);
    rec->flags = 0;
    r.engine->on_op_enqueued(r.comm, rec, i, allreduce(i, send, recv));
    r.engine->on_op_complete(r.comm, rec, i, 1);  // 1 ns kernels: far over any budget
  }
  const uint32_t level = r.ring.header->fp_level.load();
  EXPECT_GE(level, 10u);
  // From now on an op is sampled only if its selector has period_log2 + level low zero bits.
  int sampled = 0;
  for (uint64_t i = 1000; i < 1200; ++i) {
    shm::OpRecord* rec = r.ring.at(i);
    rec->flags = 0;
    r.engine->on_op_enqueued(r.comm, rec, i, allreduce(i, send, recv));
    EXPECT_EQ((rec->flags & shm::kFlagFpSampled) != 0, scout::testing::reference_sampled(0xC0FFEE, shm::kFuncAllReduce, i, 0, level));
    EXPECT_EQ(rec->fp_level, (rec->flags & shm::kFlagFpSampled) ? level : 0u);
    sampled += (rec->flags & shm::kFlagFpSampled) != 0;
    rec->fp_level = 0;
  }
  EXPECT_LE(sampled, 2);
}

TEST(EngineCpu, OpBytesPerFunction) {
  uint64_t s = 0, v = 0;
  fp::op_bytes(shm::kFuncAllReduce, 100, 4, 8, 3, 0, &s, &v);
  EXPECT_EQ(s, 400u);
  EXPECT_EQ(v, 400u);
  fp::op_bytes(shm::kFuncAllGather, 400, 1, 8, 3, 0, &s, &v);
  EXPECT_EQ(s, 400u);
  EXPECT_EQ(v, 3200u);
  fp::op_bytes(shm::kFuncReduceScatter, 100, 2, 8, 3, 0, &s, &v);
  EXPECT_EQ(s, 1600u);
  EXPECT_EQ(v, 200u);
  fp::op_bytes(shm::kFuncBroadcast, 64, 1, 8, 3, 0, &s, &v);
  EXPECT_EQ(s, 0u);
  EXPECT_EQ(v, 64u);
  fp::op_bytes(shm::kFuncBroadcast, 64, 1, 8, 0, 0, &s, &v);
  EXPECT_EQ(s, 64u);
  EXPECT_EQ(v, 64u);
  fp::op_bytes(shm::kFuncReduce, 10, 8, 8, 3, 0, &s, &v);
  EXPECT_EQ(s, 80u);
  EXPECT_EQ(v, 0u);
  fp::op_bytes(shm::kFuncReduce, 10, 8, 8, 0, 0, &s, &v);
  EXPECT_EQ(s, 80u);
  EXPECT_EQ(v, 80u);
  fp::op_bytes(shm::kFuncSend, 10, 4, 8, 0, 0, &s, &v);
  EXPECT_EQ(s, 40u);
  EXPECT_EQ(v, 0u);
  fp::op_bytes(shm::kFuncRecv, 10, 4, 8, 0, 0, &s, &v);
  EXPECT_EQ(s, 0u);
  EXPECT_EQ(v, 40u);
}

}  // namespace
