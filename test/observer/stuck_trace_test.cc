// Which link, GPU or host stopped a stuck collective, from the members' progress tables
// (observer/detect/stuck_trace.h; docs/observer.md, "Stuck collectives"): exact verdicts and
// suspects on hand-made Models.
#include <gtest/gtest.h>

#include "observer/detect/stuck_trace.h"

namespace {

namespace obs = scout::obs;
namespace shm = scout::shm;

constexpr uint64_t kHash = 0xd0;

// A communicator of `hosts.size()` ranks, comm rank r = global rank r on host hosts[r], stuck in
// AllReduce #7.
struct Stuck {
  obs::Model m;
  obs::Comm* c = nullptr;
  obs::OpId op{obs::OpClass::kColl, shm::kFuncAllReduce, 7, -1, -1};
  explicit Stuck(const std::vector<std::string>& hosts) {
    const int n = int(hosts.size());
    c = &m.upsert_comm({kHash, n}, "dp", 2);
    for (int r = 0; r < n; ++r) {
      obs::Proc p;
      p.global_rank = r;
      p.host = hosts[size_t(r)];
      p.pid = 100 + r;
      const int id = m.upsert_proc(p, 1);
      m.proc(id).has_progress = true;
      m.set_member(*c, r, id, 1, false);
    }
  }
  // A progress entry of rank `r`'s ProxyOp of the stuck operation to or from `peer` on `channel`.
  shm::ProgressSnapshot& entry(int r, int peer, int channel, bool send) {
    shm::ProgressSnapshot e;
    e.dir = send ? shm::kProgressSend : shm::kProgressRecv;
    e.channel = uint8_t(channel);
    e.comm_hash = kHash;
    e.comm_nranks = int(c->ranks.size());
    e.comm_rank = r;
    e.peer = peer;
    e.op_gen = 1;
    e.n_steps = 4;
    e.op_key = 7;
    e.op_func = shm::kFuncAllReduce;
    auto& v = m.proc(c->ranks[r].proc).progress;
    v.push_back(e);
    return v.back();
  }
  // A send whose first step sits in the network; one that completed its first step and starves.
  void stopped_send(int r, int peer, int ch) {
    auto& e = entry(r, peer, ch, true);
    e.posted = e.gpu_wait = e.peer_wait = e.in_net = 1;
  }
  void starved_send(int r, int peer, int ch) {
    auto& e = entry(r, peer, ch, true);
    e.posted = 2;
    e.gpu_wait = 2;
    e.peer_wait = e.in_net = e.net_done = 1;
  }
  void starved_recv(int r, int peer, int ch) {
    auto& e = entry(r, peer, ch, false);
    e.posted = 1;
    e.in_net = 1;
  }
};

TEST(StuckTrace, SendsThatNeverLeaveTheNetworkNameTheLink) {
  Stuck s({"a", "a", "b", "b"});
  s.stopped_send(1, 2, 0);  // the dead link, both directions on different channels
  s.stopped_send(2, 1, 1);
  s.starved_recv(2, 1, 0);
  s.starved_send(3, 0, 0);
  s.starved_recv(0, 3, 0);
  obs::StuckVerdict v = obs::trace_stuck(s.m, *s.c, s.op);
  EXPECT_EQ(v.trace.source, "proxy");
  EXPECT_EQ(v.trace.verdict, "link");
  ASSERT_EQ(v.suspects.size(), 2u);
  EXPECT_EQ(s.m.proc(v.suspects[0]).global_rank, 1);
  EXPECT_EQ(s.m.proc(v.suspects[1]).global_rank, 2);
  ASSERT_EQ(v.trace.paths.size(), 5u);
  EXPECT_EQ(v.trace.paths[0].state, "stopped");
  EXPECT_EQ(v.trace.paths[1].state, "stopped");
  EXPECT_EQ(v.trace.paths[0].dir, "send");
  EXPECT_EQ(v.trace.paths[2].state, "starved");
}

TEST(StuckTrace, DataTheGpuNeverConsumesNamesTheGpu) {
  Stuck s({"a", "a", "b", "b"});
  auto& r = s.entry(2, 1, 0, false);  // rank 2 received from 1 and handed it to its GPU
  r.posted = r.in_net = r.net_done = r.gpu_wait = 1;
  s.starved_send(2, 3, 0);
  s.starved_recv(3, 2, 0);
  obs::StuckVerdict v = obs::trace_stuck(s.m, *s.c, s.op);
  EXPECT_EQ(v.trace.verdict, "gpu");
  ASSERT_EQ(v.suspects.size(), 1u);
  EXPECT_EQ(s.m.proc(v.suspects[0]).global_rank, 2);
  EXPECT_EQ(v.trace.paths[0].state, "gpu");
}

// Rank 2's GPU stopped at the start of the kernel: it never consumed what rank 1 sent it and never
// gave its own sends any data. Rank 3 forwards to rank 2 over NVLink (no steps): once that path
// is full its GPU stops consuming what rank 0 sends it too, but it consumed and sent data of the
// operation before. Rank 2 is named, not rank 3.
TEST(StuckTrace, AGpuThatMovedNoDataIsNamedNotTheGpusBlockedBehindIt) {
  for (bool both_moved : {false, true}) {
    Stuck s({"a", "a", "b", "b"});
    {
      auto& r = s.entry(2, 1, 0, false);
      r.posted = r.in_net = r.net_done = r.gpu_wait = 1;
    }
    {
      auto& w = s.entry(2, 1, 1, true);  // waits for its GPU's data
      w.posted = w.gpu_wait = 1;
      w.in_net = w.net_done = both_moved ? 1 : 0;  // (or sent one step)
    }
    {
      auto& b = s.entry(3, 0, 1, false);  // rank 3: received 3, consumed 1, then blocked
      b.posted = b.in_net = b.net_done = b.gpu_wait = 3;
      b.consumed = 1;
    }
    s.starved_send(3, 0, 0);
    s.starved_recv(0, 3, 0);
    obs::StuckVerdict v = obs::trace_stuck(s.m, *s.c, s.op);
    EXPECT_EQ(v.trace.verdict, "gpu");
    EXPECT_EQ(v.trace.paths[0].state, "gpu");
    EXPECT_EQ(v.trace.paths[1].state, "gpu");  // rank 3's, in the evidence
    if (both_moved) {  // no GPU that moved nothing: both named
      ASSERT_EQ(v.suspects.size(), 2u);
      continue;
    }
    ASSERT_EQ(v.suspects.size(), 1u);
    EXPECT_EQ(s.m.proc(v.suspects[0]).global_rank, 2);
  }
}

// Every stopped link touches host c and they reach two other hosts: host c, all its members.
// With the same links between two hosts only, a host and a link look alike: the links.
TEST(StuckTrace, StoppedLinksAllTouchingOneHostReachingTwoOthersNameTheHost) {
  Stuck s({"a", "a", "b", "b", "c", "c", "d", "d"});
  s.stopped_send(3, 4, 0);  // b -> c
  s.stopped_send(5, 6, 0);  // c -> d
  s.starved_send(7, 0, 0);
  obs::StuckVerdict v = obs::trace_stuck(s.m, *s.c, s.op);
  EXPECT_EQ(v.trace.verdict, "host");
  EXPECT_EQ(v.trace.host, "c");
  ASSERT_EQ(v.suspects.size(), 2u);
  EXPECT_EQ(s.m.proc(v.suspects[0]).global_rank, 4);
  EXPECT_EQ(s.m.proc(v.suspects[1]).global_rank, 5);

  Stuck two({"a", "a", "b", "b"});
  two.stopped_send(1, 2, 0);
  two.stopped_send(3, 0, 1);
  v = obs::trace_stuck(two.m, *two.c, two.op);
  EXPECT_EQ(v.trace.verdict, "link");
  ASSERT_EQ(v.suspects.size(), 4u);
}

// Entries of another operation (an earlier one, or another communicator) are not the stuck one's:
// no progress of it, verdict none, nobody named.
TEST(StuckTrace, EntriesOfOtherOperationsSayNothing) {
  Stuck s({"a", "a", "b", "b"});
  s.stopped_send(1, 2, 0);
  s.m.proc(s.c->ranks[1].proc).progress.back().op_key = 6;
  auto& other = s.entry(2, 1, 0, true);
  other.comm_hash = kHash + 1;
  other.posted = other.in_net = 1;
  obs::StuckVerdict v = obs::trace_stuck(s.m, *s.c, s.op);
  EXPECT_EQ(v.trace.source, "none");
  EXPECT_EQ(v.trace.verdict, "none");
  EXPECT_TRUE(v.suspects.empty());
  EXPECT_TRUE(v.trace.paths.empty());
}

}  // namespace
