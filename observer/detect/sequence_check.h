// Sequence check (docs/observer.md, "Sequence"; docs/findings.md, "desync").
//
// NCCL pairs the collectives of a communicator by their position in each rank's call order,
// while the other checks match records by (function, seqNumber). A rank that calls another
// collective, skips one or makes extra ones is out of position: from then on its records at a key
// are other calls than its peers'. This check compares, per communicator and position, what every
// rank called there (function, datatype, count, root: the metadata check's value, with the API's
// datatype and count when every voter recorded them), from the per-rank positions the Model keeps
// (RankProgress::seq_window). A rank whose position is unknown (records lost) does not vote until
// it is known again.
//
// At the first position where the ranks that reached it disagree, a strict majority of the
// communicator names the others; without one (two ranks, one against one) the equivalent
// communicators of its class vote with the value they agreed on at that position (as class_vote.h
// does for metadata): communicators of the same comm_class() whose agreed values were equal at
// every position both kept. One desync finding per communicator (source "sequence"); the check
// stops there for that communicator (every later position is off by the same step).
//
// While a sequence desync is open in a communicator, what follows from it is not reported again:
// metadata and fingerprint votes of its operations at or after the position (suppresses()), and
// hangs and deadlocks that involve the communicator (fold(): their wait-for evidence is added
// to the desync as `hang`).
//
// A deadlock cycle can also show a sequence divergence the values cannot: a rank that runs ahead
// (an extra step) makes the same calls as its peers, only earlier. At that frozen point every
// rank's sequence is final, so in a communicator of the cycle the ranks that have not called the
// position vote "none" (frozen()): when a strict majority of the communicator has not called
// the collective that a minority is blocked in, the minority left the common order.
//
// Cost: a communicator is looked at only when some rank's sequence changed (Comm::seq_stamp) or a
// class vote is pending; each position is compared once, in O(ranks). Memory: kSeqWindow
// positions per comm rank in the Model, kHistory agreed positions per communicator here.
#pragma once

#include <compare>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/vote.h"
#include "observer/detect/comm_waits.h"
#include "observer/detect/metadata_check.h"
#include "observer/model/evidence.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"

namespace scout::obs {

// What a rank called at one position.
struct SeqValue {
  uint8_t func = 0;
  MetaValue meta;
  auto operator<=>(const SeqValue&) const = default;
};
// The value of entry `e`: its function and, when `api`, the API's datatype and count (else the task's).
SeqValue seq_value(const SeqEntry& e, bool api);
// The evidence value of `v`.
EvSeqValue ev_seq(const SeqValue& v);

class SequenceCheck {
 public:
  // Compares the new positions of every communicator whose members are all known and reports
  // the first disagreement of each (finding kind desync, source "sequence") on `board`; votes
  // pending two-rank disagreements with the equivalent communicators. Takes the positions it
  // decided out of the ranks' windows. `now_ns`: observer clock.
  void pass(Model& m, int64_t now_ns, FindingBoard& board);

  // True when `op` of `c` comes at or after an open sequence desync of `c` (some record of it at
  // a later or equal position, or at an unknown one): its metadata and fingerprint votes follow
  // from the desync and are not reported.
  bool suppresses(const Comm& c, const Op& op) const;
  // True when `c` has an open sequence desync (reported, or waiting for its class vote).
  bool diverged(const CommKey& c) const { return open_.count(c) > 0; }

  // If one of `comms` has an open sequence desync, adds `hang` (a hang or deadlock involving
  // it) to that finding's evidence, reports it again and returns true; the caller then reports
  // nothing for the hang. False when none has.
  bool fold(const Model& m, const std::vector<const Comm*>& comms, const HangEvidence& hang, int64_t now_ns,
            FindingBoard& board);

  // Frozen-point vote of `c` (a communicator of a deadlock cycle, stalled; `w` its waits): the
  // ranks blocked in `w.op` vote with what they called there, the ranks that have not called it
  // vote none. When none holds a strict majority of the communicator, reports the ranks that
  // called it as a sequence desync (with `hang` as its hang evidence) and returns true.
  bool frozen(const Model& m, const Comm& c, const CommWaits& w, const HangEvidence& hang, int64_t now_ns,
              FindingBoard& board);

  static constexpr size_t kHistory = 256;    // agreed positions kept per communicator
  static constexpr int kMaxPasses = 400;     // passes a two-rank disagreement waits for its class
  static constexpr int kQuietPasses = 20;    // ... before it is reported as inconclusive meanwhile
  static constexpr size_t kAgreedShown = 8;  // agreed positions listed in evidence

 private:
  struct Agreed {
    uint64_t pos = 0;
    SeqValue v;
    bool api = false;
  };
  struct Divergence {
    uint64_t pos = 0;
    bool decided = false;                // attributed (in the communicator or by its class), or frozen
    int passes = 0;                      // passes waiting for a class vote
    bool reported = false;               // on the board (a one-against-one waits kQuietPasses first)
    std::optional<nlohmann::json> hang;  // the hang or deadlock folded into it
    std::string hang_words;              // its summary's tail
    Finding f;
  };
  struct State {
    uint64_t next = 0;            // first position not yet agreed
    uint64_t stamp = UINT64_MAX;  // Comm::seq_stamp when last looked at
    std::deque<Agreed> agreed;    // last kHistory agreed positions, ascending
    std::string cls;              // comm_class()
  };
  // One position's ballots (comm rank, value) and the ranks that have not reached it yet.
  struct Ballots {
    std::vector<std::pair<int, SeqValue>> votes;
    std::vector<const SeqEntry*> entries;  // same order as votes
    bool api = true;
    bool waiting = false;
  };
  Ballots collect(Comm& c, uint64_t pos) const;
  // Compares the positions of `c` from st.next on. A disagreement opens a Divergence; in the
  // `settle` round (after every communicator's new positions were compared, so that its class has
  // agreed what it could) a one-against-one is voted with the class and reported.
  void check(const Model& m, Comm& c, State& st, int64_t now_ns, FindingBoard& board, bool settle);
  // Votes a disagreement with the equivalent communicators of its class; true when decided.
  bool class_vote(const Model& m, const Comm& c, const State& st, const Ballots& b, uint64_t pos,
                  VoteResult<SeqValue>* vote, nlohmann::json* cls) const;
  Finding finding(const Model& m, const Comm& c, const State& st, uint64_t pos,
                  const VoteResult<std::optional<SeqValue>>& vote, const std::vector<std::pair<int, OpId>>& ops,
                  bool api, int64_t first_ns, int64_t now_ns) const;

  std::map<CommKey, State> state_;
  std::map<CommKey, Divergence> open_;
};

// Dedup key of the sequence desync of `c` at position `pos`.
std::string sequence_desync_key(const Comm& c, uint64_t pos);

}  // namespace scout::obs
