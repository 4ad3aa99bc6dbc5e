// Compute-side stragglers (docs/observer.md#stragglers).
//
// For each completed collective, rank r's arrival a_r is the GPU start of its kernel, and its
// lateness L_r = a_r - min_s a_s. Lateness alone blames victims: a rank that waited for a
// straggler in one communicator arrives late at its next collective in another. So the signal is
// the part of the lateness the rank caused itself:
//   g_r = a_r - e_r   (its "gap": time since its previous GPU operation on any communicator
//                      ended, i.e. its own compute and input time before arriving)
//   X_r = g_r - median of the others' gaps
//   S_r = min(L_r, max(X_r, 0))      (S_r = L_r when gaps are unknown)
// A rank is LATE in that operation when
//   S_r >= T_class                                 (the job's own noise, floor min_ms) and
//   S_r >= rel * median of the other ranks' L      (relative to the communicator's noise),
// where T_class = max(min_ms, median + noise_k * MAD) of the last kNoiseSamples signals of every
// rank in communicators of the same class (comm_class(): name stem, ranks, nodes), recomputed
// every kNoiseEvery signals.
// The first `warmup` collectives of each communicator are not scored: process start-up and first
// allocations make everyone late at random then.
// Per communicator a window of the last `window` completed collectives is kept; a rank is a
// straggler when it is late in at least min_late of them, in at least `persist` of the window's
// late events (operations where anyone was late: stragglers own the late events, jitter spreads
// them) AND more often than the class's background explains: that many late operations or more
// are less likely at the background rate than a normal excess of `z` standard deviations (exact
// binomial tail, beyond_rate() in stats.h; a busy host makes every rank late now and then; a
// straggler is an outlier among them). The background of comm rank r is
// the larger of the median late rate of comm rank r in the other communicators of the class (ranks
// at one position often share a role) and the mean rate of every other rank of the class, and at
// least 0.05 (beyond_rate()). The same rule also runs on a per-rank window across all its communicators (aggregated,
// background: the median of the other ranks' aggregated rates). The finding stays open while the
// rule holds and closes when the rank's late operations in its aggregated window drop to
// min_late / 2 or fewer.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "observer/detect/judged_op.h"
#include "observer/model/evidence.h"
#include "observer/model/finding_board.h"
#include "observer/model/model.h"

namespace scout::obs {

struct StragglerConfig {
  int window = 64;             // SCOUT_OBSERVER_STRAGGLER_WINDOW (operations)
  int64_t min_ns = 5'000'000;  // SCOUT_OBSERVER_STRAGGLER_MIN_MS
  double rel = 3.0;            // SCOUT_OBSERVER_STRAGGLER_REL
  double persist = 0.6;        // SCOUT_OBSERVER_STRAGGLER_PERSIST
  int min_late = 4;            // SCOUT_OBSERVER_STRAGGLER_MIN_LATE
  double z = 4.5;              // SCOUT_OBSERVER_STRAGGLER_Z (standard deviations: tail below Phi(-z))
  double noise_k = 5.0;        // SCOUT_OBSERVER_STRAGGLER_NOISE_K (MADs above the median)
  int warmup = 8;              // first collectives of each communicator not scored (start-up)
};

// g_r above: time from the end of `p`'s latest GPU interval that ended at or before `arrival`
// (other than [arrival, own_end] itself) to `arrival`; -1 if no such interval is known.
// Sends and receives that held the rank less than `pass_ns` (Proc::GpuInterval::p2p_held_ns) are
// passed through, at most kMaxPassedP2p of them: the rank did not wait there, so its own time
// since it last waited spans them (a rank slow to compute posts the receive its pipeline peer
// sent long ago, gets the data at once, and only then arrives late at its next collective).
constexpr int kMaxPassedP2p = 8;
int64_t gap_before(const Proc& p, int64_t arrival, int64_t own_end, int64_t pass_ns);

// One collective of a communicator with ranks on other nodes, as the observer network sees it
// (docs/observer-network.md, "Cross-node lateness"): the job-wide earliest and latest arrival and
// smallest gap, and per local rank its lateness and gap. Durations only (no clock).
struct CrossNodeArrivals {
  CommKey comm;
  OpId id;
  int64_t first_arrival_ns = 0;  // this observer's clock
  int64_t spread_ns = 0;         // latest - earliest arrival, job-wide
  int64_t min_gap_ns = -1;       // smallest gap of any rank, job-wide; -1 unknown
  struct Local {
    int comm_rank = -1;
    int proc = -1;
    int64_t lateness_ns = 0;  // arrival - earliest arrival (clock offsets applied)
    int64_t gap_ns = -1;
  };
  std::vector<Local> ranks;
};

class StragglerDetector {
 public:
  explicit StragglerDetector(StragglerConfig cfg) : cfg_(cfg) {}
  // Adds a judged operation (only complete collectives of 2+ ranks count).
  void observe(const Model& m, const JudgedOp& op);
  // Adds a cross-node collective: the local ranks are scored with the rule above, the others'
  // gaps summarised by the job-wide smallest gap: S_r = min(L_r, max(0, g_r - min gap)); the
  // relative threshold uses the other local ranks' lateness when there are any. The operation is
  // a late event when some local rank is late or the job-wide arrival spread reaches min_ms.
  void observe_cross_node(const CrossNodeArrivals& op);
  // Opens, updates and closes straggler findings.
  void evaluate(const Model& m, int64_t now_ns, FindingBoard& board);

