// Bounds on the per-rank state one observer keeps, whatever a segment or another observer claims:
// every communicator of N ranks costs N rank slots of state in the Model, so a claim beyond these
// is refused where it enters (the ingestor for segments, observer/ingest/ingestor.cc; the
// drill-down decoder for other observers' messages, observer/net/drill.cc).
#pragma once

#include <cstdint>

namespace scout::obs {

// The most ranks one communicator may claim (NCCL's nranks; a real job has far fewer).
constexpr int kMaxCommRanks = 1 << 18;
// Rank slots over every distinct communicator of one node's view together (a real node's
// communicators add up to a few times the job's world size).
constexpr int64_t kMaxRankSlots = 1 << 20;
// Rank slots the communicators first claimed by one segment may add (its own budget): a hostile
// or broken segment exhausts only this, never the job's bound, so the real job is still read. A
// real process's communicators (world, data-, tensor-, pipeline-, expert-parallel groups) add up
// to little more than the world size.
constexpr int64_t kMaxSegmentRankSlots = 1 << 19;

}  // namespace scout::obs
