// The network-link detector alone (docs/observer.md, "Network links") over link tables written by
// the test: a slow pair names its link once confirmed; a pair from or to a host that the
// slow-link detector holds (a suspected or reported slow host, "Slow links") is left to the host
// finding while the host is held, and named once it no longer is.
#include <gtest/gtest.h>

#include "observer/detect/netlink.h"
#include "observer/model/finding_board.h"
#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
using scout::obs::FindingKind;
using scout::obs::Verdict;

// Six ranks on three hosts (global rank g on "node<g / 2>", pid 1000 + g), each sending through
// the net plugin to rank (g + 2) % 6: 0->2, 1->3 (node0->node1), 2->4, 3->5 (node1->node2),
// 4->0, 5->1 (node2->node0). Every pass each pair completes 20 transfers of 1 MiB, taking 100 us,
// or 1 ms for the pairs in `slow`.
struct Ring6 {
  scout::obs::Model m;
  scout::obs::NetLinkDetector d{scout::obs::NetLinkConfig{}};
  scout::obs::FindingBoard board;
  std::vector<int> proc;  // global rank -> process id
  Ring6() {
    for (int g = 0; g < 6; ++g) {
      scout::obs::Proc p;
      p.host = "node" + std::to_string(g / 2);
      p.pid = 1000 + g;
      p.global_rank = g;
      const int id = m.upsert_proc(p, kT0);
      proc.push_back(id);
      scout::obs::Proc& q = m.proc(id);
      q.has_links = true;
      scout::shm::LinkSnapshot e;
      e.index = 0;
      e.source = scout::shm::kLinkSourceNet;
      e.dir = scout::shm::kLinkSend;
      e.peer_global_rank = (g + 2) % 6;
      q.links.push_back(e);
    }
  }
  // One pass `n` (1 s apart) after this pass's transfers, with `held` the slow-link detector's
  // held hosts.
  void pass(int n, const std::set<int>& slow, const std::set<std::string>& held) {
    for (int g = 0; g < 6; ++g) {
      scout::shm::LinkSnapshot& e = m.proc(proc[size_t(g)]).links[0];
      const uint64_t ns = slow.count(g) ? 1'000'000 : 100'000;
      e.transfers += 20;
      e.bytes += 20u << 20;
      e.busy_ns += 20 * ns;
      e.hist[size_t(scout::shm::link_hist_bucket(ns))] += 20;
    }
    d.pass(m, kT0 + int64_t(n) * kSec, board, held);
  }
  // A pass `n` with no new transfer on any pair (the job ended or paused).
  void idle(int n) { d.pass(m, kT0 + int64_t(n) * kSec, board, {}); }
  std::vector<scout::obs::Finding> findings() const {
    std::vector<scout::obs::Finding> out;
    for (const auto* f : board.all()) out.push_back(*f);
    return out;
  }
};

// Pair 4 -> 0 (node2 -> node0) is slow. The first pass only takes snapshots; from the second each
// pass judges 20 transfers per pair and the pair is confirmed in the third slow one (pass 4, 2 s
// after the first, the least time slow):
// the link, sender 4 as suspect and receiver 0 as peer, under the slow-link detector's key.
TEST(NetLink, SlowPairIsNamedOnceConfirmed) {
  Ring6 r;
  for (int n = 1; n <= 3; ++n) r.pass(n, {4}, {});
  EXPECT_TRUE(r.findings().empty());
  r.pass(4, {4}, {});
  auto f = r.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, FindingKind::kSlowLink);
  EXPECT_EQ(f[0].verdict, Verdict::kAttributed);
  EXPECT_EQ(f[0].dedup_key, "slowlink:link:node0:1000:node2:1004");
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{4});
  ASSERT_TRUE(f[0].peer);
  EXPECT_EQ(f[0].peer->global_rank, 0);
  EXPECT_EQ(f[0].evidence["class"], "net_link");
  EXPECT_EQ(f[0].first_seen_ns, kT0 + 4 * kSec);
  EXPECT_TRUE(f[0].open);
}

// After the job stops (passes 5-30: no new transfer, 26 s against the 10 s window) the windows
// only drain; the link stays named as the last pass with transfers judged it: open, its evidence
// (the slow pair against the 5 others) unchanged.
TEST(NetLink, WithoutNewTransfersTheFindingAndItsEvidenceStayAsTheLastPassLeftThem) {
  Ring6 r;
  for (int n = 1; n <= 4; ++n) r.pass(n, {4}, {});
  auto before = r.findings();
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(before[0].evidence["slow"].size(), 1u);
  EXPECT_EQ(before[0].evidence["slow"][0]["peers"], 5) << before[0].evidence.dump();
  for (int n = 5; n <= 30; ++n) r.idle(n);
  auto after = r.findings();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(after[0].open);
  EXPECT_EQ(after[0].last_seen_ns, kT0 + 4 * kSec);
  EXPECT_EQ(after[0].evidence, before[0].evidence);
  // Transfers again: judged again at once, still slow.
  r.pass(31, {4}, {});
  ASSERT_EQ(r.findings().size(), 1u);
  EXPECT_TRUE(r.findings()[0].open);
  EXPECT_EQ(r.findings()[0].last_seen_ns, kT0 + 31 * kSec);
}

// The same slow pair while the slow-link detector holds node2 (its sender's host): judged and
// confirmed, but left to the host finding, so nothing is reported for as long as node2 is held.
// The pass after node2 is released names the link at once (its confirmation counted on).
TEST(NetLink, PairOfAHeldHostIsLeftToTheHostFinding) {
  Ring6 r;
  for (int n = 1; n <= 10; ++n) r.pass(n, {4}, {"node2"});
  EXPECT_TRUE(r.findings().empty());
  r.pass(11, {4}, {});
  auto f = r.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dedup_key, "slowlink:link:node0:1000:node2:1004");
  EXPECT_EQ(suspect_ranks(f[0]), std::vector<int>{4});
  EXPECT_EQ(f[0].first_seen_ns, kT0 + 11 * kSec);
  EXPECT_TRUE(f[0].open);
}

// Holding the receiver's host (node0) leaves the pair alone too. A link already reported whose
// host becomes held is closed: from then on it is the host finding's.
TEST(NetLink, PairToAHeldHostIsLeftToTheHostFindingAndAReportedOneCloses) {
  Ring6 r;
  for (int n = 1; n <= 6; ++n) r.pass(n, {4}, {"node0"});
  EXPECT_TRUE(r.findings().empty());
  r.pass(7, {4}, {});
  ASSERT_EQ(r.findings().size(), 1u);
  EXPECT_TRUE(r.findings()[0].open);
  r.pass(8, {4}, {"node0"});
  auto f = r.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].open);
  EXPECT_EQ(f[0].last_seen_ns, kT0 + 8 * kSec);  // closed in pass 8
}

// A held host that is not on the slow pair changes nothing: node1 holds neither 4 nor 0.
TEST(NetLink, HeldHostElsewhereDoesNotHoldThePair) {
  Ring6 r;
  for (int n = 1; n <= 4; ++n) r.pass(n, {4}, {"node1"});
  auto f = r.findings();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dedup_key, "slowlink:link:node0:1000:node2:1004");
  EXPECT_EQ(f[0].first_seen_ns, kT0 + 4 * kSec);
}

}  // namespace
