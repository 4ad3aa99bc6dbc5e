// Drill-down: what a node sends the leader when the digests say something is wrong, and how the
// leader decides (docs/observer-network.md, "Drill-down"). One message per node per round at
// most, carrying: new or updated findings of the node, per-operation values of every disagreeing
// stream it contributed to, and per-rank progress of every stalled stream it takes part in.
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

// Per-operation values of one node for a disagreeing stream. When every local rank agreed, one
// (meta, fp) pair stands for all of them (`agree`), else one per local rank (`per_rank`, in the
// order of NodeStreamOps::ranks; `present` false where the rank's record was missing).
struct NodeOpValues {
  uint64_t seq = 0;
  bool agree = false;
  uint64_t meta = 0;
  uint64_t fp = 0;
  struct Value {
    bool present = false;
    uint64_t meta = 0;
    uint64_t fp = 0;
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
  uint64_t from = 0, to = 0;  // the digested range [from, to) of seqNumbers
  std::vector<std::pair<int, int>> ranks;  // local (comm_rank, global_rank)
  std::vector<NodeOpValues> ops;
};

struct NodeStall {
  StreamKeyInfo stream;
  uint64_t completed = 0;  // job-wide: every rank completed the ops below this seqNumber
  std::vector<RankProgressView> ranks;  // last_event_ns on the leader's clock
};

// One node's drill-down message.
struct NodeReport {
  int node = -1;  // filled by the leader from the sender
  std::vector<obs::Finding> findings;
  std::vector<NodeStreamOps> digests;
  std::vector<NodeStall> stalls;
  std::vector<RankIdentity> identities;
};

// Bytes of a NodeReport (layout in docs/observer-network.md). Version byte first.
std::vector<uint8_t> encode_report(const NodeReport& r);
// Inverse; false with *error on a malformed or truncated message (never reads past the end).
bool decode_report(std::span<const uint8_t> bytes, NodeReport* out, std::string* error);

// Everything the leader received about one disagreeing stream: per seqNumber, one vote per rank.
struct RankVote {
  int comm_rank = -1;
  int global_rank = -1;
  int node = -1;
  uint64_t meta = 0;
  uint64_t fp = 0;  // 0: no fingerprint
};
struct DigestDrill {
  StreamKeyInfo stream;
  uint64_t from = 0, to = 0;
  std::map<uint64_t, std::vector<RankVote>> votes;  // by seqNumber
};
struct StallDrill {
  StreamKeyInfo stream;
  uint64_t completed = 0;
  std::vector<std::pair<int, RankProgressView>> ranks;  // (node, progress)
};

// Identity lookup for suspects: global rank -> identity (empty fields if unknown).
using Identities = std::map<int, RankIdentity>;

// What the leader received in one round, merged: node findings, one DigestDrill per (stream,
// range) with every node's votes, one StallDrill per stream, identities of the ranks mentioned.
struct LeaderInbox {
  std::vector<obs::Finding> findings;
  std::vector<DigestDrill> digests;
  std::vector<StallDrill> stalls;
  Identities identities;
  int bad_reports = 0;      // contributions that did not decode (skipped)
  std::string first_error;  // "node-rank K: why" of the first one
};
LeaderInbox collect_reports(const std::vector<Contribution>& got);

// Decides findings from drill-downs on the leader. The node-local core's consensus and hang
// detectors implement it in the observer; MajorityJudge is the network layer's own.
class Judge {
 public:
  virtual ~Judge() = default;
  virtual std::vector<obs::Finding> judge_digest(const DigestDrill& d, const Identities& ids,
                                                 int64_t now_ns) = 0;
  virtual std::vector<obs::Finding> judge_stall(const StallDrill& d, const Identities& ids,
                                                int64_t now_ns) = 0;
};

// Strict-majority consensus (design brief section 4) over the drilled values, first operation
// of the range that disagrees: metadata first (kind desync), then receive fingerprints (kind
// sdc). Attributed when a value holds a strict majority of the communicator's ranks (the others
// are the suspects), inconclusive otherwise. Stalls (section 5): ranks that never enqueued the
// next operation while others did are absent (hang, attributed); if every rank enqueued it and
// none completed it, the hang is inconclusive (stuck in the collective).
class MajorityJudge : public Judge {
 public:
  std::vector<obs::Finding> judge_digest(const DigestDrill& d, const Identities& ids,
                                         int64_t now_ns) override;
  std::vector<obs::Finding> judge_stall(const StallDrill& d, const Identities& ids,
                                        int64_t now_ns) override;
};

// "AllReduce", ... for scout::shm::Func values 0..4; "func<N>" otherwise.
std::string func_name(uint8_t func);

}  // namespace scout::net