  // One operation in a communicator window: per comm rank the signal and lateness (ns) and
  // whether the rank was late.
  struct Entry {
    OpId id;
    int64_t first_arrival_ns = 0;
    std::vector<int> procs;
    std::vector<int64_t> signal, lateness;
    std::vector<uint8_t> late;
    bool any = false;
  };
  // Lateness signal of each part of a complete collective (exposed for tests).
  static Entry score(const Model& m, const JudgedOp& op, const StragglerConfig& cfg);
  // The same for a cross-node collective (entries indexed by comm rank; ranks of other nodes
  // carry no signal).
  static Entry score(const CrossNodeArrivals& op, int nranks, const StragglerConfig& cfg);

 private:
  struct Agg {
    bool late = false, any = false;
  };
  struct Episode {
    std::string key;
    int64_t first_ns = 0;
    CommKey comm;
    OpId first_op;
  };
  struct Count {
    int late = 0, any = 0, ops = 0;
    double rate() const { return ops > 0 ? double(late) / ops : 0; }
  };
  // Signals of one communicator class and the late threshold they give.
  struct Noise {
    std::deque<int64_t> signals;
    int64_t threshold_ns = -1;  // -1: not computed yet (the floor applies)
    int since = 0;              // signals added since the threshold was computed
  };
  // Late counts of every window, computed once per evaluate(): per process its aggregated window
  // (and all their rates), per (communicator, comm rank) its window, and the communicators of
  // each class.
  struct Rates {
    std::map<int, Count> aggs;
    std::vector<double> agg_rates;
    std::map<std::pair<CommKey, int>, Count> counts;
    std::map<std::string, std::vector<CommKey>> class_comms;
  };
  // A communicator where a process was late at least once in the window.
  struct CommHit {
    const Comm* comm;
    int rank;  // the process's comm rank there
    Count count;
  };
  // One process judged: its aggregated window, whether the rule holds in it or in any of its
  // communicator windows, the background that decided, and its hits (most late first).
  struct Judgement {
    Count agg;
    bool flagged = false;
    double background = 0;
    std::vector<CommHit> hits;
  };
  static constexpr size_t kNoiseSamples = 4096;
  static constexpr int kNoiseEvery = 64;
  void add(const CommKey& comm, Entry e);
  // The late threshold for communicator `comm` (class noise, floor min_ns); adds `e`'s signals.
  StragglerConfig calibrated(const Model* m, const CommKey& comm);
  void learn(const CommKey& comm, const Entry& e);
  Count comm_count(const std::deque<Entry>& w, int rank) const;
  bool persistent(const Count& c, double background) const;
  Rates rates(const Model& m);
  // Background late rate of comm rank `rank` of `key`: the median rate of the same comm rank in
  // the other communicators of its class (ranks at one position often share a role, e.g. the
  // first rank of every TP group), or of the other ranks of its class when it is alone in it;
  // at least their mean.
  double comm_background(const Rates& r, const CommKey& key, int rank) const;
  Judgement judge(const Model& m, const Proc& p, const Rates& r) const;
  // The finding's communicator: the one its open episode started in while the rank is still late
  // there (headline, key, suspect's comm rank and summary name the same communicator across
  // updates), else the one where it is late most often. `j.hits` is not empty.
  static const CommHit& main_hit(const Judgement& j, const Episode* open);
  // A new episode: its first late operation in `main`'s window and its dedup key.
  Episode begin_episode(const Proc& p, const CommHit& main) const;
  // The evidence of every hit (series of the last 32 operations); appends the late signals (ns).
  StragglerEvidence evidence(const Model& m, const Judgement& j, const CommHit& main,
                             std::vector<int64_t>& late_signals);
  Finding finding(const Model& m, const Proc& p, const Episode& ep, const Judgement& j, const CommHit& main,
                  int64_t now_ns);

  StragglerConfig cfg_;
  std::map<CommKey, std::deque<Entry>> comms_;
  std::map<int, std::deque<Agg>> procs_;
  std::map<int, Episode> open_;              // proc -> open episode
  std::map<std::string, Noise> noise_;       // comm class -> noise
  std::map<CommKey, std::string> class_of_;  // comm -> its class
  std::map<CommKey, int> seen_;              // comm -> collectives observed (warm-up)
};

}  // namespace scout::obs
