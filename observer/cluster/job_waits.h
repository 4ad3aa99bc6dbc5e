// Hangs across nodes (docs/observer.md#hangs; docs/observer-network.md, "Hangs across nodes").
//
// A node's observer sees only its own ranks, so a rank waiting in a communicator with ranks
// elsewhere cannot be followed to the root of a hang there. When a hang drill-down is asked for,
// every node sends the leader a snapshot of its waits (capture_waits: every communicator with a
// local member that is not finalized, each local member's progress counters and marks, and the
// records of the operations in flight on some local rank), summarized and merged on the way
// (observer/net/wait_summary.h), and the leader keeps one Model of the whole job from them
// (JobWaits), on which the node-local core's own hang detector
// (observer/detect/hang.h) runs unchanged: absent / stuck / mismatch classification, the wait-for
// graph across communicators and nodes, roots, deadlocks, crashes.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "observer/model/model.h"
#include "observer/net/drill.h"
#include "observer/net/local_view.h"
#include "observer/net/wait_summary.h"

namespace scout::obs {

// What the ranks of this node wait in, from `m` (times on this node's clock).
net::WaitSnapshot capture_waits(const Model& m);

// The leader's Model of what the whole job waits in, kept from one hang drill-down to the next and
// updated from each one's merged wait summary (net::WaitSummary) incrementally: a communicator whose
// summary did not change (the same groups, members and records, times aside) keeps its members,
// records and operations; a changed one is rebuilt; one no longer in the summary leaves. Processes
// are kept per global rank (a member whose group carried its identity has its host, pid and GPU;
// the others host "" and pid -(global rank + 1)). Every member gets its group's counters, marks and
// in-flight records; a member that issued an operation others wait in but has no record of it
// (complete there) gets a slot built from its counters, so it is not mistaken for absent. The
// communicator's last progress is the latest any node saw.
class JobWaits {
 public:
  // Applies `job` (leader clock) at `now_ns`; returns the communicators (re)built.
  size_t update(const net::WaitSummary& job, int64_t now_ns);
  const Model& model() const { return m_; }
  // Forgets everything (no stall anywhere any more).
  void clear();

 private:
  void build(const net::CommSummary& cs, int64_t now_ns);
  int proc_for(int global_rank, const net::ProcView* identity, const net::MemberGroup& g, int64_t now_ns);

  Model m_;
  std::map<CommKey, uint64_t> content_;   // per communicator: hash of its summary, times aside
  std::unordered_map<int, int> proc_of_;  // global rank -> proc id
  int unknown_ = 0;                       // processes of members whose global rank no node knew
};

// What the hang detector's outcome depends on in `job`, as one hash: per communicator (in order)
// its key, whether it has been without progress for longer than `timeout_ns` at `now_ns`, and its
// groups (states without times, members, identities, process states). Equal hashes at two
// drill-downs: the same wait-for graph, roots and classification. *dead: some process is dead (the
// crash grace period then depends on time alone).
uint64_t waits_signature(const net::WaitSummary& job, int64_t now_ns, int64_t timeout_ns, bool* dead);

}  // namespace scout::obs
