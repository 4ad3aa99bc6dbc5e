// Typed evidence of findings: one struct per finding kind (docs/findings.md, "Evidence" of each
// kind), one serializer (to_json) and one reader (read_evidence) for all of them.
//
// Finding::evidence (observer/model/finding.h) stays a JSON object, because the store, the
// observers' channel and `scout findings --json` carry it as such and evidence of other shapes
// (the observer network's drill-down) exists; the detectors build it from these structs and
// `scout explain` reads it back through them.
//
// Each struct has exactly one field list (EvidenceFields<T>::list below): the JSON key, the
// member, and whether the key may be absent. to_json, read_evidence and the documentation check
// (test/unit/evidence_doc_test.cc against docs/findings.md) all walk that list, so a field is
// named once.
//
// Presence rules of the list:
//   required  the key is always written; a std::optional member is written as null when empty
//             (e.g. sdc `majority`: null when no strict majority) and read back as empty from null.
//   optional  the member is a std::optional and the key is left out when it is empty (e.g. the
//             `src`/`dst` of an op, only for point-to-point).
// A std::optional<std::optional<T>> member marked optional is "absent, null or a value".
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::obs {

// Version of the evidence shapes below, stored with each finding (store column
// findings.evidence_version, docs/store.md). Raise it when a key changes meaning or goes away;
// adding an optional key does not need a new version.
//   1  the shapes of the detectors;
//   2  replay's evidence declared (ReplaySdcEvidence, ReplaySlowLinkEvidence, the straggler's
//      `cause` and `replay`): a replay check's `peer` is always present (null when none).
constexpr int kEvidenceVersion = 2;

// ---- Shared shapes (docs/findings.md, "Shared shapes inside evidence") ----

// *comm*: a communicator.
struct EvComm {
  std::string hash;  // "0x" + 16 hex digits
  std::string name;  // "" when unnamed
  int nranks = 0;
};

// *op*: an operation. Point-to-point operations carry src and dst (comm ranks).
struct EvOp {
  std::string func;  // "AllReduce", "Send", ...
  uint64_t seq = 0;  // collectives: NCCL's seqNumber; p2p: scout's per-pair counter
  std::optional<int> src, dst;
};

// *vote group*: the ranks that voted `value`, largest group first.
template <class V>
struct EvVoteGroup {
  V value{};
  std::vector<int> ranks;       // global ranks (-1 where unknown)
  std::vector<int> comm_ranks;  // ranks in the communicator
};

// *wait edge*: global rank `rank` cannot finish `op` because of global rank `waits_for`.
struct EvWaitEdge {
  int rank = -1;
  int waits_for = -1;
  EvComm comm;
  EvOp op;
  std::string why;  // absent, not-started, dead, mismatch
};

// One rank inside a *comm state*.
struct EvRankState {
  int global_rank = -1;
  int comm_rank = -1;
  std::string state;                   // running, enqueued, idle, absent
  std::optional<EvOp> op;              // absent for idle ranks
  std::optional<EvOp> last_completed;  // null when it completed nothing
};

// *comm state*: one communicator of a wait-for chain.
struct EvCommState {
  EvComm comm;
  std::string cls;  // "class": absent, stuck, mismatch
  EvOp op;
  double stalled_ms = 0;
  int waiting_in_op = 0;
  std::vector<EvRankState> ranks;  // > 64 ranks: only those not running op
};

// ---- hang, deadlock, crash ----

// One root of a hang: {global_rank, reason, detail, process}, or for class stuck
// {reason: "stuck", comm, op}.
struct EvHangRoot {
  std::optional<int> global_rank;
  std::string reason;  // idle, gpu-blocked, running, dead, stuck
  std::optional<std::string> detail;
  std::optional<std::string> process;  // running, exited, dead
  std::optional<EvComm> comm;
  std::optional<EvOp> op;
};

// The `stall` part of a hang that was first reported as a stall (docs/findings.md, "stall"): when
// the root was first named and the stall threshold then.
struct EvStallNote {
  int64_t named_ns = 0;
  double threshold_ms = 0;
};

// Evidence of kind hang; also the `hang` part of a desync (class mismatch or stuck), which has
// no root / waiting_ranks when the ranks wait in different collectives.
// One (rank, channel, peer, direction) of a stuck collective as the progress table saw it
// (docs/observer.md, "Stuck collectives"): its steps posted, in the network, done there, handed to
// the GPU and consumed by it, and what that says.
struct EvStuckPath {
  int global_rank = -1;
  int peer = -1;    // the peer's global rank (-1 unknown)
  std::string dir;  // send, recv
  int channel = 0;
  int steps = 0;  // the ProxyOp's nSteps
  int posted = 0, in_net = 0, done = 0, gpu = 0, consumed = 0;
  int64_t last_ns = 0;  // its latest step state change
  // "stopped" (a send handed to the network never completes), "gpu" (received data the GPU never
  // consumes), "starved" (waiting for data that never comes), "done".
  std::string state;
};

// What scout found out about a stuck collective from its progress sources (docs/observer.md,
// "Stuck collectives"): the verdict, where it came from and the paths it rests on.
struct EvStuckTrace {
  std::string source;                              // "proxy" (ProxyStep progress), "replay", "none"
  std::string verdict;                             // "link", "gpu", "host", "none"
  std::optional<std::string> host;                 // verdict host: the host whose links stopped
  std::optional<std::vector<int>> channels_stuck;  // channels whose KernelCh never stopped on any rank
  std::optional<std::vector<int>> channels_done;   // channels that stopped on every rank it started on
  std::vector<EvStuckPath> paths;                  // stopped and gpu paths first, at most 64
  std::optional<int64_t> requested_ns;             // when the observer asked the members for a trace
  std::optional<int> acked;                        // members whose plugin answered the request
  std::optional<std::string> replay;               // source replay: the cycle's words
};

// What a replay cycle run while a collective inside one node was stuck found (docs/replay.md,
// "Deadlines"; docs/findings.md, "hang"): the `replay` part of a stuck stall or hang.
struct EvStuckReplay {
  uint64_t cycle = 0;
  std::string verdict;                 // "gpu", "link" (suspects named), "none"
  std::vector<int> ranks;              // the ranks named (global ranks)
  std::vector<std::string> timed_out;  // the recipes that did not finish by their deadline
  int recipes = 0;                     // recipes the cycle ran
  double deadline_ms = 0;              // each recipe's deadline
  int64_t named_ns = 0;                // when the verdict was applied to the finding
  std::string words;                   // the cycle's result in words (the summary's last part)
};

struct HangEvidence {
  std::string cls;  // "class": absent, stuck (desync: mismatch)
  std::optional<std::vector<EvHangRoot>> root;
  double stalled_ms = 0;
  int64_t last_progress_ns = 0;
  double timeout_ms = 0;
  std::optional<std::vector<int>> waiting_ranks;
  std::optional<std::vector<int>> blocked_elsewhere;  // stuck only
  std::vector<EvWaitEdge> chain;                      // closest to the root first, <= 256
  std::vector<EvCommState> comms;
  std::optional<EvStallNote> stall;     // the stall this hang was before it reached the timeout
  std::optional<EvStuckTrace> trace;    // class stuck: what its progress sources say
  std::optional<EvStuckReplay> replay;  // class stuck inside one node: the replay cycle run for it
};

// The threshold rule of a stall in numbers (docs/observer.md, "Stalls").
struct EvStallRule {
  int gaps = 0;         // progress gaps of the communicator in the window
  double p99_ms = 0;    // their nearest-rank p99 (0 with no gaps)
  double margin = 0;    // times the p99
  double floor_ms = 0;  // never below
  double cold_ms = 0;   // the threshold of a cold communicator that knows nothing (and the cap of `own`)
  int min_gaps = 0;
  // What the threshold rests on: "gaps" (min_gaps or more), "own" (cold: margin x held_ms),
  // "class" (cold: class_ms), "none" (cold: cold_ms), "given" (another observer's).
  std::optional<std::string> basis;
  std::optional<double> held_ms;   // cold: longest time one of its operations was held on a rank
  std::optional<double> class_ms;  // cold: threshold learned by a warm communicator of its class
};

// Evidence of kind stall: a hang's root named before the hang timeout.
struct StallEvidence {
  std::string cls;  // "class": absent, stuck
  std::vector<EvHangRoot> root;
  double stalled_ms = 0;
  int64_t last_progress_ns = 0;
  double threshold_ms = 0;  // the communicator's stall threshold in force
  double timeout_ms = 0;    // the hang timeout
  EvStallRule rule;
  int64_t named_ns = 0;              // when the observer first named the root
  std::optional<double> earlier_ms;  // longest earlier episode of this pause, when the job showed it before
  std::vector<int> waiting_ranks;    // class stuck: the ranks inside it
  std::optional<std::vector<int>> blocked_elsewhere;  // stuck only
  std::vector<EvWaitEdge> chain;
  std::vector<EvCommState> comms;
  std::optional<EvStuckTrace> trace;    // class stuck: what its progress sources say
  std::optional<EvStuckReplay> replay;  // class stuck inside one node: the replay cycle run for it
};

// Evidence of kind deadlock.
struct DeadlockEvidence {
  std::vector<EvWaitEdge> cycle;
  std::vector<EvCommState> comms;
  double stalled_ms = 0;
  double timeout_ms = 0;
};

// An operation of a crashed process still in flight.
struct EvOpenOp {
  EvComm comm;
  EvOp op;
  std::string state;  // record state name, "unknown" when the record is gone
};

// Evidence of kind crash.
struct CrashEvidence {
  int pid = 0;
  std::string host;
  bool finalized = false;
  int64_t last_event_ns = 0;  // its last plugin callback
  int64_t gone_ns = 0;        // when the observer saw it gone
  std::vector<EvOpenOp> open_ops;
  std::vector<int> waiting_ranks;
  std::vector<EvWaitEdge> chain;
};

// ---- desync, sdc, nan ----

// The value of a metadata vote.
struct EvMetaValue {
  std::string datatype;  // "float32", ...
  uint64_t count = 0;
  int root = -1;  // Broadcast and Reduce; -1 otherwise
};

// What a rank called at one position of its collective sequence (source "sequence").
struct EvSeqValue {
  std::string func;      // "AllReduce", ...
  std::string datatype;  // "float32", ...
  uint64_t count = 0;
  int root = -1;  // Broadcast and Reduce; -1 otherwise
};

// A position where the ranks still agreed, before the one they disagree at.
struct EvSeqAgreed {
  uint64_t position = 0;
  EvSeqValue value;
};

// Evidence of kind desync. source "sequence" fills position/fields/sequence_votes/agreed;
// source "metadata" fills fields/votes/majority/partial; source "hang"
// (or a metadata desync whose communicator then hung in different collectives) fills
// frontier_votes; either may carry `hang`.
struct DesyncEvidence {
  std::string source;  // metadata, hang, sequence
  EvOp op;
  std::optional<uint64_t> position;   // sequence: 0-based position in the communicator's collective sequence
  std::optional<std::string> fields;  // api, task
  std::optional<std::vector<EvVoteGroup<EvMetaValue>>> votes;
  std::optional<std::optional<EvMetaValue>> majority;  // present for metadata; null: none
  std::optional<bool> partial;
  std::optional<std::vector<EvVoteGroup<std::optional<EvOp>>>> frontier_votes;  // null: in none
  // sequence: what each rank called at `position`; null: not called (frozen at a deadlock)
  std::optional<std::vector<EvVoteGroup<std::optional<EvSeqValue>>>> sequence_votes;
  std::optional<std::vector<EvSeqAgreed>> agreed;  // sequence: the last positions before it that agreed
  std::optional<HangEvidence> hang;
};

// One vote of equivalent communicators: the communicators (and their ranks) that agree.
struct EvEquivVote {
  std::string value;  // fingerprint "0x..."
  std::vector<EvComm> comms;
  std::vector<int> ranks;  // global ranks
};

// Disagreement of equivalent communicators at one comm rank.
struct EvEquivDisagreement {
  int comm_rank = -1;
  std::vector<EvEquivVote> votes;
  std::optional<std::string> majority;  // null: no strict majority
};

// Evidence of kind sdc. check "recv" fills votes .. datatype; "send-equiv" / "recv-equiv" fill
// declaration, group and disagreements.
struct SdcEvidence {
  std::string check;  // recv, send-equiv, recv-equiv
  EvOp op;
  std::optional<std::vector<EvVoteGroup<std::string>>> votes;  // value: fingerprint "0x..."
  std::optional<std::optional<std::string>> majority;          // present for recv; null: none
  std::optional<int> voters;
  std::optional<int> nranks;
  std::optional<bool> partial;
  std::optional<uint64_t> fp_bytes;
  std::optional<uint32_t> fp_version;
  std::optional<uint64_t> bytes;
  std::optional<std::string> datatype;
  std::optional<std::string> declaration;
  std::optional<std::vector<EvComm>> group;
  std::optional<std::vector<EvEquivDisagreement>> disagreements;
};

// A rank whose send buffer held non-finite values.
struct EvNanCarrier {
  int global_rank = -1;
  int comm_rank = -1;
  uint32_t send_nan = 0;
  uint32_t send_inf = 0;
};

// The first operation of a NaN/Inf episode.
struct EvNanOrigin {
  std::optional<EvComm> comm;  // null when the communicator is unknown
  EvOp op;
  int64_t time_ns = 0;
  std::vector<EvNanCarrier> carriers;
};

// Evidence of kind nan.
struct NanEvidence {
  EvNanOrigin origin;
  uint64_t ops_with_nonfinite = 0;
  std::vector<int> ranks_with_nonfinite;
};

// ---- straggler, slowlink ----

// A straggler's lateness in one communicator.
struct EvStragglerComm {
  EvComm comm;
  int comm_rank = -1;
  int window_ops = 0;
  int late_ops = 0;
  int late_events = 0;
  double median_late_ms = 0;
  std::vector<double> series_ms;    // its own lateness signal, last 32 collectives
  std::vector<double> lateness_ms;  // arrival minus the earliest arrival
};

// A straggler's counts across its communicators.
struct EvStragglerAggregate {
  int window_ops = 0;
  int late_ops = 0;
  int late_events = 0;
};

// The straggler thresholds in force.
struct EvStragglerThresholds {
  double min_ms = 0;
  double rel = 0;
  double persist = 0;
  int min_late = 0;
  int window = 0;
  std::optional<double> z;                // persistence test: standard deviations over the background
  std::optional<double> noise_k;          // late threshold: median + noise_k x MAD of the class
  std::optional<double> late_ms;          // late threshold in force for the communicator class
  std::optional<double> background_rate;  // late rate the rank was compared with
};

// What replay found about a straggler's GPU (docs/findings.md, "straggler"): the cycle and, for
// cause "gpu", the GEMM recipe with its times there and the median of its class.
struct EvReplayCause {
  uint64_t cycle = 0;
  std::optional<std::string> recipe;
  std::optional<std::vector<double>> ms;  // its time per round
  std::optional<double> median_ms;
};

// Evidence of kind straggler.
struct StragglerEvidence {
  std::vector<EvStragglerComm> comms;
  EvStragglerAggregate aggregate;
  EvStragglerThresholds thresholds;
  // With replay on (docs/replay.md): "gpu", "host" or "unknown", and the cycle that decided it.
  std::optional<std::string> cause;
  std::optional<EvReplayCause> replay;
};

// A channel of the slow-link detector.
struct EvChannel {
  std::optional<EvComm> comm;  // null when the communicator is unknown
  std::string kind;            // coll, p2p
  std::string func;
  uint64_t bytes_bucket = 0;  // power of two
  std::vector<int> ranks;     // global ranks
  double median_ms = 0;
  double peer_median_ms = 0;
  double ratio = 0;
  int samples = 0;
  int peers = 0;
  std::optional<double> min_diff_ms;  // least excess over the peers counted as slow
  // Network links (kind "net" or "proxy": a directed pair judged from the link table).
  std::optional<std::string> source;  // "net" (net plugin connection), "proxy" (ProxyStep)
  std::optional<int> src, dst;        // global ranks of the sending and receiving end (-1 unknown)
  std::optional<double> gbps;         // bytes / busy time of the window, GB/s
};

// The slow-link thresholds in force.
struct EvSlowThresholds {
  double factor = 0;
  double min_ms = 0;
  int window = 0;
  std::optional<double> noise_k;  // a channel is slow beyond max(min_ms, noise_k x MAD of its peers)
  // Network links (classes net_link, net_endpoint).
  std::optional<int> min_transfers;
  std::optional<double> window_s;
  std::optional<int> confirm;
};

// Evidence of kind slowlink.
// A replay link sweep's measurement of a pair the live detector reports too (docs/findings.md,
// "slowlink"): the cycle, the slow directed pairs, the slowest direction's time and the cycle's
// link median, first round (as ReplaySlowLinkEvidence).
struct EvReplayLink {
  uint64_t cycle = 0;
  std::vector<std::string> recipes;
  double ms = 0;
  double median_ms = 0;
};

struct SlowLinkEvidence {
  std::string cls;  // "class": link, endpoint, comm; net_link, net_endpoint (network links)
  std::vector<EvChannel> slow;
  std::vector<EvChannel> normal;  // up to 8
  EvSlowThresholds thresholds;
  // Class endpoint naming a whole host (docs/observer.md, "Slow links", slow hosts): the host;
  // then `slow` holds its slow inter-host channels and `normal` inter-host channels between other
  // hosts (up to 8 each).
  std::optional<std::string> host;
  // Class link: replay's measurement of the same pair, kept when the live detector reports the
  // finding replay opened (observer/detect/slowlink.h).
  std::optional<EvReplayLink> replay;
};

// ---- replay (docs/findings.md: sdc "Replay", slowlink; docs/replay.md, "Verdicts") ----

// One check of a replay cycle that named a rank.
struct EvReplayCheck {
  std::string check;   // gemm-vote, gemm-self, link, coll
  std::string recipe;  // the recipe id ("gemm:bf16:4096x4096x4096", "link:3->2", ...)
  // gemm-vote: {outcome, majority, groups: [{value, voters}]}; gemm-self: {"round<k>": "0x..."};
  // link and coll: the fingerprints ({"expected", "got", ...}, replay/judge.cc).
  nlohmann::json votes;
  std::optional<int> peer;  // link: the sender (global rank); null otherwise
};

// A GPU of the cycle.
struct EvReplayGpu {
  int global_rank = -1;
  std::string gpu;  // UUID "GPU-..." or the record's name
};

// Evidence of an sdc finding of replay (source "replay"): one finding per rank.
struct ReplaySdcEvidence {
  std::string source;  // "replay"
  uint64_t cycle = 0;
  std::string trigger;                // periodic, straggler, sdc, slowlink, demand, cross
  std::string check;                  // the first check that named the rank (checks[0])
  std::string recipe;                 // its recipe
  nlohmann::json votes;               // its votes
  std::vector<EvReplayCheck> checks;  // every check that named the rank in the cycle
  std::vector<EvReplayGpu> gpus;      // the cycle's participants
  std::string gpu;                    // the rank's GPU
  // The latest cycle that named the rank again, when later than `cycle`: the evidence stays that
  // of the cycle that found it first (observer/replay/reporter.h).
  std::optional<uint64_t> last_cycle;
};

// The outlier rule of a replay link sweep (replay/outlier.h).
struct EvReplayThresholds {
  double min_ratio = 0;
  double min_ms = 0;
};

// A communicator spanning nodes that holds both ends of a pair replay measured across nodes:
// the ends' comm ranks in it (suspect first, then peer).
struct EvReplayComm {
  std::string comm;  // commHash, "0x" + 16 hex digits
  int nranks = 0;
  std::vector<int> ranks;  // [suspect's comm rank, peer's comm rank]
};

// Evidence of a slowlink finding of replay (class link, source "replay").
struct ReplaySlowLinkEvidence {
  std::string cls;     // "class": link
  std::string source;  // "replay"
  uint64_t cycle = 0;
  std::vector<std::string> recipes;  // the slow directed pairs
  double ms = 0;                     // the slowest direction's first-round time
  double median_ms = 0;              // the cycle's link median, first round
  EvReplayThresholds thresholds;
  // A pair across nodes: every spanning communicator holding both ends, so a live detector that
  // knows the far end by its comm rank only sees the pair (observer/detect/netlink.cc).
  std::optional<std::vector<EvReplayComm>> comms;
};

// ---- Field lists ----

namespace evidence_detail {
enum class Presence { kRequired, kOptional };
template <class S, class M>
struct Field {
  const char* name;
  M S::*member;
  Presence presence;
};
template <class S, class M>
constexpr Field<S, M> req(const char* name, M S::*member) {
  return {name, member, Presence::kRequired};
}
template <class S, class M>
constexpr Field<S, M> opt(const char* name, M S::*member) {
  return {name, member, Presence::kOptional};
}
}  // namespace evidence_detail

// EvidenceFields<T>::list(): a std::tuple of the fields of T, in documentation order.
template <class T>
struct EvidenceFields;

#define SCOUT_EVIDENCE_FIELDS(T, ...)      \
  template <>                              \
  struct EvidenceFields<T> {               \
    static constexpr auto list() {         \
      using namespace evidence_detail;     \
      using S = T;                         \
      return std::make_tuple(__VA_ARGS__); \
    }                                      \
  };

SCOUT_EVIDENCE_FIELDS(EvComm, req("hash", &S::hash), req("name", &S::name), req("nranks", &S::nranks))
SCOUT_EVIDENCE_FIELDS(EvOp, req("func", &S::func), req("seq", &S::seq), opt("src", &S::src), opt("dst", &S::dst))
SCOUT_EVIDENCE_FIELDS(EvWaitEdge, req("rank", &S::rank), req("waits_for", &S::waits_for), req("comm", &S::comm),
                      req("op", &S::op), req("why", &S::why))
SCOUT_EVIDENCE_FIELDS(EvRankState, req("global_rank", &S::global_rank), req("comm_rank", &S::comm_rank),
                      req("state", &S::state), opt("op", &S::op), req("last_completed", &S::last_completed))
SCOUT_EVIDENCE_FIELDS(EvCommState, req("comm", &S::comm), req("class", &S::cls), req("op", &S::op),
                      req("stalled_ms", &S::stalled_ms), req("waiting_in_op", &S::waiting_in_op),
                      req("ranks", &S::ranks))
SCOUT_EVIDENCE_FIELDS(EvHangRoot, opt("global_rank", &S::global_rank), req("reason", &S::reason),
                      opt("detail", &S::detail), opt("process", &S::process), opt("comm", &S::comm), opt("op", &S::op))
SCOUT_EVIDENCE_FIELDS(HangEvidence, req("class", &S::cls), opt("root", &S::root), req("stalled_ms", &S::stalled_ms),
                      req("last_progress_ns", &S::last_progress_ns), req("timeout_ms", &S::timeout_ms),
                      opt("waiting_ranks", &S::waiting_ranks), opt("blocked_elsewhere", &S::blocked_elsewhere),
                      req("chain", &S::chain), req("comms", &S::comms), opt("stall", &S::stall),
                      opt("trace", &S::trace), opt("replay", &S::replay))
SCOUT_EVIDENCE_FIELDS(EvStuckPath, req("global_rank", &S::global_rank), req("peer", &S::peer), req("dir", &S::dir),
                      req("channel", &S::channel), req("steps", &S::steps), req("posted", &S::posted),
                      req("in_net", &S::in_net), req("done", &S::done), req("gpu", &S::gpu),
                      req("consumed", &S::consumed), req("last_ns", &S::last_ns), req("state", &S::state))
SCOUT_EVIDENCE_FIELDS(EvStuckTrace, req("source", &S::source), req("verdict", &S::verdict), opt("host", &S::host),
                      opt("channels_stuck", &S::channels_stuck), opt("channels_done", &S::channels_done),
                      req("paths", &S::paths), opt("requested_ns", &S::requested_ns), opt("acked", &S::acked),
                      opt("replay", &S::replay))
SCOUT_EVIDENCE_FIELDS(EvStuckReplay, req("cycle", &S::cycle), req("verdict", &S::verdict), req("ranks", &S::ranks),
                      req("timed_out", &S::timed_out), req("recipes", &S::recipes), req("deadline_ms", &S::deadline_ms),
                      req("named_ns", &S::named_ns), req("words", &S::words))
SCOUT_EVIDENCE_FIELDS(EvStallNote, req("named_ns", &S::named_ns), req("threshold_ms", &S::threshold_ms))
SCOUT_EVIDENCE_FIELDS(EvStallRule, req("gaps", &S::gaps), req("p99_ms", &S::p99_ms), req("margin", &S::margin),
                      req("floor_ms", &S::floor_ms), req("cold_ms", &S::cold_ms), req("min_gaps", &S::min_gaps),
                      opt("basis", &S::basis), opt("held_ms", &S::held_ms), opt("class_ms", &S::class_ms))
SCOUT_EVIDENCE_FIELDS(StallEvidence, req("class", &S::cls), req("root", &S::root), req("stalled_ms", &S::stalled_ms),
                      req("last_progress_ns", &S::last_progress_ns), req("threshold_ms", &S::threshold_ms),
                      req("timeout_ms", &S::timeout_ms), req("rule", &S::rule), req("named_ns", &S::named_ns),
                      opt("earlier_ms", &S::earlier_ms), req("waiting_ranks", &S::waiting_ranks),
                      opt("blocked_elsewhere", &S::blocked_elsewhere), req("chain", &S::chain), req("comms", &S::comms),
                      opt("trace", &S::trace), opt("replay", &S::replay))
SCOUT_EVIDENCE_FIELDS(DeadlockEvidence, req("cycle", &S::cycle), req("comms", &S::comms),
                      req("stalled_ms", &S::stalled_ms), req("timeout_ms", &S::timeout_ms))
SCOUT_EVIDENCE_FIELDS(EvOpenOp, req("comm", &S::comm), req("op", &S::op), req("state", &S::state))
SCOUT_EVIDENCE_FIELDS(CrashEvidence, req("pid", &S::pid), req("host", &S::host), req("finalized", &S::finalized),
                      req("last_event_ns", &S::last_event_ns), req("gone_ns", &S::gone_ns),
                      req("open_ops", &S::open_ops), req("waiting_ranks", &S::waiting_ranks), req("chain", &S::chain))
SCOUT_EVIDENCE_FIELDS(EvMetaValue, req("datatype", &S::datatype), req("count", &S::count), req("root", &S::root))
SCOUT_EVIDENCE_FIELDS(EvSeqValue, req("func", &S::func), req("datatype", &S::datatype), req("count", &S::count),
                      req("root", &S::root))
SCOUT_EVIDENCE_FIELDS(EvSeqAgreed, req("position", &S::position), req("value", &S::value))
SCOUT_EVIDENCE_FIELDS(DesyncEvidence, req("source", &S::source), req("op", &S::op), opt("position", &S::position),
                      opt("fields", &S::fields), opt("votes", &S::votes), opt("majority", &S::majority),
                      opt("partial", &S::partial), opt("frontier_votes", &S::frontier_votes),
                      opt("sequence_votes", &S::sequence_votes), opt("agreed", &S::agreed), opt("hang", &S::hang))
SCOUT_EVIDENCE_FIELDS(EvEquivVote, req("value", &S::value), req("comms", &S::comms), req("ranks", &S::ranks))
SCOUT_EVIDENCE_FIELDS(EvEquivDisagreement, req("comm_rank", &S::comm_rank), req("votes", &S::votes),
                      req("majority", &S::majority))
SCOUT_EVIDENCE_FIELDS(SdcEvidence, req("check", &S::check), req("op", &S::op), opt("votes", &S::votes),
                      opt("majority", &S::majority), opt("voters", &S::voters), opt("nranks", &S::nranks),
                      opt("partial", &S::partial), opt("fp_bytes", &S::fp_bytes), opt("fp_version", &S::fp_version),
                      opt("bytes", &S::bytes), opt("datatype", &S::datatype), opt("declaration", &S::declaration),
                      opt("group", &S::group), opt("disagreements", &S::disagreements))
SCOUT_EVIDENCE_FIELDS(EvNanCarrier, req("global_rank", &S::global_rank), req("comm_rank", &S::comm_rank),
                      req("send_nan", &S::send_nan), req("send_inf", &S::send_inf))
SCOUT_EVIDENCE_FIELDS(EvNanOrigin, req("comm", &S::comm), req("op", &S::op), req("time_ns", &S::time_ns),
                      req("carriers", &S::carriers))
SCOUT_EVIDENCE_FIELDS(NanEvidence, req("origin", &S::origin), req("ops_with_nonfinite", &S::ops_with_nonfinite),
                      req("ranks_with_nonfinite", &S::ranks_with_nonfinite))
SCOUT_EVIDENCE_FIELDS(EvStragglerComm, req("comm", &S::comm), req("comm_rank", &S::comm_rank),
                      req("window_ops", &S::window_ops), req("late_ops", &S::late_ops),
                      req("late_events", &S::late_events), req("median_late_ms", &S::median_late_ms),
                      req("series_ms", &S::series_ms), req("lateness_ms", &S::lateness_ms))
SCOUT_EVIDENCE_FIELDS(EvStragglerAggregate, req("window_ops", &S::window_ops), req("late_ops", &S::late_ops),
                      req("late_events", &S::late_events))
SCOUT_EVIDENCE_FIELDS(EvStragglerThresholds, req("min_ms", &S::min_ms), req("rel", &S::rel),
                      req("persist", &S::persist), req("min_late", &S::min_late), req("window", &S::window),
                      opt("z", &S::z), opt("noise_k", &S::noise_k), opt("late_ms", &S::late_ms),
                      opt("background_rate", &S::background_rate))
SCOUT_EVIDENCE_FIELDS(EvReplayCause, req("cycle", &S::cycle), opt("recipe", &S::recipe), opt("ms", &S::ms),
                      opt("median_ms", &S::median_ms))
SCOUT_EVIDENCE_FIELDS(StragglerEvidence, req("comms", &S::comms), req("aggregate", &S::aggregate),
                      req("thresholds", &S::thresholds), opt("cause", &S::cause), opt("replay", &S::replay))
SCOUT_EVIDENCE_FIELDS(EvChannel, req("comm", &S::comm), req("kind", &S::kind), req("func", &S::func),
                      req("bytes_bucket", &S::bytes_bucket), req("ranks", &S::ranks), req("median_ms", &S::median_ms),
                      req("peer_median_ms", &S::peer_median_ms), req("ratio", &S::ratio), req("samples", &S::samples),
                      req("peers", &S::peers), opt("min_diff_ms", &S::min_diff_ms), opt("source", &S::source),
                      opt("src", &S::src), opt("dst", &S::dst), opt("gbps", &S::gbps))
SCOUT_EVIDENCE_FIELDS(EvSlowThresholds, req("factor", &S::factor), req("min_ms", &S::min_ms), req("window", &S::window),
                      opt("noise_k", &S::noise_k), opt("min_transfers", &S::min_transfers),
                      opt("window_s", &S::window_s), opt("confirm", &S::confirm))
SCOUT_EVIDENCE_FIELDS(EvReplayLink, req("cycle", &S::cycle), req("recipes", &S::recipes), req("ms", &S::ms),
                      req("median_ms", &S::median_ms))
SCOUT_EVIDENCE_FIELDS(SlowLinkEvidence, req("class", &S::cls), req("slow", &S::slow), req("normal", &S::normal),
                      req("thresholds", &S::thresholds), opt("host", &S::host), opt("replay", &S::replay))

SCOUT_EVIDENCE_FIELDS(EvReplayCheck, req("check", &S::check), req("recipe", &S::recipe), req("votes", &S::votes),
                      req("peer", &S::peer))
SCOUT_EVIDENCE_FIELDS(EvReplayGpu, req("global_rank", &S::global_rank), req("gpu", &S::gpu))
SCOUT_EVIDENCE_FIELDS(ReplaySdcEvidence, req("source", &S::source), req("cycle", &S::cycle),
                      req("trigger", &S::trigger), req("check", &S::check), req("recipe", &S::recipe),
                      req("votes", &S::votes), req("checks", &S::checks), req("gpus", &S::gpus), req("gpu", &S::gpu),
                      opt("last_cycle", &S::last_cycle))
SCOUT_EVIDENCE_FIELDS(EvReplayThresholds, req("min_ratio", &S::min_ratio), req("min_ms", &S::min_ms))
SCOUT_EVIDENCE_FIELDS(EvReplayComm, req("comm", &S::comm), req("nranks", &S::nranks), req("ranks", &S::ranks))
SCOUT_EVIDENCE_FIELDS(ReplaySlowLinkEvidence, req("class", &S::cls), req("source", &S::source), req("cycle", &S::cycle),
                      req("recipes", &S::recipes), req("ms", &S::ms), req("median_ms", &S::median_ms),
                      req("thresholds", &S::thresholds), opt("comms", &S::comms))

#undef SCOUT_EVIDENCE_FIELDS

template <class V>
struct EvidenceFields<EvVoteGroup<V>> {
  static constexpr auto list() {
    using namespace evidence_detail;
    using S = EvVoteGroup<V>;
    return std::make_tuple(req("value", &S::value), req("ranks", &S::ranks), req("comm_ranks", &S::comm_ranks));
  }
};

// ---- Serializer and reader ----

namespace evidence_detail {
template <class T, class = void>
struct has_fields : std::false_type {};
template <class T>
struct has_fields<T, std::void_t<decltype(EvidenceFields<T>::list())>> : std::true_type {};

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
nlohmann::json put(const T& v);
template <class T>
void get(const nlohmann::json& j, T& v);

// Writes field f of v into object j (an optional field only when set).
template <class S, class M>
void put_field(nlohmann::json& j, const Field<S, M>& f, const S& v) {
  const M& m = v.*(f.member);
  if constexpr (is_optional<M>::value) {
    if (f.presence == Presence::kOptional && !m) return;
  }
  j[f.name] = put(m);
}

// Reads field f of v from object j; throws std::invalid_argument when a required key is missing.
template <class S, class M>
void get_field(const nlohmann::json& j, const Field<S, M>& f, S& v) {
  M& m = v.*(f.member);
  auto it = j.find(f.name);
  if (it == j.end()) {
    if (f.presence == Presence::kRequired) throw std::invalid_argument(std::string("no key ") + f.name);
    m = M{};
    return;
  }
  if constexpr (is_optional<M>::value) {
    // "Absent, null or a value": a present null is an engaged outer optional.
    if constexpr (is_optional<typename M::value_type>::value) {
      if (f.presence == Presence::kOptional) {
        m.emplace();
        get(*it, *m);
        return;
      }
    }
  }
  try {
    get(*it, m);
  } catch (const std::invalid_argument& e) { throw std::invalid_argument(std::string(f.name) + ": " + e.what()); }
}

template <class T>
nlohmann::json put(const T& v) {
  if constexpr (is_optional<T>::value) {
    return v ? put(*v) : nlohmann::json(nullptr);
  } else if constexpr (has_fields<T>::value) {
    nlohmann::json j = nlohmann::json::object();
    std::apply([&](const auto&... f) { (put_field(j, f, v), ...); }, EvidenceFields<T>::list());
    return j;
  } else if constexpr (is_vector<T>::value) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& e : v) j.push_back(put(e));
    return j;
  } else {
    return nlohmann::json(v);
  }
}

