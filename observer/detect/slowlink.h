// Communication-slow communicators and links (docs/observer.md#slow-links).
//
// A "channel" is a communicator (for its collectives) or a point-to-point pair inside one (for
// its send/recv). For each completed operation the transfer time is
//     D = latest GPU end - latest GPU start
// (the time the operation took once every participant had arrived, so stragglers do not count).
// Channels are compared with their peers: channels of the same class (collective or p2p, function,
// message size rounded down to a power of two, number of ranks, number of nodes the communicator
// spans, and the stem of its name: "tp3" -> "tp"), e.g. every TP group's AllReduce of 8 MiB, not
// the DP pairs' (which cross nodes and run at network speed). Each channel keeps the last `window` durations per class; with at least
// `min_samples` of them its median m is compared with the median of its peers' medians r:
//     slow when m >= factor * r and m - r >= max(min_ms, noise_k * MAD of the peers' samples)
// (the job's own noise: on a busy host every transfer time scatters, and the floor min_ms is
// only the least difference that counts), and the same holds for the channel's lower quartile
// (a slow link is slow in most of its operations; a burst of noise lifts only some).
// At least two channels with samples are needed in a class. A channel counts as slow only once it
// has stayed slow while `confirm` more of its operations completed and its slow episode has
// lasted `confirm_ns` of the job's time, from the end of its first slow operation to the end of
// its latest (an episode ends once `confirm` operations complete while it is not slow; a
// burst of scheduling noise on a busy host moves a median for up to a second, a bad link keeps it
// there); a channel that is slow but not yet confirmed neither accuses nor clears anyone.
//
// Intersection names the culprit:
//   endpoint  a host all of whose compared inter-host channels look slow (below), its confirmed
//             slow ones reaching at least two other hosts, while at least one inter-host channel
//             between other hosts is normal (a slow NIC: needs three hosts; suspects: the host's
//             ranks); or a rank all of whose compared channels (at least two) are slow;
//   link      a slow two-rank channel (TP pair, p2p pair) not explained by an endpoint, or a slow
//             larger communicator where exactly two members have no normal channel elsewhere;
//   comm      a slow communicator that no rank or pair explains (inconclusive).
// For the host rule an inter-host channel "looks slow" when it is slow (confirmed or pending) or
// its median or its last `min_samples` operations take at least `factor` times its peers'; it is
// normal otherwise. A host is suspected when every compared inter-host channel touching it looks
// slow, those reach at least two other hosts, and an inter-host channel between other hosts is
// normal; it is reported once its confirmed ones reach two other hosts, or once every one has
// completed `confirm` + `window` operations while the host stayed suspected, confirmed or not
// (one still unconfirmed by then is held back by the peers' noise). The inter-host
// channels of a suspected or reported host are held, neither reported nor cleared, for as long
// as it stays so: the channels of a slow host slow down together but are confirmed at their own
// pace, so a slow host is one finding rather than links or communicators first. Once reported, a host
// stays open until none of its inter-host channels looks slow and at least one is normal.
// Findings stay open while the channels are slow and close when they are not. A link finding a
// replay link sweep opened first (same dedup key, observer/replay/reporter.h) keeps replay's
// measurement as `evidence.replay` when this detector reports it (docs/findings.md, "slowlink").
#pragma once

#include <compare>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "observer/detect/judged_op.h"
#include "observer/model/evidence.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"

namespace scout::obs {

struct SlowLinkConfig {
  int window = 16;                     // SCOUT_OBSERVER_SLOW_WINDOW
  int min_samples = 4;                 // samples a channel needs before it is compared
  double factor = 2.0;                 // SCOUT_OBSERVER_SLOW_FACTOR
  int64_t min_ns = 1'000'000;          // SCOUT_OBSERVER_SLOW_MIN_MS
  int confirm = 8;                     // operations a channel must stay slow (window / 2)
  int64_t confirm_ns = 2'000'000'000;  // ... and time (ns, by its operations' ends); not a setting
  double noise_k = 3.0;                // SCOUT_OBSERVER_SLOW_NOISE_K (MADs of the peers' samples)
};

