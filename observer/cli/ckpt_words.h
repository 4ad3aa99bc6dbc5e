// Why a checkpoint is still a candidate, in words, for `scout ckpt list`, `scout ckpt latest` and
// `scout status` (docs/certification.md, "States"): a finding already rejects it (the observer
// records the verdict when a check cycle is judged), waiting for clean check cycles (with how
// long at the earliest), or unable to verify because the job ended. The three screens use these
// words so they tell one story.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "observer/ckpt/cycle.h"
#include "observer/ckpt/states.h"

namespace scout::cli {

struct CandidateContext {
  bool job_ended = false;                  // the store's ranks all exited or died: no more check cycles come
  int64_t cycle_ns = 0;                    // the observer's check cycle (ckpt_meta cycle_ns, else SCOUT_CHECK_CYCLE_S)
  int k = 2;                               // clean cycles that verify (ckpt_meta k, else SCOUT_CKPT_K)
  std::vector<ckpt::FindingEvent> events;  // sdc, nan and desync findings known to the store
  int64_t now_ns = 0;                      // wall ns the words are for
};

// Reads the context of the store at `store_path` (its ranks, certification meta and findings; the
// environment's settings where the store has none) as of wall time `now_ns`. Never throws: an
// unreadable part keeps its default.
CandidateContext candidate_context(const std::string& store_path, int64_t now_ns);

// Why a known finding rejects candidate `c` now by the rule of observer/ckpt/states.h ("sdc
// finding #1 (attributed) after it was written"), though the observer has not recorded it; ""
// when none does (or `c` is not a candidate).
std::string finding_rejection(const ckpt::Checkpoint& c, const CandidateContext& x);

// The REASON of a candidate on `scout ckpt list`: "a finding rejects it: sdc finding #1
// (attributed) after it was written (the job ended before a check cycle recorded it)", "waiting:
// 0 of 2 clean check cycles; verifies in 10m00s at the earliest (a drill sets
// SCOUT_CHECK_CYCLE_S=1)" or "cannot verify: the job ended after 0 of 2 clean check cycles of
// 5m00s (a drill sets SCOUT_CHECK_CYCLE_S=1)". The setting is named only when the cycle is
// longer than the drill's 1 s.
std::string candidate_reason(const ckpt::Checkpoint& c, const CandidateContext& x);

// The status lines about candidates (each "  candidates: ..." and a newline; none for 0):
// `rejected` of them a finding rejects ("5 a finding rejects: ckpt latest never names them
// (HINT says which)"), `others` waiting ("3 waiting for 2 clean check cycles of 5m00s after
// them (a drill sets SCOUT_CHECK_CYCLE_S=1)") or unable to verify ("3 cannot verify: the job
// ended before 2 clean check cycles of 5m00s followed them (...)"). `list_hint` is the pasteable
// `scout ckpt list` command.
std::string candidates_lines(int rejected, int others, const CandidateContext& x, const std::string& list_hint);

// What `scout ckpt latest` says of the `n` candidates no finding rejects, for its summary:
// "2 candidate(s) waiting for clean check cycles" or "2 candidate(s) that cannot verify: the job
// ended".
std::string candidates_summary(int n, const CandidateContext& x);

}  // namespace scout::cli
