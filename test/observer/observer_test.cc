// The observer as a whole over emulated segments of a 3-D parallel job (8 ranks: TP=2, PP=2,
// DP=2; TP AllReduce, PP send/recv, DP AllReduce and a world AllReduce each step): a healthy run
// gives no finding,
// two faults at once give exactly two findings, and everything lands in the SQLite store the
// CLI reads.
#include <gtest/gtest.h>

#include "observer/store/reader.h"
#include "observer/store/writer.h"
#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
using scout::obs::FindingKind;
namespace shm = scout::shm;

// Global rank g = dp * 4 + pp * 2 + tp.
struct Job3D {
  FakeJob& job;
  std::vector<int> tp, pp, dp;
  int world;
  explicit Job3D(FakeJob& j) : job(j) {
    world = job.add_comm(0x3333, {0, 1, 2, 3, 4, 5, 6, 7}, "world");
    for (int d = 0; d < 2; ++d) {
      for (int p = 0; p < 2; ++p) {
        int base = d * 4 + p * 2;
        tp.push_back(job.add_comm(0x7000 + uint64_t(base), {base, base + 1}, "tp"));
      }
    }
    for (int d = 0; d < 2; ++d) {
      for (int t = 0; t < 2; ++t) {
        int a = d * 4 + t;
        pp.push_back(job.add_comm(0x9000 + uint64_t(a), {a, a + 2}, "pp"));
      }
    }
    for (int p = 0; p < 2; ++p) {
      for (int t = 0; t < 2; ++t) {
        int a = p * 2 + t;
        dp.push_back(job.add_comm(0xd000 + uint64_t(a), {a, a + 4}, "dp"));
      }
    }
  }
  // One step at time base; `corrupt` = global rank whose receive of the world AllReduce is
  // flipped this step, `stop` = global rank that stops before its TP AllReduce (-1 none).
  void step(int s, int64_t base, int corrupt = -1, int stop = -1) {
    for (int i = 0; i < 4; ++i) {
      FakeColl c;
      c.seq = uint64_t(s);
      c.t0 = base;
      c.fp_recv = {0x1000 + uint64_t(s), 0x1000 + uint64_t(s)};
      const auto& members = std::vector<int>{i / 2 * 4 + i % 2 * 2, i / 2 * 4 + i % 2 * 2 + 1};
      if (stop == members[0] || stop == members[1]) {
        // The stopped rank never enqueues; its partner waits inside the collective.
        int waiting = stop == members[0] ? 1 : 0;
        OpSpec o;
        o.key = uint64_t(s);
        o.enqueue_ns = base;
        FakeJob::start(job.enqueue(tp[i], waiting, o), base + 10'000);
        continue;
      }
      job.collective(tp[i], c);
    }
    if (stop >= 0) return;
    for (int i = 0; i < 4; ++i) job.p2p(pp[i], 0, 1, uint64_t(s), base + 2 * kMs, base + 2 * kMs, 200'000);
    for (int i = 0; i < 4; ++i) {
      FakeColl c;
      c.seq = uint64_t(s);
      c.t0 = base + 4 * kMs;
      c.count = 1 << 16;
      uint64_t v = 0x2000 + uint64_t(s) * 7 + uint64_t(i);
      c.fp_recv = {v, v};
      job.collective(dp[i], c);
    }
    FakeColl w;
    w.seq = uint64_t(s);
    w.t0 = base + 6 * kMs;
    w.count = 256;
    w.fp_recv = std::vector<uint64_t>(8, 0x3000 + uint64_t(s));
    if (corrupt >= 0) w.fp_recv[corrupt] ^= 1 << 7;
    job.collective(world, w);
  }
};

TEST(Observer, HealthyRunOfEightRanksGivesNoFindingAndFillsTheStore) {
  ObserverHarness h(8);
  Job3D j(h.job);
  std::string err;
  auto store = scout::store::StoreWriter::open(h.dir.path() + "/state/node-0.db", {}, &err);
  ASSERT_TRUE(store) << err;
  scout::obs::Observer o(h.opt, store.get());
  for (int s = 0; s < 200; ++s) {
    j.step(s, kT0 + s * 20 * kMs);
    if (s % 10 == 9) o.pass(kT0 + s * 20 * kMs + 10 * kMs);
  }
  o.pass(kT0 + 10 * kSec);
  EXPECT_EQ(o.findings().size(), 0u);
  EXPECT_EQ(o.judge_stats().judged, 200u * 13);  // 4 TP + 4 PP pairs + 4 DP + world per step
  EXPECT_EQ(o.judge_stats().partial, 0u);
  store.reset();
  auto rd = scout::store::StoreReader::open(h.dir.path() + "/state/node-0.db");
  EXPECT_TRUE(rd->findings().empty());
  EXPECT_EQ(rd->ranks().size(), 8u);
  for (const auto& r : rd->ranks()) EXPECT_EQ(r.state, "running");
  auto comms = rd->comms();
  ASSERT_EQ(comms.size(), 13u);
  for (const auto& c : comms) EXPECT_EQ(c.state, "active");
  EXPECT_EQ(rd->op_count(), 200u * 9);  // collectives only
  auto job = rd->job();
  ASSERT_TRUE(job);
  EXPECT_EQ(job->job, "job1");
}

TEST(Observer, TwoFaultsAtOnceGiveTwoFindings) {
  ObserverHarness h(8);
  Job3D j(h.job);
  for (int s = 0; s < 30; ++s) {
    j.step(s, kT0 + s * 20 * kMs, s == 12 ? 5 : -1);
    if (s % 5 == 4) h.pass(kT0 + s * 20 * kMs + 10 * kMs);
  }
  j.step(30, kT0 + 30 * 20 * kMs, -1, /*stop=*/6);
  h.pass(kT0 + 700 * kMs);
  h.pass(kT0 + 12 * kSec);
  auto f = h.findings();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, FindingKind::kSdc);
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{5});
  EXPECT_EQ(f[0].key->seq, 12u);
  EXPECT_EQ(f[0].verdict, scout::obs::Verdict::kAttributed);
  EXPECT_EQ(f[0].comm_name, "world");
  EXPECT_EQ(f[1].kind, FindingKind::kHang);
  EXPECT_EQ(suspect_ranks(f[1]), std::vector<int>{6});
  EXPECT_EQ(f[1].key->seq, 30u);
  EXPECT_EQ(f[1].comm_hash, 0x7006u);
}

}  // namespace
