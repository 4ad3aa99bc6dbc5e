// Verdicts of one replay cycle from its samples (docs/replay.md, "Verdicts"):
//   gemm: per recipe and vote class (contract.h), each GPU's rounds must agree with each other
//         (self-consistency) and with the strict majority of the class (common/vote.h); GPUs outside
//         the majority computed wrong bits (sdc). Times: confirmed outliers (outlier.h) are slow
//         GPUs; GPUs measured in enough rounds and not slow are "normal".
//   link:  the receiver's fingerprint must equal the expected payload's, else the link from the
//         sender corrupts (sdc on the receiver, peer = the sender); directed pairs whose times
//         are confirmed outliers among the cycle's pairs are slow, named as unordered pairs.
//   coll:  every member's result must equal the exact expected result; members that differ
//         while others match received corrupted data (sdc on them); when every member differs
//         identically the recipe fails without attribution (a corrupted input: the GEMM votes
//         attribute it).
//   timeouts (a recipe not finished by its deadline, docs/replay.md "Deadlines"): a GPU whose GEMM
//         timed out while another GPU finished it cannot run kernels (verdict gpu, that rank); a
//         pair whose link timed out in both directions while neither end's GEMMs nor other links
//         timed out, and each end finished something, delivers nothing (verdict link, both ends).
// The cycle's outcome: "fail" when some GPU or link computed wrong bits (attributed or not) or
// the timeouts name a GPU or link; else "inconclusive" when some recipe could not be decided (not
// admitted, skipped, failed, timed out, a vote without strict majority, a participant lost); else
// "pass". Slowness does not fail a cycle; it is reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/vote.h"
#include "replay/backend.h"
#include "replay/outlier.h"
#include "replay/recipe.h"

namespace scout::replay {

// A recipe's or a cycle's outcome. kTimeout (recipes only): some sample did not finish by its
// deadline, and nothing wrong was computed by the others.
enum class Outcome { kPass, kFail, kInconclusive, kTimeout };
const char* to_string(Outcome o);  // "pass", "fail", "inconclusive", "timeout"

// The check that found wrong bits (docs/replay.md, "Verdicts").
enum class SdcCheck {
  kGemmVote,  // a GPU's GEMM output outside the strict majority of its class
  kGemmSelf,  // two rounds of the same GEMM on one GPU differ
  kLink,      // a link's payload arrived changed
  kColl,      // a member's collective result differs from the expected one while others match
};
const char* to_string(SdcCheck c);  // "gemm-vote", "gemm-self", "link", "coll"

struct SdcVerdict {
  int global_rank = -1;
  std::string gpu;
  SdcCheck check = SdcCheck::kGemmVote;
  std::string recipe;
  int peer = -1;                                    // link: the sender
  nlohmann::json votes = nlohmann::json::object();  // gemm-vote: vote_json; others: fingerprints
};

// One GPU's time on one GEMM recipe against its class (a slow GPU, or a normal one's measurement).
struct SlowGpu {
  int global_rank = -1;
  std::string gpu;
  std::string recipe;
  int64_t median_ns = 0;    // of the class, first round
  std::vector<int64_t> ns;  // its time per round
};

struct SlowPair {
  int a = -1, b = -1;                // a < b
  std::vector<std::string> recipes;  // the slow directed recipes
  int64_t ns = 0;                    // the slowest direction's first-round time
  int64_t median_ns = 0;             // median of the cycle's link times, first round
};

struct RecipeOutcome {
  std::string recipe;
  RecipeKind kind = RecipeKind::kGemm;
  Outcome outcome = Outcome::kPass;
  std::string reason;  // inconclusive / fail: why
};

// A GPU or link the cycle's timeouts name (rules above).
struct TimeoutVerdict {
  std::string verdict;               // "gpu", "link"
  std::vector<int> ranks;            // gpu: {R}; link: {a, b}, a < b
  std::vector<std::string> recipes;  // the timed-out recipes that name it, in the cycle's order
};

struct CycleVerdict {
  Outcome outcome = Outcome::kInconclusive;
  std::vector<RecipeOutcome> recipes;
  std::vector<SdcVerdict> sdc;
  std::vector<SlowGpu> slow_gpus;
  std::vector<SlowPair> slow_pairs;
  std::vector<int> gpu_normal;  // ranks whose GEMM timing was measured and not slow
  // For each rank of gpu_normal, ascending: the GEMM it was measured normal in (of several, the
  // one whose class median is the longest), with its time per round and that median (the number
  // that shows a straggler's delay is not its GPU's; docs/findings.md, "straggler").
  std::vector<SlowGpu> normal_gpus;
  std::vector<std::string> timed_out;    // every recipe with a timed-out sample, in the cycle's order
  std::vector<TimeoutVerdict> timeouts;  // what they name
};

// `not_admitted`: recipes the contract kept from launching (contract.h Admission::inconclusive).
CycleVerdict judge(const std::vector<Recipe>& recipes, const std::vector<GpuInfo>& gpus,
                   const std::vector<Sample>& samples,
                   const std::vector<std::pair<std::string, std::string>>& not_admitted, const OutlierRule& rule);

nlohmann::json to_json(const CycleVerdict& v);
// A fingerprint vote (common/vote.h) as evidence: {"outcome": "agree"|"attributed"|"inconclusive",
// "majority": "0x..."|null, "groups": [{"value": "0x...", "voters": [...]}]}.
nlohmann::json vote_json(const VoteResult<uint64_t>& v);

}  // namespace scout::replay
