// Drill-down: what a node sends the leader when the digests say something is wrong, and what the
// leader hands its Judge (docs/observer-network.md, "Drill-down"). One message per node per round
// at most, carrying: new or updated findings of the node and the records of the operations of each
// disagreeing stream that differ. What the ranks wait in (a hang drill-down) travels separately,
// merged on its way to the leader (observer/net/wait_summary.h).
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

// Records of one operation on one node for a disagreeing stream. When every local rank agreed
// (same metadata hash and receive fingerprint), one record stands for all of them (`agree`),
// else one per local rank (`per_rank`, in the order of NodeStreamOps::ranks; `present` false
// where the rank's record was missing).
struct NodeOpValues {
  uint64_t seq = 0;
  bool agree = false;
  shm::RecordSnapshot rec;
  struct Value {
    bool present = false;
    shm::RecordSnapshot rec;
  };
  std::vector<Value> per_rank;
};

struct StreamKeyInfo {
  uint64_t comm_hash = 0;
  uint8_t func = 0;
  int nranks = 0;
  std::string comm_name;
};

struct NodeStreamOps {
  StreamKeyInfo stream;
  uint64_t from = 0, to = 0;               // the digested range [from, to) of seqNumbers
  std::vector<std::pair<int, int>> ranks;  // local (comm_rank, global_rank)
  std::vector<NodeOpValues> ops;
};

// One node's drill-down message. Every time in it is on the leader's clock.
struct NodeReport {
  int node = -1;  // filled by the leader from the sender
  std::vector<obs::Finding> findings;
  std::vector<NodeStreamOps> digests;
  std::vector<RankIdentity> identities;
};

// Bytes of a NodeReport (layout in docs/observer-network.md). Version byte first.
std::vector<uint8_t> encode_report(const NodeReport& r);
// Inverse; false with *error on a malformed or truncated message (never reads past the end).
bool decode_report(std::span<const uint8_t> bytes, NodeReport* out, std::string* error);

// Everything the leader received about one disagreeing stream: per seqNumber, one record per rank.
struct RankVote {
  int comm_rank = -1;
  int global_rank = -1;
  int node = -1;
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

// What the leader received in one round, merged: node findings, one DigestDrill per (stream,
// range) with every node's records, identities of the ranks mentioned.
struct LeaderInbox {
  std::vector<obs::Finding> findings;
  std::vector<DigestDrill> digests;
  Identities identities;
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
};

// Converts every time in `w` from the local clock to the leader's (`offset_ns` = local - leader).
void shift_times(WaitSnapshot* w, int64_t offset_ns);
void shift_times(shm::RecordSnapshot* r, int64_t offset_ns);

}  // namespace scout::net
