// One node's observer holds what its own ranks need, whatever the size of the job
// (docs/observer.md, "Memory"): the observer of the last node of the scaling scenario
// (test/support/scale_run.h: its 8 ranks' segments, its Model, store, NodeView and StallWatch),
// driven through a healthy phase, the sdc on one of its ranks and the hang behind another, taking a
// hang drill-down's wait snapshot and encoding its NodeReport every round of the hang phase as the
// network would. Its peak heap in a 131,072-rank job (16,384 nodes) and in a 1,024-rank job (128
// nodes) differ by at most 4 MiB: per-rank state is kept for the node's own ranks, not for every
// rank of the communicators they belong to (the world communicator has 131,072 ranks, each DP
// communicator 4,096).
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <cstdio>

#include "observer/net/drill.h"
#include "test/support/scale_run.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::testing;
namespace net = scout::net;

// Bytes the process has allocated (heap arenas and mmapped blocks).
size_t heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

struct NodeRun {
  size_t peak = 0;          // heap above what the scenario itself holds, at the worst pass
  size_t report_bytes = 0;  // the largest hang drill-down report of the node
  size_t comms = 0;         // communicators in its wait snapshot
};

NodeRun run_last_node(int nodes) {
  ScalePhases ph;
  ph.warmup_steps = 2;
  ph.healthy_steps = 4;
  ph.sdc_steps = 6;
  ph.hang_steps = 24;  // past the hang timeout (10 s)
  ScaleScenario s(nodes, ph);
  (void)s.job.hang_positions();  // the scenario's own data, computed before measuring
  TempDir dir;
  NodeRun out;
  const size_t base = heap_bytes();
  {
    ScaleNode node(s, nodes - 1, dir.path());
    EXPECT_TRUE(node.ok()) << node.error();
    for (int k = 0; k < s.passes(); ++k) {
      node.pass(ScaleScenario::pass_time(k));
      if (ScaleScenario::has_round(k) && std::string(s.phase_of(k)) == "hang") {
        net::NodeReport rep;
        rep.waits = node.view().wait_snapshot();
        out.comms = std::max(out.comms, rep.waits.comms.size());
        out.report_bytes = std::max(out.report_bytes, net::encode_report(rep).size());
      }
      const size_t now = heap_bytes();
      if (now > base) out.peak = std::max(out.peak, now - base);
    }
  }
  return out;
}

TEST(NodeMemory, OneNodesObserverDoesNotGrowWithTheJob) {
  const NodeRun small = run_last_node(128);     // 1,024 ranks
  const NodeRun large = run_last_node(16384);   // 131,072 ranks
  std::printf("node observer peak heap: %.1f MiB at 1,024 ranks, %.1f MiB at 131,072 ranks; hang report %zu / %zu "
              "bytes\n",
              double(small.peak) / (1 << 20), double(large.peak) / (1 << 20), small.report_bytes, large.report_bytes);
  // The snapshot names the node's communicators with a waiting rank (its mp, its DP ones, tp).
  EXPECT_GT(large.comms, 0u);
  EXPECT_EQ(large.comms, small.comms);
  EXPECT_LE(large.peak, small.peak + (size_t(4) << 20));
}

}  // namespace
