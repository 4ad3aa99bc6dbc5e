// Drill-down: what a node sends the leader when the digests say something is wrong, and what the
// leader hands its Judge (docs/observer-network.md, "Drill-down"). A node's new or updated findings
// travel in one NodeReport per round (gathered from the nodes that have some). The records of the
// operations of a disagreeing stream that differ travel as votes, and what the ranks wait in (a
// hang drill-down) as wait snapshots, both merged on their way to the leader
// (observer/net/vote_summary.h, observer/net/wait_summary.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "observer/model/finding.h"
#include "observer/net/channel.h"
#include "observer/net/local_view.h"

namespace scout::net {

struct WaitSummary;

struct StreamKeyInfo {
  uint64_t comm_hash = 0;
  uint8_t func = 0;
  int nranks = 0;
  std::string comm_name;
};

// One node's findings for the leader (its new or updated ones since its last round). Every time in
// it is on the leader's clock.
struct NodeReport {
  int node = -1;  // filled by the leader from the sender
  std::vector<obs::Finding> findings;
};

// Bytes of a NodeReport (layout in docs/observer-network.md). Version byte first.
std::vector<uint8_t> encode_report(const NodeReport& r);
// Inverse; false with *error on a malformed or truncated message (never reads past the end).
bool decode_report(std::span<const uint8_t> bytes, NodeReport* out, std::string* error);

// Everything the leader received about one disagreeing stream (the nodes' votes merged up the
// tree, observer/net/vote_summary.h): per seqNumber, one record per rank.
struct RankVote {
  int comm_rank = -1;
  int global_rank = -1;
  int node = -1;  // node-rank that sent it; -1: not carried (a member of a group of many)
  shm::RecordSnapshot rec;
};
struct DigestDrill {
  StreamKeyInfo stream;
  uint64_t from = 0, to = 0;
  std::map<uint64_t, std::vector<RankVote>> votes;  // by seqNumber
};
// The ranks' waits as the leader judges them: one node's snapshot (node-rank `node`), or the whole
// job's, expanded from the merged wait summary (node -1).
struct NodeWaits {
  int node = -1;
  WaitSnapshot waits;
};

// Identity lookup for suspects: global rank -> identity (empty fields if unknown).
using Identities = std::map<int, RankIdentity>;

// The node findings the leader received in one round.
struct LeaderInbox {
  std::vector<obs::Finding> findings;
  int bad_reports = 0;      // contributions that did not decode (skipped)
  std::string first_error;  // "node-rank K: why" of the first one
};
LeaderInbox collect_reports(const std::vector<Contribution>& got);

// Decides findings from drill-downs on the leader. The observer's implementation is
// obs::CoreJudge (observer/cluster/core_judge.h): the node-local core's own consensus and hang
// detectors run over what the nodes sent, so each rule has one implementation.
class Judge {
 public:
  virtual ~Judge() = default;
  // Consensus over the records of a disagreeing stream (desync, sdc). `now_ns`: leader clock.
  virtual std::vector<obs::Finding> judge_digest(const DigestDrill& d, const Identities& ids, int64_t now_ns) = 0;
  // Job-wide wait-for analysis over the job's wait summary (every node's snapshot merged,
  // observer/net/wait_summary.h; hang, deadlock, crash); returns new, updated and closed findings.
  virtual std::vector<obs::Finding> judge_waits(const WaitSummary& job, int64_t now_ns) = 0;
  // No observer reports a stalled communicator any more: close what judge_waits holds open.
  virtual std::vector<obs::Finding> all_clear(int64_t now_ns) = 0;
  // When (leader clock, ns) the judge wants the nodes' wait snapshots again: a communicator ranks
  // wait in passes the stall threshold it is judged by then (docs/observer-network.md, "Hangs
  // across nodes"); 0: not needed.
  virtual int64_t waits_due_ns() const { return 0; }
  // When (leader clock, ns) the judge wants them once more because a communicator ranks wait in
  // passes the hang timeout (a stall it named becomes a hang); 0: not needed. Asked within the
  // drill-down repeat window like a stall (docs/observer-network.md, "Hangs across nodes").
  virtual int64_t hang_due_ns() const { return 0; }
};

// Converts every time in `w` from the local clock to the leader's (`offset_ns` = local - leader).
void shift_times(WaitSnapshot* w, int64_t offset_ns);
void shift_times(shm::RecordSnapshot* r, int64_t offset_ns);

}  // namespace scout::net
