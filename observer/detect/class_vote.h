// Equivalent communicators found automatically (docs/observer.md, "Equivalent communicators").
//
// A metadata disagreement inside a small communicator often has no strict majority: in a group
// of two ranks one side cannot out-vote the other. But the job usually has other communicators
// doing the same work, e.g. the TP groups of every data-parallel replica: same class
// (comm_class(): name stem, ranks, nodes) and, so far, the same recorded operation sequence
// (function, datatype, count and root at every (func, seqNumber) both have judged). Those
// communicators form an equivalence class; their ranks vote too. For an inconclusive
// disagreement of communicator C at key K, every rank of C and every rank of each equivalent
// communicator that recorded K in agreement votes with its value; with a strict majority of that
// electorate, the ranks of C outside it are named (an attributed desync under the same key as the
// inconclusive one, which it replaces). Equivalence is re-checked at every vote: a communicator
// whose sequence differed anywhere in the kept history is not a peer.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "observer/detect/metadata_check.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"

namespace scout::obs {

class ClassVote {
 public:
  // Keeps what `op` of `c` recorded once its metadata was voted (`meta`): the agreed value, or,
  // for an inconclusive disagreement of a collective, the ballots for a later class vote.
  void record(const Model& m, const Comm& c, const Op& op, const MetaOutcome& meta);
  // Votes every pending disagreement with its equivalent communicators; reports the attributed
  // desync when a strict majority names ranks. Pending disagreements are kept for kMaxPasses
  // calls (the peers may judge the same key a little later), then dropped (the inconclusive
  // finding stays).
  void resolve(const Model& m, int64_t now_ns, FindingBoard& board);

  static constexpr size_t kHistoryPerComm = 4096;  // agreed keys kept per communicator
  static constexpr int kMaxPasses = 400;

 private:
  using Key = std::pair<uint8_t, uint64_t>;  // (func, seq)
  struct Value {
    MetaValue v;
    bool api = false;
    bool operator==(const Value&) const = default;
  };
  struct History {
    std::map<Key, Value> agreed;
    std::deque<Key> order;
  };
  struct Pending {
    CommKey comm;
    Op op;
    MetaOutcome meta;
    int passes = 0;
  };
  // True when `peer` recorded the same value as `mine` at every key both kept, and at least one.
  static bool equivalent(const History& mine, const History& peer);

  std::map<CommKey, History> history_;
  std::map<CommKey, std::string> class_of_;
  std::vector<Pending> pending_;
};

}  // namespace scout::obs
