// Stall thresholds learned per communicator, and the memory of pauses a job has shown before
// (docs/observer.md, "Stalls").
//
// A communicator's rhythm is the gap between its progress events while it is busy: each pass that
// finds the communicator progressed, after a pass that saw some rank with an operation in flight in
// it or that found it progressed too, adds one gap (its latest progress time now minus its latest
// progress time at that earlier pass). Its stall threshold is
//   min(hard timeout, max(kStallFloorNs, p99 of its last kStallWindow gaps x kStallMargin)),
// or min(hard timeout, kStallColdNs) while it has fewer than kStallMinGaps gaps.
// p99 is the nearest-rank percentile: the ceil(0.99 n)-th smallest of n gaps.
//
// A stall episode that ended (progress resumed) is remembered by its signature: the root ranks and
// where in the step they stopped (the communicator and function, with the pair of a point-to-point
// operation, of the first root's latest completed operation). A later stall with the same
// signature is a repeat of a pause the job has shown before and is not reported while it has lasted
// at most kRepeatSlack times the longest remembered episode of that signature.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "observer/model/model.h"

namespace scout::obs {

inline constexpr size_t kStallWindow = 256;              // gaps kept per communicator
inline constexpr size_t kStallMinGaps = 16;              // fewer: the cold threshold
inline constexpr double kStallPercentile = 0.99;         // of the gaps
inline constexpr double kStallMargin = 3.0;              // times the percentile
inline constexpr int64_t kStallFloorNs = 3'000'000'000;  // never below 3 s
inline constexpr int64_t kStallColdNs = 10'000'000'000;  // cold, knowing nothing: 10 s (and the cap of own-op thresholds)
inline constexpr double kRepeatSlack = 1.5;              // a repeat may last 1.5x its longest earlier episode
inline constexpr size_t kStallMemory = 64;               // closed episodes remembered

// What a cold communicator's threshold rests on (docs/observer.md, "Stalls"): 0 where unknown.
struct ColdBasis {
  int64_t held_max_ns = 0;  // longest enqueue-to-completion of one of its operations on a rank (Comm::held_max_ns)
  int64_t class_ns = 0;     // largest threshold learned by a warm communicator of its class
};

// The gap series of one communicator and the threshold it gives.
class StallClock {
 public:
  // One pass: `last_progress_ns` is the communicator's latest progress time (CLOCK_REALTIME ns),
  // `inflight` whether some rank has an operation in flight in it now. Adds a gap when progress
  // moved since the previous pass and that pass saw work in flight or progress.
  void observe(int64_t last_progress_ns, bool inflight);
  // Adds one gap (ns) directly (tests, and observe()). The oldest leaves beyond kStallWindow.
  void add_gap(int64_t gap_ns);
  // The stall threshold (ns) under hard timeout `hard_ns` (the rule at the top of this file);
  // `cold` is used only while the clock is cold.
  int64_t threshold_ns(int64_t hard_ns, const ColdBasis& cold = {}) const;
  // What the threshold rests on: "gaps" (warm), "class", "own" (its operations), "none" (cold,
  // nothing known: kStallColdNs) or "given" (a threshold another observer computed).
  const char* basis(const ColdBasis& cold = {}) const;
  // Nearest-rank p99 of the gaps (ns); 0 with no gaps.
  int64_t p99_ns() const;
  size_t gaps() const { return gaps_.size(); }
  bool cold() const { return gaps_.size() < kStallMinGaps; }
  // The clock another observer summarized as (`threshold_ns`, `gaps`, `p99_ns`): threshold_ns()
  // is `threshold_ns` (at most the hard timeout), gaps() and p99_ns() as given (at most
  // kStallWindow gaps). The leader judges a communicator by a node's clock so
  // (docs/observer-network.md, "Hangs across nodes").
  static StallClock given(int64_t threshold_ns, size_t gaps, int64_t p99_ns);

 private:
  int64_t given_ns_ = 0;  // given(): the threshold (0: learned here)
  std::deque<int64_t> gaps_;
  int64_t mark_ = 0;         // latest progress time at the previous pass (0: none yet)
  bool inflight_ = false;    // work in flight at the previous pass
  bool progressed_ = false;  // progress seen by the previous pass
};

// Class of a communicator for its cold threshold: comm_class() (name stem, ranks, nodes) and the
// function mix it has shown (bit f: collective function f issued by some rank; bit 7:
// point-to-point). A warm communicator lends its threshold to a cold one of the same
// comm_class() whose mix is a subset of its own.
struct StallClass {
  std::string cls;
  uint8_t mix = 0;
};
StallClass stall_class(const Comm& c);

// The cold basis of every communicator of `m` that `clock_of` knows (it returns the communicator's
// clock, or null): its own held_max_ns, and the largest threshold (under `hard_ns`) of a warm
// communicator of its class.
std::map<CommKey, ColdBasis> cold_bases(const Model& m, const std::function<const StallClock*(const CommKey&)>& clock_of,
                                        int64_t hard_ns);

// What makes two stall episodes the same pause: the root ranks (global, ascending) and the point of
// the step where they stopped: the communicator (hash and size) and function (with ":src>dst" for
// point-to-point) of the first root's latest completed operation (0 and "" when it completed none).
struct StallSignature {
  uint64_t comm_hash = 0;
  int comm_nranks = 0;
  std::string func;
  std::vector<int> roots;
  bool operator==(const StallSignature&) const = default;
};

// Closed stall episodes, newest last, at most kStallMemory.
class StallMemory {
 public:
  // Remembers an episode of `sig` that lasted `length_ns` (stall start to resumed progress).
  void remember(const StallSignature& sig, int64_t length_ns);
  // True when a stall of `sig` that has lasted `stalled_ns` so far repeats a remembered episode:
  // one with the same signature exists and stalled_ns <= kRepeatSlack x the longest of them.
  bool is_repeat(const StallSignature& sig, int64_t stalled_ns) const;
  // Longest remembered episode of `sig` (ns); 0 if none.
  int64_t longest_ns(const StallSignature& sig) const;
  size_t size() const { return episodes_.size(); }

 private:
  std::deque<std::pair<StallSignature, int64_t>> episodes_;
};

}  // namespace scout::obs
