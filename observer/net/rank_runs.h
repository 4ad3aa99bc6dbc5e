// Runs of ranks: the compact member lists of the drill-down summaries merged up the observers'
// tree (observer/net/wait_summary.h, observer/net/vote_summary.h; docs/observer-network.md). A
// data-parallel communicator's 4,096 members, one per node, are one run: consecutive comm ranks
// whose global ranks are evenly spaced.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace scout::net {

// A summary's group of members (MemberGroup, VoteGroup) carries its members' identities while it
// has at most this many members: a rank that others wait for, or that disagrees, is in a small group.
constexpr uint32_t kIdentifiedMembers = 16;

// Comm ranks [comm_rank, comm_rank + count) with global ranks global_rank + i * stride.
struct RankRun {
  int32_t comm_rank = 0;
  int32_t global_rank = 0;
  int32_t count = 0;
  int32_t stride = 1;
};

// One past the last comm rank of `r`.
inline int64_t run_end(const RankRun& r) { return int64_t(r.comm_rank) + r.count; }

// Sorts `runs` by comm rank, drops comm ranks claimed twice (the first claim stays) and coalesces
// neighbours that continue each other into the fewest runs.
std::vector<RankRun> normalize_runs(std::vector<RankRun> runs);

// Members of `runs` (the sum of their counts).
uint32_t run_members(const std::vector<RankRun>& runs);

// (comm rank, global rank) of every member of `runs`, in order.
std::vector<std::pair<int, int>> run_ranks(const std::vector<RankRun>& runs);

}  // namespace scout::net
