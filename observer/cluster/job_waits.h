// Hangs across nodes (docs/observer.md#hangs; docs/observer-network.md, "Hangs across nodes").
//
// A node's observer sees only its own ranks, so a rank waiting in a communicator with ranks
// elsewhere cannot be followed to the root of a hang there. When a hang drill-down is asked for,
// every node sends the leader a snapshot of its waits (capture_waits: every communicator with a
// local member that is not finalized, each local member's progress counters and marks, and the
// records of the operations in flight on some local rank), and the leader rebuilds one Model of
// the whole job from all of them (merge_waits), on which the node-local core's own hang detector
// (observer/detect/hang.h) runs unchanged: absent / stuck / mismatch classification, the wait-for
// graph across communicators and nodes, roots, deadlocks, crashes.
#pragma once

#include <cstdint>
#include <vector>

#include "observer/model/model.h"
#include "observer/net/drill.h"
#include "observer/net/local_view.h"

namespace scout::obs {

// What the ranks of this node wait in, from `m` (times on this node's clock).
net::WaitSnapshot capture_waits(const Model& m);

// Adds every node's snapshot to `out` (an empty Model): processes (node_rank = the sender),
// communicators joined by (commHash, nranks), members, their in-flight records, counters, marks
// and last progress (the latest any node saw). A member that issued an operation another rank
// waits in, but whose node sent no record of it (complete there, or its record lost), gets a
// slot built from its counters, so it is not mistaken for absent. `now_ns`: leader clock.
void merge_waits(const std::vector<net::NodeWaits>& nodes, int64_t now_ns, Model* out);

// What the hang detector's outcome depends on in `nodes`, as one hash: per node (in node order),
// each process's identity and state, each communicator's key, whether it has been without progress
// for longer than `timeout_ns` at `now_ns`, each member's process, finalized flag, counters and
// marks (operations, not times) and its records (all but times). Equal hashes at two drill-downs:
// the same wait-for graph, roots and classification. *dead: some process is dead (the crash grace
// period then depends on time alone).
uint64_t waits_signature(const std::vector<net::NodeWaits>& nodes, int64_t now_ns, int64_t timeout_ns, bool* dead);

}  // namespace scout::obs
