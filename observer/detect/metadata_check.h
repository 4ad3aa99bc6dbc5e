// Metadata agreement (docs/observer.md#consensus): every rank of a communicator must call
// the same collective with the same datatype, count and root for the same key (func, seqNumber).
// A disagreement is a desynchronization.
//
// Compared fields: the datatype and count given to the API when every voter recorded them
// (api_count != 0; the task's count differs from the API's for AllGather, docs/nccl-notes.md §5.1), else
// those of the task; the root for Broadcast and Reduce. The reduction op is not in record
// layout v1, so it is not compared. A point-to-point pair compares the send side with the recv
// side (two voters: a mismatch is always inconclusive).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>

#include "common/vote.h"
#include "observer/model/evidence.h"
#include "observer/model/finding.h"
#include "observer/model/model.h"

namespace scout::obs {

struct MetaValue {
  uint8_t datatype = 0;
  uint64_t count = 0;
  int32_t root = -1;
  auto operator<=>(const MetaValue&) const = default;
};
// The evidence value of `v`: datatype name, count, root (-1 unless Broadcast or Reduce).
EvMetaValue ev_meta(const MetaValue& v);

// What record `r` of an operation of function `func` says must agree: the API's datatype and
// count when `api` (else the task's), the root for Broadcast and Reduce.
MetaValue meta_value(const shm::RecordSnapshot& r, bool api);

struct MetaOutcome {
  VoteResult<MetaValue> vote;  // voters are comm ranks
  bool api_fields = false;     // compared the API's datatype/count (else the task's)
  bool partial = false;        // some ranks' records are missing
};

// Votes on the metadata of the present slots of `op` (electorate: the op's participants).
MetaOutcome check_metadata(const Op& op);

// The desync finding for a disagreement (nullopt when the ranks agree). `now_ns` is last_seen.
std::optional<Finding> desync_finding(const Model& m, const Comm& c, const Op& op, const MetaOutcome& out,
                                      int64_t now_ns);
// Dedup key of the desync finding about `id` of `c` (shared with the hang detector's mismatch).
std::string desync_key(const Comm& c, const OpId& id);

}  // namespace scout::obs
