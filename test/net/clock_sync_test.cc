// Clock offset estimation: the sample arithmetic, recovery of injected offsets within the stated
// bound on the in-process channel (13 nodes: a tree with 4 levels) and across processes over Gloo.
#include <gtest/gtest.h>

#include <bit>
#include <cstdlib>
#include <sstream>

#include "observer/net/clock_sync.h"
#include "observer/net/gloo_channel.h"
#include "test/net/net_test_util.h"
#include "test/net/proc_util.h"
#include "test/support/tmpdir.h"

namespace scout::net {
namespace {

// Offsets injected into node r's clock (ns); node 0's is not zero on purpose.
int64_t injected(int r) { return (r % 2 ? 1 : -1) * (int64_t(r) * 1234567891 % 5000000000) + 700000; }

TEST(ClockSync, PingSampleArithmetic) {
  // Child clock = parent clock + 1000; 40 ns each way; parent turnaround 10 ns.
  // True times: ping leaves 0, arrives 40, reply leaves 50, arrives 90.
  PingSample s = ping_sample(0 + 1000, 40, 50, 90 + 1000);
  EXPECT_EQ(s.offset_ns, 1000);
  EXPECT_EQ(s.rtt_ns, 80);
  // Asymmetric path (10 ns out, 70 ns back): the estimate is off by 30 ns <= rtt / 2 = 40.
  s = ping_sample(0 + 1000, 10, 20, 90 + 1000);
  EXPECT_EQ(s.offset_ns, 1030);
  EXPECT_EQ(s.rtt_ns, 80);
}

TEST(ClockSync, RecoversInjectedOffsetsInProcess) {
  const int n = 13;
  MonotonicClock base;
  InprocNetwork net(n);
  std::vector<ClockEstimate> est(n);
  auto errors = testing::run_endpoints(net, [&](Channel& ch) {
    ShiftedClock clock(base, injected(ch.rank()));
    est[ch.rank()] = sync_clocks(ch, clock, 8);
  });
  std::string err;
  ASSERT_TRUE(testing::all_ok(errors, &err)) << err;
  EXPECT_EQ(est[0].offset_ns, 0);
  EXPECT_EQ(est[0].error_ns, 0);
  EXPECT_EQ(est[0].parent, -1);
  for (int r = 1; r < n; ++r) {
    const int64_t truth = injected(r) - injected(0);
    EXPECT_LE(std::llabs(est[r].offset_ns - truth), est[r].error_ns) << "node " << r;
    EXPECT_LT(est[r].error_ns, 50000000) << "node " << r;  // a loaded 2-core box stays far below
    EXPECT_EQ(est[r].hops, std::popcount(unsigned(r))) << "node " << r;
    EXPECT_EQ(est[r].parent, r - int(std::bit_floor(unsigned(r)))) << "node " << r;
  }
  // A moment seen by every node at once maps to the same leader time, within the bounds.
  const int64_t t_true = base.now_ns();
  for (int r = 1; r < n; ++r) {
    const int64_t leader_time = est[r].to_leader(t_true + injected(r));
    EXPECT_LE(std::llabs(leader_time - (t_true + injected(0))), est[r].error_ns);
  }
}

TEST(ClockSync, RecoversInjectedOffsetsOverGloo) {
  scout::testing::TempDir tmp;
  const int n = 4;
  auto res = testing::run_processes(n, [&](int r) {
    GlooOptions o;
    o.rdzv = "file:" + tmp.path();
    o.job = "clock";
    o.rank = r;
    o.size = n;
    o.hostname = "127.0.0.1";
    auto ch = GlooChannel::connect(o);
    MonotonicClock base;  // one machine: the same clock in every process
    ShiftedClock clock(base, injected(r));
    ClockEstimate e = sync_clocks(*ch, clock, 16);
    std::ostringstream out;
    out << e.offset_ns << " " << e.error_ns << " " << e.rtt_ns;
    return out.str();
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(res[r].status, 0) << res[r].report;
    std::istringstream in(res[r].report);
    int64_t off, error, rtt;
    in >> off >> error >> rtt;
    const int64_t truth = injected(r) - injected(0);
    EXPECT_LE(std::llabs(off - truth), error) << "node " << r;
    EXPECT_LT(error, 50000000) << "node " << r;
    std::printf("node %d: offset error %lld ns, bound %lld ns, best round trip %lld ns\n", r, (long long)(off - truth),
                (long long)error, (long long)rtt);
  }
}

}  // namespace
}  // namespace scout::net
