// The state of one checkpoint and the rules that move it (docs/certification.md, "States"):
//   CANDIDATE  its marker appeared (observer/ckpt/markers.h);
//   VERIFIED   K consecutive clean check cycles that began after it completed;
//   REJECTED   an sdc (attributed or inconclusive), nan or desync finding whose operation began
//              between its completion and the end of the last cycle judged, or that began before
//              it and was still open when it was written; or a dirty cycle (e.g. replay failure)
//              among its cycles.
// An incomplete cycle after completion is neither: the run of clean cycles starts again and the
// candidate waits. VERIFIED and REJECTED are final.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "observer/ckpt/cycle.h"
#include "observer/ckpt/manifest.h"

namespace scout::ckpt {

enum class State { kCandidate, kVerified, kRejected };
const char* to_string(State s);  // "candidate", "verified", "rejected"
std::optional<State> state_from_string(const std::string& s);

struct Checkpoint {
  int64_t id = 0;  // store row id
  std::string path;
  std::string framework;
  int64_t step = -1;
  int64_t completed_ns = 0;   // the marker's mtime (wall ns)
  int64_t discovered_ns = 0;  // when the observer saw it complete
  State state = State::kCandidate;
  std::string reason;                // words; "" for a candidate
  std::vector<int64_t> finding_ids;  // findings that rejected it
  std::vector<int64_t> cycles;       // the current run of clean cycles (all K once verified)
  int64_t decided_ns = 0;            // observer time of the verdict; 0 while a candidate
  Manifest manifest;                 // its files when it was found complete (observer/ckpt/manifest.h)
};

// Rejects a candidate when a finding in `events` falls in its window: began before completion
// and open (or last seen) at completion, or began in [completed_ns, horizon_ns). Returns true
// when it changed the state.
bool reject_on_findings(Checkpoint& c, const std::vector<FindingEvent>& events, int64_t horizon_ns, int64_t now_ns);

// Applies judged cycle `v` (cycles come in increasing index) to a candidate with K = `k`.
// Cycles that began before completion are ignored. Returns true when the state changed.
bool apply_cycle(Checkpoint& c, const CycleVerdict& v, int k, int64_t now_ns);

}  // namespace scout::ckpt
