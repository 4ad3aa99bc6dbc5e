// The digest protocol of the observer network (the full specification
// with sizes and costs is docs/observer-network.md, "The digest round").
//
// Once per interval every observer calls DigestExchange::round(). In healthy operation a round is
// ONE allreduce (element-wise MIN) of a fixed-size vector of uint64 words; a MAX is carried as
// the MIN of the complement (max(x) = ~min(~x)), so one call does both. The vector:
//   header  6 words: protocol-configuration key (MIN and ~MAX: every observer must run the same
//           settings), ~round time (leader clock, MAX), ~"I have findings for the leader",
//           ~"hang drill-down wanted", ~"something is stalled here" (flags, MAX).
//   stream slots  K x 10 words, one per (communicator, function) stream that has ranks on more than
//           one node and takes part this round (slot = hash(commHash, func, round) mod K):
//             key MIN, ~key (MAX)        min == max: one stream in the slot; else a collision,
//                                        both void this round, retried with another salt
//             completed MIN              job-wide: every rank finished the ops below this seqNumber
//             ~enqueued (MAX)            some rank enqueued up to here (ops pending if > completed)
//             from MIN, ~from (MAX),     which seqNumber range [from, to) the digest covers; in
//             to MIN, ~to (MAX)          the clear, so a node that did not digest the stream this
//                                        round still knows which records a drill-down needs
//             digest MIN, ~digest (MAX)  hash of the per-operation values of that range on this
//                                        node: metadata and received fingerprint of every local
//                                        rank, with "all local ranks agree" folded in; min == max
//                                        means every contributing node saw the same values
//   timing slots  T x 6 words, one per sampled operation (the last `timing_ops` of each digested
//           range): key MIN, ~key, earliest arrival MIN, ~latest arrival (MAX), ~latest end
//           (MAX), on the leader's clock, and the smallest gap MIN (a duration: no clock): cross-
//           node lateness = arrival - earliest arrival.
// Nodes without a stream leave its slot at the neutral all-ones value.
//
// A stream takes part in a round when hash(stream) mod P == round mod P; P (a power of two) is
// recomputed by every node from the slot occupancy of a whole cycle of P rounds so that about
// K/4 streams share the K slots per round: the vector stays the same size however many streams the job has, and each stream is
// compared every P rounds. The range a node digests is fixed by job-wide results of earlier
// rounds (from = the completed watermark of the stream's previous round, to = of its last one),
// so every node digests the same operations without any extra message. A stream's first range
// starts at seqNumber 0 (capped to the newest max_range_ops); when nodes propose different ranges
// (one saw the stream a round later) the slot is void and all restart at the smallest start. A
// disagreement whose drill-down is put off (drill_repeat_rounds) keeps its start, so the next
// drill-down covers every operation since the last one: a second corruption soon after a first is
// not skipped.
//
// Disagreement drills down: a slot whose digests differ is narrowed to the operations that differ,
// and every node that holds the stream casts its ranks' votes (their records of those operations),
// merged up the channel's tree by equal vote (vote_summary.h: the leader receives the groups of
// ranks that agree, not every rank's record). A hang drill-down (a stream whose job-wide completed
// count stands still while operations are pending for longer than `stall_ns`, a node whose own
// hang detector sees a hung communicator, a node whose communicator with ranks elsewhere has just
// stalled past its stall threshold (LocalView::stalls), or the leader's Judge wanting a snapshot
// when the largest node threshold or the hang timeout passes (Judge::waits_due_ns)) makes every
// node send a snapshot of what its ranks wait in, merged the same way (wait_summary.h). Node
// findings (flag in the header) travel in one NodeReport per node that has some
// (Channel::gather_to_leader: a 1-word SUM allreduce, then only the senders send). The leader
// decides with the Judge.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "observer/model/finding.h"
#include "observer/net/channel.h"
#include "observer/net/clock_sync.h"
#include "observer/net/drill.h"
#include "observer/net/local_view.h"

