// A hang drill-down's wait snapshots, grouped and merged on their way to the leader
// (docs/observer-network.md, "Hangs across nodes"), so that what the leader receives follows what
// the job waits in, not how many ranks wait.
//
// Each node groups the members of every communicator of its (filtered) wait snapshot by their
// state: members whose process state, finalized flag, counters, marks (operations, not times) and
// in-flight records (all but their ring index and times) are equal are interchangeable for the
// wait-for analysis, and form one group: the state once (the first member's times and ring
// indexes), the member count, the members as runs of consecutive comm ranks with evenly spaced
// global ranks (a data-parallel group's 4,096 members are one run), and the members' identities
// (host, pid, GPU) only while the group has at most kIdentifiedMembers members (a rank that others
// wait for is in a small group; the 31 ranks waiting in a model-parallel AllReduce need none).
// Summaries merge (merge()): per communicator, groups with equal states add their members; the
// observers' channel merges them up a binomial tree (Channel::reduce_to_leader), so the leader
// receives one summary of the whole job in ceil(log2 N) messages. The leader expands it back into
// one member per comm rank (expand()) and judges it with the node-local hang detector, unchanged.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "observer/net/drill.h"
#include "observer/net/local_view.h"
#include "observer/net/rank_runs.h"

namespace scout::net {

// Members of one communicator in one state.
struct MemberGroup {
  // The state every member shares (MemberView's comm_rank and proc are unused; times, init and the
  // records' ring indexes are the first member's), and its process's state and times.
  MemberView state;
  uint8_t proc_state = 0;
  int64_t last_event_ns = 0, gone_ns = 0;
  uint32_t count = 0;                // members
  std::vector<RankRun> runs;         // ascending comm rank, disjoint, `count` members in all
  std::vector<ProcView> identities;  // one per member in run order, or none (count > kIdentifiedMembers)
};

// One communicator of the snapshot: its header (CommWaitView without members) and groups.
struct CommSummary {
  CommWaitView comm;  // members empty
  std::vector<MemberGroup> groups;
};

struct WaitSummary {
  std::vector<CommSummary> comms;  // ascending (comm_hash, nranks)
  bool empty() const { return comms.empty(); }
  // Members over every group (what expand() creates).
  uint64_t members() const;
};

// Groups the members of `w`.
WaitSummary summarize(const WaitSnapshot& w);
// Every node's snapshot summarized and merged, in order (tests; the leader gets this merged by the
// channel's tree).
WaitSummary summarize(const std::vector<NodeWaits>& nodes);

// What makes a group's members interchangeable, as bytes: its state without times and ring
// indexes, and its process state (equal bytes: the groups merge).
std::string state_key(const MemberGroup& g);

// Adds `b` to `a`: a communicator in both takes the latest progress and the stall rule with the
// larger threshold (name and node count from whichever has them); groups with equal states add
// their members (runs merged and coalesced; identities kept while the group stays small). A comm
// rank that both claim is kept once (the first), so a hostile summary cannot inflate a group.
void merge(WaitSummary& a, WaitSummary b);

// One member per comm rank of every group: a process per global rank (its identity if some group
// carried it, else host "", pid -(global rank + 1), no GPU), every member with its group's state.
WaitSnapshot expand(const WaitSummary& s);

// Bytes of a summary (layout in docs/observer-network.md, "Hangs across nodes"). Version byte first.
std::vector<uint8_t> encode_summary(const WaitSummary& s);
// Inverse; false with *error on a malformed, truncated or oversized message (never reads past the
// end; communicators within obs::kMaxCommRanks ranks, members within obs::kMaxRankSlots in all).
bool decode_summary(std::span<const uint8_t> bytes, WaitSummary* out, std::string* error);

// The merge the channel applies at every tree node (Channel::reduce_to_leader): decodes both,
// merges, encodes. A payload that does not decode is dropped (counted in *bad when given, the
// first error in *error); an empty payload is nothing.
std::vector<uint8_t> merge_encoded(std::vector<uint8_t> a, std::vector<uint8_t> b, int* bad = nullptr,
                                   std::string* error = nullptr);

}  // namespace scout::net
