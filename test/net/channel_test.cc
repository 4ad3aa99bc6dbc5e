// The channel's collectives on the in-process transport: results, message counts and bytes
// (the cost model of observer/net/channel.h), failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>

#include "observer/net/inproc_channel.h"
#include "test/net/net_test_util.h"

namespace scout::net {
namespace {

using testing::all_ok;
using testing::run_endpoints;

std::vector<uint64_t> input_of(int rank, size_t len, uint64_t seed) {
  std::mt19937_64 g(seed * 1000003 + rank);
  std::vector<uint64_t> v(len);
  for (auto& x : v) x = g() % 1000000;  // small values keep SUM free of wrap-around
  return v;
}

std::vector<uint64_t> expected(int n, size_t len, uint64_t seed, ReduceOp op) {
  std::vector<uint64_t> acc = input_of(0, len, seed);
  for (int r = 1; r < n; ++r) {
    auto v = input_of(r, len, seed);
    for (size_t i = 0; i < len; ++i) {
      acc[i] = op == ReduceOp::kMin   ? std::min(acc[i], v[i])
               : op == ReduceOp::kMax ? std::max(acc[i], v[i])
               : op == ReduceOp::kOr  ? acc[i] | v[i]
                                      : acc[i] + v[i];
    }
  }
  return acc;
}

TEST(Channel, AllreduceMatchesSerialReductionForAnySizeAndLength) {
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 13, 16}) {
    for (size_t len : {size_t(1), size_t(3), size_t(17), size_t(100)}) {
      for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kSum, ReduceOp::kOr}) {
        InprocNetwork net(n);
        const uint64_t seed = n * 131 + len;
        const auto want = expected(n, len, seed, op);
        std::vector<std::vector<uint64_t>> got(n);
        auto errors = run_endpoints(net, [&](Channel& ch) {
          auto v = input_of(ch.rank(), len, seed);
          ch.allreduce(v, op);
          got[ch.rank()] = v;
        });
        std::string err;
        ASSERT_TRUE(all_ok(errors, &err)) << err;
        for (int r = 0; r < n; ++r) {
          ASSERT_EQ(got[r], want) << "n=" << n << " len=" << len << " op=" << int(op) << " rank=" << r;
        }
      }
    }
  }
}

// Cost model, power of two: 2 log2(N) messages, 2 T (N-1)/N bytes, on every endpoint.
TEST(Channel, AllreduceTrafficPowerOfTwo) {
  InprocNetwork net(8);
  std::vector<Traffic> t(8);
  auto errors = run_endpoints(net, [&](Channel& ch) {
    std::vector<uint64_t> v(1024, ch.rank());
    ch.allreduce(v, ReduceOp::kMax);
    t[ch.rank()] = ch.traffic();
  });
  ASSERT_TRUE(all_ok(errors));
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(t[r].messages_sent, 6u);
    EXPECT_EQ(t[r].messages_received, 6u);
    EXPECT_EQ(t[r].payload_sent, 14336u);  // (512 + 256 + 128) * 2 elements * 8 bytes
    EXPECT_EQ(t[r].payload_received, 14336u);
    EXPECT_EQ(t[r].wire_sent(), 14336u + 6 * 96 + 6 * 48);
  }
}

// N = 6: p = 4, endpoints 0 and 2 fold into 1 and 3.
TEST(Channel, AllreduceTrafficWithFoldedEndpoints) {
  InprocNetwork net(6);
  std::vector<Traffic> t(6);
  auto errors = run_endpoints(net, [&](Channel& ch) {
    std::vector<uint64_t> v(64, 1);
    ch.allreduce(v, ReduceOp::kSum);
    EXPECT_EQ(v[0], 6u);
    t[ch.rank()] = ch.traffic();
  });
  ASSERT_TRUE(all_ok(errors));
  for (int r : {0, 2}) {
    EXPECT_EQ(t[r].messages_sent, 1u);
    EXPECT_EQ(t[r].messages_received, 1u);
    EXPECT_EQ(t[r].payload_sent, 512u);
    EXPECT_EQ(t[r].payload_received, 512u);
  }
  for (int r : {1, 3}) {
    EXPECT_EQ(t[r].messages_sent, 5u);
    EXPECT_EQ(t[r].messages_received, 5u);
    EXPECT_EQ(t[r].payload_sent, 384u + 384u + 512u);
    EXPECT_EQ(t[r].payload_received, 512u + 384u + 384u);
  }
  for (int r : {4, 5}) {
    EXPECT_EQ(t[r].messages_sent, 4u);
    EXPECT_EQ(t[r].payload_sent, 768u);
  }
}

TEST(Channel, BarrierSendsCeilLog2EmptyMessages) {
  InprocNetwork net(5);
  std::vector<Traffic> t(5);
  auto errors = run_endpoints(net, [&](Channel& ch) {
    ch.barrier();
    ch.barrier();
    t[ch.rank()] = ch.traffic();
  });
  ASSERT_TRUE(all_ok(errors));
  for (const auto& x : t) {
    EXPECT_EQ(x.messages_sent, 6u);
    EXPECT_EQ(x.messages_received, 6u);
    EXPECT_EQ(x.payload_sent, 0u);
  }
}

