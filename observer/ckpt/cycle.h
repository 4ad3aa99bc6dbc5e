// Check cycles: wall time cut into intervals of SCOUT_CHECK_CYCLE_S seconds (cycle i is
// [i*T, (i+1)*T) in CLOCK_REALTIME ns), the evidence gathered for each and the rule that judges
// one (docs/certification.md, "Check cycles").
//
// A cycle is
//   dirty       when an sdc, nan or desync finding's operation began in it, a fingerprint
//               comparison disagreed, or the replay cycle failed;
//   incomplete  when it is not dirty but some evidence is missing: the observer did not watch it
//               from its start, no collective ran, a communicator had no sampled comparison, a
//               comparison missed voters, or replay (when on) did not run, finish or decide;
//   clean       otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "observer/ckpt/replay_cycles.h"

namespace scout::ckpt {

// A finding that can make a cycle dirty or reject a checkpoint (kinds sdc, nan, desync; both
// verdicts). event_ns: when its operation began (wall ns), else when it was first seen.
struct FindingEvent {
  int64_t id = 0;
  std::string kind;
  std::string verdict;
  int64_t event_ns = 0;
  bool open = true;
  int64_t last_seen_ns = 0;
};

// Per communicator, the collectives of one cycle.
struct CommCoverage {
  std::string name;
  int nranks = 0;
  int64_t ops = 0;         // collectives judged
  int64_t comparable = 0;  // of which fingerprints are compared for this function
  int64_t compared = 0;    // sampled and decided: agree, attributed or inconclusive
  int64_t agree = 0;
  int64_t partial = 0;  // sampled but some voter's fingerprint or record missing
};

// What one cycle saw, accumulated over passes.
struct CycleEvidence {
  std::map<uint64_t, CommCoverage> comms;  // by commHash
  std::map<int, int64_t> voters;           // voters per decided comparison -> comparisons
  uint64_t bytes_fingerprinted = 0;        // message bytes x voters of compared operations
  // Adds one judged collective. fp_verdict: OpSummary::fp_verdict (observer/model/job.h).
  void add(uint64_t comm_hash, const std::string& name, int nranks, const std::string& fp_verdict, int voters,
           uint64_t bytes);
};

enum class CycleStatus { kClean, kDirty, kIncomplete };
const char* to_string(CycleStatus s);  // "clean", "dirty", "incomplete"
std::optional<CycleStatus> cycle_status_from_string(const std::string& s);

struct CycleVerdict {
  int64_t index = 0;
  int64_t begin_ns = 0, end_ns = 0;
  CycleStatus status = CycleStatus::kIncomplete;
  std::vector<std::string> reasons;  // in words, e.g. "comm tp0: 2 comparisons missed voters"
  std::vector<int64_t> finding_ids;  // findings that made it dirty
  int64_t comparisons = 0;
  int comms_ran = 0, comms_covered = 0;
  std::map<int, int64_t> voters;  // voters per comparison -> comparisons (min and median
                                  // over cycles come from these)
  uint64_t bytes_fingerprinted = 0;
  ReplayStatus replay = ReplayStatus::kNone;
  std::vector<std::string> replay_recipes, replay_gpus;
};

// Smallest and median voters of comparisons in a voters histogram (0, 0 when empty).
int voters_min(const std::map<int, int64_t>& hist);
double voters_median(const std::map<int, int64_t>& hist);

// JSON form (certificates, the store): index, begin_ns, end_ns, status, reasons, finding_ids,
// comparisons, communicators_ran, communicators_covered, voters_min, voters_median,
// voters ({"N": comparisons}), bytes_fingerprinted, replay, replay_recipes, replay_gpus.
nlohmann::json to_json(const CycleVerdict& v);
// Inverse of to_json (missing keys keep defaults).
CycleVerdict cycle_from_json(const nlohmann::json& j);

// Judges cycle `index` of length `cycle_ns`. `watched`: the observer saw the whole cycle.
// `events`: every relevant finding known (those whose event_ns falls in the cycle count).
// `replay`: the replay result when replay is on, nullopt when off.
CycleVerdict judge_cycle(int64_t index, int64_t cycle_ns, const CycleEvidence& ev, bool watched,
                         const std::vector<FindingEvent>& events, const std::optional<ReplayCycleResult>& replay);

}  // namespace scout::ckpt
