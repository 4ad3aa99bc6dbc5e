// Why a checkpoint is still a candidate, in words, for `scout ckpt list` and `scout status`
// (docs/certification.md, "States"): waiting for clean check cycles (with how long at the
// earliest and the setting that shortens it), or unable to verify because the job ended.
#pragma once

#include <cstdint>
#include <string>

#include "observer/ckpt/states.h"

namespace scout::cli {

struct CandidateContext {
  bool job_ended = false;  // the store's ranks all exited or died: no more check cycles come
  int64_t cycle_ns = 0;    // the observer's check cycle (ckpt_meta cycle_ns, else SCOUT_CHECK_CYCLE_S)
  int k = 2;               // clean cycles that verify (ckpt_meta k, else SCOUT_CKPT_K)
};

// Reads the context of the store at `store_path` (its ranks and certification meta; the
// environment's settings where the store has none). Never throws: an unreadable part keeps
// its default.
CandidateContext candidate_context(const std::string& store_path);

// The REASON of a candidate: "waiting: 0 of 2 clean check cycles; verifies in 10m00s at the
// earliest (SCOUT_CHECK_CYCLE_S=300 shortens it)" or "cannot verify: the job ended after 0 of 2
// clean check cycles of 5m00s (SCOUT_CHECK_CYCLE_S=300; a drill sets 1)".
std::string candidate_reason(const ckpt::Checkpoint& c, const CandidateContext& x);

// For the status line about `n` > 0 candidates: "cannot verify: the job ended before 2 clean check
// cycles of 5m00s followed them (SCOUT_CHECK_CYCLE_S=300 shortens the cycles; a drill sets 1)" or
// "waiting for 2 clean check cycles of 5m00s after them (SCOUT_CHECK_CYCLE_S=300 shortens the
// cycles)".
std::string candidates_words(int n, const CandidateContext& x);

}  // namespace scout::cli