TEST(Channel, BarrierWaitsForTheLastEndpoint) {
  InprocNetwork net(4);
  std::atomic<int> entered{0};
  std::vector<int> seen(4, -1);
  auto errors = run_endpoints(net, [&](Channel& ch) {
    if (ch.rank() == 3) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    entered++;
    ch.barrier();
    seen[ch.rank()] = entered.load();
  });
  ASSERT_TRUE(all_ok(errors));
  for (int s : seen) EXPECT_EQ(s, 4);
}

TEST(Channel, BroadcastDeliversTheLeadersBytes) {
  for (int n : {2, 5, 8}) {
    for (size_t len : {size_t(0), size_t(1), size_t(5000)}) {
      InprocNetwork net(n);
      std::vector<uint8_t> payload(len);
      for (size_t i = 0; i < len; ++i) payload[i] = uint8_t(i * 7 + 1);
      std::vector<std::vector<uint8_t>> got(n);
      auto errors = run_endpoints(net, [&](Channel& ch) {
        std::vector<uint8_t> d = ch.is_leader() ? payload : std::vector<uint8_t>{9, 9, 9};
        ch.broadcast(&d);
        got[ch.rank()] = d;
      });
      ASSERT_TRUE(all_ok(errors));
      for (int r = 0; r < n; ++r) EXPECT_EQ(got[r], payload) << "n=" << n << " len=" << len;
    }
  }
}

TEST(Channel, AllgatherOfVariableSizes) {
  InprocNetwork net(5);
  auto payload = [](int r) { return std::vector<uint8_t>(size_t(r * 3), uint8_t(r + 1)); };
  std::vector<std::vector<std::vector<uint8_t>>> got(5);
  auto errors = run_endpoints(net, [&](Channel& ch) {
    auto mine = payload(ch.rank());
    got[ch.rank()] = ch.allgather(mine);
  });
  ASSERT_TRUE(all_ok(errors));
  for (int r = 0; r < 5; ++r) {
    ASSERT_EQ(got[r].size(), 5u);
    for (int s = 0; s < 5; ++s) EXPECT_EQ(got[r][s], payload(s));
  }
}

TEST(Channel, GatherToLeaderMovesOnlyNonEmptyPayloads) {
  InprocNetwork net(8);
  std::vector<Contribution> at_leader;
  std::vector<Traffic> t(8);
  auto errors = run_endpoints(net, [&](Channel& ch) {
    std::vector<uint8_t> mine;
    if (ch.rank() == 3 || ch.rank() == 6) mine.assign(100 + ch.rank(), uint8_t(ch.rank()));
    auto got = ch.gather_to_leader(mine, 2);  // count known to all
    if (ch.is_leader())
      at_leader = got;
    else
      EXPECT_TRUE(got.empty());
    t[ch.rank()] = ch.traffic();
  });
  ASSERT_TRUE(all_ok(errors));
  ASSERT_EQ(at_leader.size(), 2u);
  EXPECT_EQ(at_leader[0].rank, 3);
  EXPECT_EQ(at_leader[0].bytes, std::vector<uint8_t>(103, 3));
  EXPECT_EQ(at_leader[1].rank, 6);
  EXPECT_EQ(at_leader[1].bytes.size(), 106u);
  EXPECT_EQ(t[0].messages_received, 4u);
  EXPECT_EQ(t[0].payload_received, 8u + 103u + 8u + 106u);
  EXPECT_EQ(t[3].messages_sent, 2u);
  for (int r : {1, 2, 4, 5, 7}) EXPECT_EQ(t[r].messages_sent, 0u) << r;
}

// reduce_to_leader: every endpoint's payload reaches the leader through the binomial tree, merged
// in increasing child rank (here concatenated); an endpoint sends a size word and, unless empty,
// its merged payload to its parent; the leader receives 2 messages per child, ceil(log2 N) children.
TEST(Channel, ReduceToLeaderMergesEveryPayloadUpTheTree) {
  for (int n : {1, 2, 3, 5, 8, 13, 16}) {
    InprocNetwork net(n);
    std::vector<uint8_t> at_leader;
    std::vector<Traffic> t(static_cast<size_t>(n));
    auto errors = run_endpoints(net, [&](Channel& ch) {
      std::vector<uint8_t> mine;
      if (ch.rank() % 3 != 2) mine.push_back(uint8_t(ch.rank()));  // every third sends nothing
      auto got = ch.reduce_to_leader(mine, [](std::vector<uint8_t> a, std::vector<uint8_t> b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
      });
      if (ch.is_leader()) {
        at_leader = got;
      } else {
        EXPECT_TRUE(got.empty());
      }
      t[size_t(ch.rank())] = ch.traffic();
    });
    std::string err;
    ASSERT_TRUE(all_ok(errors, &err)) << err;
    std::vector<uint8_t> want;
    for (int r = 0; r < n; ++r) {
      if (r % 3 != 2) want.push_back(uint8_t(r));
    }
    std::sort(at_leader.begin(), at_leader.end());
    EXPECT_EQ(at_leader, want) << "n=" << n;
    int children = 0;
    for (int d = 1; d < n; d *= 2) ++children;
    EXPECT_LE(t[0].messages_received, uint64_t(2 * children)) << "n=" << n;
    EXPECT_EQ(t[0].messages_sent, 0u);
    for (int r = 1; r < n; ++r) EXPECT_LE(t[size_t(r)].messages_sent, 2u) << "n=" << n << " rank " << r;
  }
}