namespace scout::net {

struct StreamSlot;
struct VoteSummary;
struct TimingSlot;

struct DigestConfig {
  int stream_slots = 128;          // K: stream slots (10 words each)
  int timing_slots = 128;          // T: timing slots (6 words each)
  int timing_ops = 2;              // operations per digested range sampled for cross-node arrival
  uint64_t max_range_ops = 1024;   // digest covers at most the last this-many ops of its range
  int64_t stall_ns = 30000000000;  // job-wide no progress with ops pending this long: hang drill-down
  int drill_repeat_rounds = 10;    // drill a lasting disagreement or stall again after this many rounds
  int drill_split = 16;            // a disagreeing range is split into this many parts per narrowing sub-round
  int max_narrow_parts = 4096;     // parts in one narrowing sub-round at most (the first ones go on)
  int wait_buckets = 4096;         // hang drill-down: words of the "waited in" allreduce (wait_filter.h)
  // Words in the vector: 6 + 10 K + 6 T.
  size_t words() const { return 6 + 10 * size_t(stream_slots) + 6 * size_t(timing_slots); }
};

// A local stream that stands still job-wide (RoundResult::stalls).
struct StalledStream {
  uint64_t comm_hash = 0;
  uint8_t func = 0;
  uint64_t completed = 0;     // job-wide watermark
  uint64_t enqueued_max = 0;  // some rank enqueued up to here
  int64_t since_ns = 0;       // leader clock: last progress
};

// Cross-node timing of one operation of a local stream (times on the leader's clock).
struct CrossNodeTiming {
  uint64_t comm_hash = 0;
  uint8_t func = 0;
  int nranks = 0;
  uint64_t seq = 0;
  int64_t earliest_arrival_ns = 0;  // first rank to start, job-wide
  int64_t latest_arrival_ns = 0;
  int64_t latest_end_ns = 0;
  int64_t min_gap_ns = -1;  // smallest gap of any rank, job-wide (-1: none known)
  struct Local {
    int comm_rank = -1;
    int global_rank = -1;
    int64_t lateness_ns = 0;  // its arrival - earliest arrival
    int64_t gap_ns = -1;      // RankOpView::gap_ns
  };
  std::vector<Local> ranks;  // the local ranks
};

struct RoundResult {
  uint64_t round = 0;
  int64_t round_time_ns = 0;    // leader clock (latest "now" of all observers)
  int streams_placed = 0;       // local streams in the vector this round
  int streams_compared = 0;     // ... whose digests were compared (2+ nodes or 1: agree)
  int streams_disagreeing = 0;  // ... whose digests differed: drilled down
  int collisions = 0;           // ... voided by a slot collision (retried next time)
  int range_mismatches = 0;     // ... whose contributors disagreed on the range (not compared)
  int digest_gaps = 0;          // ... whose range was no longer retained here
  uint64_t partitions = 1;      // P for the next round
  bool gathered = false;        // a drill-down / findings gather ran
  bool waits_gathered = false;  // ... and it carried wait snapshots (a hang drill-down)
  uint64_t waits_members = 0;   // leader: members in the job's wait summary of this round
  std::vector<CrossNodeTiming> timings;
  std::vector<StalledStream> stalls;  // streams stalled as of this round (drilled for waits)
  // Leader only (leader clock): findings other nodes sent ...
  std::vector<obs::Finding> findings;
  // ... and what the Judge decided from drill-downs (new, updated and closed).
  std::vector<obs::Finding> decided;
  bool stalled_anywhere = false;  // some observer reports a stalled stream or communicator
  int narrowing_rounds = 0;       // allreduces that narrowed disagreeing ranges (narrow())
  int ops_drilled = 0;            // operations this node sent records of for digest drill-downs
  uint64_t ops_not_drilled = 0;   // operations of disagreeing ranges left out by max_narrow_parts
  int bad_reports = 0;            // leader: node messages (reports, wait summaries) that did not decode (skipped)
  std::string bad_report_error;   // the first such error
};

class DigestExchange {
 public:
  // `ch` and `judge` (used on the leader) must outlive this object. A new channel (after a
  // failure) needs a new DigestExchange: the state is per channel.
  DigestExchange(Channel* ch, Judge* judge, const DigestConfig& cfg = {});

  // One round (collective: every observer calls it once per interval). `now_ns` is the local
  // clock; `clock` converts local times to the leader's; `node_findings` are this node's new or
  // updated findings since its last round (they reach the leader's result). Throws ChannelError
  // when the channel fails and std::runtime_error when observers run different configurations.
  RoundResult round(LocalView& local, int64_t now_ns, const ClockEstimate& clock,
                    const std::vector<obs::Finding>& node_findings);

  const DigestConfig& config() const { return cfg_; }
  uint64_t rounds() const { return round_; }
  uint64_t partitions() const { return partitions_; }

 private:
  struct StreamState {
    bool have_w = false;
    uint64_t from = 0, w = 0;         // digest range [from, w) for the next participation
    uint64_t last_completed = ~0ull;  // job-wide watermark last seen
    int64_t changed_at = 0;           // round time it last moved
    bool stalled = false;
    uint64_t next_stall_drill = 0;     // round from which a lasting stall is drilled again
    uint64_t next_digest_drill = 0;    // same for a lasting digest disagreement
    bool stall_drill_pending = false;  // decided last round, asked for this round
  };
  struct Placed {
    const StreamView* view;
    StreamState* state;
    size_t slot;
    bool digested = false;
    bool due = false;              // disagreeing, and its drill-down is due here (settle_streams)
    uint64_t from = 0, to = 0;     // digested range (a disagreeing one: the range every node narrows)
    std::vector<uint64_t> values;  // this node's value per operation of [from, to); 0: not retained
  };
  // A stream's operations found to differ: this node sends its records of them.
  struct Drill {
    const Placed* placed;
    std::vector<uint64_t> seqs;  // ascending
  };
  // A sampled operation of a digested range, placed in a timing slot.
  struct TimingSample {
    size_t slot;
    uint64_t key;
    uint64_t comm_hash;
    uint8_t func;
    uint64_t seq;
    int nranks;
    std::vector<CrossNodeTiming::Local> arrivals;  // lateness_ns holds the arrival (leader clock)
  };
  static uint64_t stream_key(uint64_t comm_hash, uint8_t func);

