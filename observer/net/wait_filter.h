// What of a node's wait snapshot travels in a hang drill-down (docs/observer-network.md, "Hangs
// across nodes"): only the communicators some rank of the job waits in. Every node marks the
// communicators in which one of its ranks has an operation in flight in a Bloom filter: a vector
// of words read as 64 bits each, three bits per communicator from a hash of (commHash, nranks);
// one bitwise-OR allreduce of that vector tells every node which communicators are waited in
// somewhere, and each keeps those (a member that never entered the awaited operation still
// travels: its node keeps the communicator because another node marked it) and the processes they
// name. A communicator nobody waits in adds no edge to the wait-for graph; a false positive only
// costs bytes (4,096 words hold 262,144 bits: with 4,097 communicators waited in, as at 131,072
// ranks blocked behind one, about 1 in 10,000 others passes).
#pragma once

#include <cstdint>
#include <vector>

#include "observer/net/local_view.h"

namespace scout::net {

// True when some member of `c` has an operation in flight (a record of one, or a numbered
// function issued beyond what it completed).
bool waits_in(const CommWaitView& c);

// Sets the bits of every communicator of `w` that a local member waits in. `buckets` is the vector
// of the OR allreduce (all zero before the first mark).
void mark_waited(const WaitSnapshot& w, std::vector<uint64_t>* buckets);

// Keeps the communicators of `w` whose bits are all set in `buckets` (after the OR allreduce) and
// the processes their members name, in their order (indexes rewritten).
void keep_waited(const std::vector<uint64_t>& buckets, WaitSnapshot* w);

}  // namespace scout::net