// A peer whose every message is a size word announcing `announced` bytes (a malformed or hostile
// observer): the receiving side fails the call instead of allocating that much.
class HostilePeerChannel : public Channel {
 public:
  HostilePeerChannel(int rank, uint64_t announced) : Channel(rank, 2), announced_(announced) {}
  void abort() override {}

 protected:
  void transfer(uint64_t, const SendSpec*, const RecvSpec* recv) override {
    if (!recv) return;
    std::memset(recv->data, 0, recv->len);
    std::memcpy(recv->data, &announced_, std::min(recv->len, sizeof(announced_)));
    if (recv->source) *recv->source = 1 - rank();
  }

 private:
  uint64_t announced_;
};

TEST(Channel, AnnouncedPayloadBeyondTheLimitFailsTheCallWithoutAllocatingIt) {
  HostilePeerChannel leader(0, uint64_t(1) << 40);
  try {
    leader.gather_to_leader({}, 1);
    FAIL() << "gather accepted a 1 TiB payload";
  } catch (const ChannelError& e) {
    EXPECT_NE(std::string(e.what()).find("gathered payload of 1099511627776 bytes beyond the limit of 67108864"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(leader.failed());

  HostilePeerChannel follower(1, uint64_t(1) << 40);
  std::vector<uint8_t> data;
  EXPECT_THROW(follower.broadcast(&data), ChannelError);
  EXPECT_TRUE(data.empty());

  // A size within the limit is accepted (the payload then arrives as usual).
  HostilePeerChannel small(1, 16);
  small.broadcast(&data);
  EXPECT_EQ(data.size(), 16u);
}

TEST(Channel, GatherCountsContributorsWhenNotTold) {
  InprocNetwork net(4);
  std::vector<Contribution> at_leader;
  auto errors = run_endpoints(net, [&](Channel& ch) {
    std::vector<uint8_t> mine;
    if (ch.rank() != 2) mine = {uint8_t(ch.rank())};
    auto got = ch.gather_to_leader(mine);
    if (ch.is_leader()) at_leader = got;
  });
  ASSERT_TRUE(all_ok(errors));
  ASSERT_EQ(at_leader.size(), 3u);
  EXPECT_EQ(at_leader[0].rank, 0);
  EXPECT_EQ(at_leader[1].rank, 1);
  EXPECT_EQ(at_leader[2].rank, 3);
}

TEST(Channel, DeadEndpointFailsTheOthersAndTheChannelStaysFailed) {
  InprocNetwork net(4);
  net.kill(2);
  std::vector<std::string> second(4);
  auto errors = run_endpoints(net, [&](Channel& ch) {
    ch.set_timeout(std::chrono::milliseconds(20000));
    std::vector<uint64_t> v(16, 1);
    try {
      ch.allreduce(v, ReduceOp::kSum);
    } catch (const ChannelError&) {
      EXPECT_TRUE(ch.failed());
      try {
        ch.barrier();
      } catch (const ChannelError& e) { second[ch.rank()] = e.what(); }
      throw;
    }
  });
  // Every endpoint fails (directly, or because a partner failed before sending); endpoint 2
  // knows it was killed; endpoint 3, its partner in the first halving step, names it.
  for (int r = 0; r < 4; ++r) EXPECT_FALSE(errors[r].empty()) << r;
  EXPECT_NE(errors[2].find("killed"), std::string::npos) << errors[2];
  EXPECT_NE(errors[3].find("node-rank 2 is gone"), std::string::npos) << errors[3];
  EXPECT_NE(errors[3].find("allreduce"), std::string::npos) << errors[3];
  EXPECT_NE(second[3].find("failed earlier"), std::string::npos) << second[3];
}

TEST(Channel, MissingPeerTimesOutWithAClearMessage) {
  InprocNetwork net(2);
  std::string err;
  std::thread t([&] {
    Channel& ch = net.endpoint(1);
    ch.set_timeout(std::chrono::milliseconds(100));
    try {
      ch.barrier();
    } catch (const ChannelError& e) { err = e.what(); }
  });
  t.join();
  EXPECT_NE(err.find("timed out after 100 ms waiting for node-rank 0"), std::string::npos) << err;
  EXPECT_NE(err.find("barrier"), std::string::npos) << err;
}

}  // namespace
}  // namespace scout::net