class SlowLinkDetector {
 public:
  explicit SlowLinkDetector(SlowLinkConfig cfg) : cfg_(cfg) {}
  void observe(const Model& m, const JudgedOp& op);
  void evaluate(const Model& m, int64_t now_ns, FindingBoard& board);
  // The hosts whose inter-host channels the latest evaluate held: suspected slow hosts and slow
  // hosts still reported (docs/observer.md, "Slow links"). Other detectors leave what touches
  // them to the host finding. Host names as the processes report them.
  const std::set<std::string>& held_hosts() const { return held_hosts_; }

  struct Channel {
    CommKey comm;
    int a = -1, b = -1;  // p2p: comm ranks (a < b); collective: -1
    uint8_t func = 0;
    int bucket = 0;  // floor(log2(bytes))
    auto operator<=>(const Channel&) const = default;
  };

 private:
  struct Sample {
    int64_t dur_ns;
    OpId id;
    int64_t end_ns = 0;  // latest GPU end of the operation
  };
  struct Judged {
    Channel ch;
    std::vector<int> procs;
    double median_ns = 0, low_ns = 0, peer_ns = 0, noise_ns = 0;  // low: lower quartile
    double recent_ns = 0;                                         // median of the last min_samples operations
    int samples = 0, peers = 0;
    uint64_t fresh = 0;  // operations completed since the previous evaluation
    bool slow = false;
    bool pending = false;  // slow, not yet confirmed: neither accuses nor clears (slow is set too)
    OpId first_slow;
  };
  struct Hosts;  // the host rule's view of one evaluation (slowlink.cc)
  EvChannel channel(const Model& m, const Judged& j) const;
  EvSlowThresholds thresholds() const;
  // "AllReduce of 256 KiB on dp2 (0x...) takes 5.87 ms (median) vs 1.13 ms on 3 peer channels".
  std::string where(const Model& m, const Judged& j) const;
  // Channels with enough samples compared with their class (same function, size class, number of
  // ranks and nodes, communicator name stem); slow ones not yet persistent are marked pending.
  // Updates runs_.
  std::vector<Judged> judge_channels(const Model& m);
  // The host rule (docs/observer.md, "Slow links"): the suspected and the slow hosts of `judged`
  // (every compared channel, pending ones included) and the channels held back.
  // Updates suspect_ops_.
  Hosts judge_hosts(const Model& m, const std::vector<Judged>& judged);
  // Reports one slowlink finding of class endpoint per slow host of `h`; adds its dedup key.
  void report_hosts(const Model& m, const std::vector<Judged>& judged, const Hosts& h, int64_t now_ns,
                    FindingBoard& board, std::set<std::string>* reported) const;
  // The slow endpoints of `judged`: ranks with at least two slow channels and no normal one
  // (*normal_n: normal channels per rank); *quiet: those left to a host finding or held back.
  std::set<int> endpoints_of(const Model& m, const std::vector<Judged>& judged, const Hosts& hosts,
                             std::map<int, int>* normal_n, std::set<int>* quiet) const;
  // A slowlink finding's kind, communicator, key and times for channel `j`.
  Finding base_finding(const Model& m, const Judged& j, int64_t now_ns) const;
  // One endpoint finding per slow endpoint not in `quiet`; adds its dedup key.
  void report_endpoints(const Model& m, const std::vector<Judged>& judged, const std::set<int>& endpoints,
                        const std::set<int>& quiet, int64_t now_ns, FindingBoard& board,
                        std::set<std::string>* reported) const;
  // The finding of slow channel `j` no endpoint or host explains: a link (`cand` two ranks), an
  // endpoint (one) or an inconclusive communicator (none).
  Finding channel_finding(const Model& m, const std::vector<Judged>& judged, const Judged& j,
                          const std::vector<int>& cand, int64_t now_ns) const;

  SlowLinkConfig cfg_;
  struct Run {
    uint64_t total = 0;         // samples ever observed
    uint64_t seen = 0;          // total at the previous evaluation
    uint64_t slow_for = 0;      // samples observed while continuously slow
    int64_t slow_since_ns = 0;  // end of the first operation of the slow episode (0: none)
    uint64_t calm_for = 0;      // samples observed since the episode was last slow
  };
  std::map<Channel, std::deque<Sample>> samples_;
  std::map<Channel, Run> runs_;
  std::map<Channel, std::vector<int>> procs_;
  std::set<std::string> open_;
  std::set<std::string> held_hosts_;
  // Per suspected host: operations each of its inter-host channels completed while it stayed
  // suspected.
  std::map<std::string, std::map<Channel, uint64_t>> suspect_ops_;
};

}  // namespace scout::obs
