// Received-fingerprint agreement (docs/observer.md#consensus): after AllReduce,
// AllGather and Broadcast every rank of the communicator holds the same bytes, so their receive
// fingerprints must be equal. A rank outvoted by a strict majority of the communicator received
// corrupted data (silent data corruption, SDC).
//
// Voters are the ranks whose receive fingerprint is done (kFpDone) and covers the same bytes with
// the same fingerprint version as most others. The verdict waits until every rank's fingerprint
// is done, or until the caller says it timed out (then "partial": missing ranks cannot vote, but
// the majority must still be a strict majority of the whole communicator).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/vote.h"
#include "observer/model/finding.h"
#include "observer/model/model.h"

namespace scout::obs {

// True for the functions whose receive buffers must agree: AllReduce, AllGather, Broadcast.
bool recv_must_agree(uint8_t func);

struct FpOutcome {
  // OpSummary::fp_verdict: "agree", "attributed", "inconclusive", "partial" (some ranks could
  // not vote; those that did agree), "not-sampled" (no rank fingerprinted it), "n/a" (function
  // whose receive buffers differ by design).
  std::string verdict;
  VoteResult<uint64_t> vote;  // voters are comm ranks; values are fingerprints
  bool partial = false;
  int voters = 0;
  uint64_t fp_bytes = 0;
  uint32_t fp_version = 0;
};

// Decides the receive-fingerprint verdict of collective `op`, or nullopt while fingerprints are
// still expected (missing records or kFpPending) and `timed_out` is false.
std::optional<FpOutcome> check_recv_fingerprints(const Op& op, bool timed_out);

// The sdc finding for a disagreement (nullopt when the verdict is not attributed/inconclusive).
std::optional<Finding> sdc_finding(const Model& m, const Comm& c, const Op& op, const FpOutcome& out, int64_t now_ns);

}  // namespace scout::obs