template <class T>
void get(const nlohmann::json& j, T& v) {
  if constexpr (std::is_same_v<T, nlohmann::json>) {
    v = j;  // a value whose shape the field's comment gives (e.g. a replay check's votes)
  } else if constexpr (is_optional<T>::value) {
    if (j.is_null()) {
      v.reset();
    } else {
      v.emplace();
      get(j, *v);
    }
  } else if constexpr (has_fields<T>::value) {
    if (!j.is_object()) throw std::invalid_argument("expected an object");
    std::apply([&](const auto&... f) { (get_field(j, f, v), ...); }, EvidenceFields<T>::list());
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) throw std::invalid_argument("expected an array");
    v.clear();
    v.resize(j.size());
    for (size_t i = 0; i < j.size(); ++i) get(j[i], v[i]);
  } else {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!j.is_string()) throw std::invalid_argument("expected a string");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!j.is_boolean()) throw std::invalid_argument("expected true or false");
    } else {
      if (!j.is_number()) throw std::invalid_argument("expected a number");
    }
    v = j.get<T>();
  }
}

// Calls fn(name) for each key of T's field list.
template <class T, class Fn>
void for_each_name(Fn&& fn) {
  std::apply([&](const auto&... f) { (fn(std::string(f.name)), ...); }, EvidenceFields<T>::list());
}
}  // namespace evidence_detail

// The JSON object of `e`, shaped as docs/findings.md says.
template <class T>
nlohmann::json to_json(const T& e) requires evidence_detail::has_fields<T>::value {
  return evidence_detail::put(e);
}

// Reads evidence `j` into *out. False with *error (the key or value that does not fit) when a
// required key is missing or a value has another type; keys the struct does not know are
// ignored (the caller can list them with unknown_keys).
template <class T>
bool read_evidence(const nlohmann::json& j, T* out,
                   std::string* error = nullptr) requires evidence_detail::has_fields<T>::value {
  try {
    T v;
    evidence_detail::get(j, v);
    *out = std::move(v);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

// The keys of T's field list, in order (for documentation checks and for keys a reader skips).
template <class T>
std::vector<std::string> evidence_keys() {
  std::vector<std::string> out;
  evidence_detail::for_each_name<T>([&](const std::string& n) { out.push_back(n); });
  return out;
}

}  // namespace scout::obs