  // The phases of round(), in order. Named views of the vector's words (digest.cc).
  StreamSlot stream_slot(std::vector<uint64_t>& v, size_t slot) const;
  TimingSlot timing_slot(std::vector<uint64_t>& v, size_t slot) const;
  // Whether this node asks for a hang drill-down, and whether something is stalled here.
  // `leader_now_ns`: this round's time on the leader's clock.
  void request_hang_drills(LocalView& local, const std::vector<StreamView>& streams, int64_t leader_now_ns,
                           bool* want_waits, bool* stalled_here);
  // Places the streams taking part this round in their slots, with digests and timing samples.
  void contribute_streams(LocalView& local, const std::vector<StreamView>& streams, const ClockEstimate& clock,
                          std::vector<uint64_t>& v, std::vector<Placed>* placed, std::vector<TimingSample>* samples,
                          RoundResult* res);
  // After the allreduce: compares each placed stream, advances its range and stall state, and
  // lists the streams to drill down.
  void settle_streams(std::vector<uint64_t>& v, std::vector<Placed>& placed, RoundResult* res);
  // After settle_streams, on every node when some slot disagrees: narrows each disagreeing range
  // by splitting it into drill_split parts per sub-round (one MIN allreduce of a MIN and a MAX
  // word per part, plus a "drill wanted" word per stream in the first) until the parts that
  // differ are single operations. Returns this node's drills (streams it holds, wanted by some
  // node: not drilled within drill_repeat_rounds).
  // `*any_drill` becomes true when some node drills (the same on every node: a vote gather follows).
  std::vector<Drill> narrow(LocalView& local, std::vector<uint64_t>& v, std::vector<Placed>& placed, RoundResult* res,
                            bool* any_drill);
  // This node's value of operation `seq` of a placed stream (0: not retained).
  uint64_t value_of(LocalView& local, Placed& p, uint64_t seq);
  // Cross-node timings of the samples whose slot did not collide.
  void read_timings(std::vector<uint64_t>& v, const std::vector<TimingSample>& samples, RoundResult* res) const;
  // Recomputes P at the end of a cycle from the slot occupancy.
  void update_partitions(size_t occupied);
  // On every node when a hang drill-down is asked for: this node's wait snapshot, narrowed to the
  // communicators some node waits in (one MAX allreduce of wait_buckets words; wait_filter.h).
  WaitSnapshot narrowed_waits(LocalView& local);
  // This node's findings for the leader (leader clock; none on the leader itself).
  NodeReport node_report(const ClockEstimate& clock, const std::vector<obs::Finding>& node_findings);
  // This node's votes (its ranks' records, leader clock) for the operations of `drills`.
  VoteSummary node_votes(LocalView& local, const ClockEstimate& clock, const std::vector<Drill>& drills);
  // A digest drill-down (every node): this node's votes merged up the channel's tree
  // (vote_summary.h); on the leader, the job's votes expanded and judged per stream.
  void gather_votes(LocalView& local, const ClockEstimate& clock, const std::vector<Drill>& drills, RoundResult* res);
  // A hang drill-down (every node): this node's narrowed wait snapshot, summarized and merged up
  // the channel's tree (wait_summary.h); on the leader, the job's summary expanded and judged.
  void gather_waits(LocalView& local, const ClockEstimate& clock, RoundResult* res);
  // Gathers the nodes' findings on the leader.
  void exchange_reports(const NodeReport& rep, RoundResult* res);

  Channel* ch_;
  Judge* judge_;
  DigestConfig cfg_;
  uint64_t config_key_;
  uint64_t round_ = 0;
  uint64_t partitions_ = 1;
  double cycle_streams_ = 0;          // estimated streams seen in the current cycle of P rounds
  uint64_t cycle_rounds_ = 0;         // rounds of the current cycle so far
  uint64_t next_local_drill_ = 0;     // round from which a local stall asks for a drill-down again
  uint64_t next_waits_drill_ = 0;     // round from which any stall may ask for wait snapshots again (job-wide)
  uint64_t stall_episodes_ = 0;       // LocalView::stalls().episodes at the last round
  bool stall_drill_pending_ = false;  // a new stall episode asks for wait snapshots (when allowed)
  int64_t due_asked_ = 0;             // leader: the Judge's waits_due_ns() last asked for
  int64_t hang_asked_ = 0;            // leader: the Judge's hang_due_ns() last asked for
  std::unordered_map<uint64_t, StreamState> state_;
};

}  // namespace scout::net
