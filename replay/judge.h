// Verdicts of one replay cycle from its samples (docs/replay.md, "Verdicts"):
//   gemm: per recipe and vote class (contract.h), each GPU's rounds must agree with each other
//         (self-consistency) and with the strict majority of the class (vote.h); GPUs outside
//         the majority computed wrong bits (sdc). Times: confirmed outliers (outlier.h) are slow
//         GPUs; GPUs measured in enough rounds and not slow are "normal".
//   link:  the receiver's fingerprint must equal the expected payload's, else the link from the
//         sender corrupts (sdc on the receiver, peer = the sender); directed pairs whose times
//         are confirmed outliers among the cycle's pairs are slow, named as unordered pairs.
//   coll:  every member's result must equal the exact expected result; members that differ
//         while others match received corrupted data (sdc on them); when every member differs
//         identically the recipe fails without attribution (a corrupted input: the GEMM votes
//         attribute it).
// The cycle's outcome: "fail" when some GPU or link computed wrong bits (attributed or not); else "inconclusive"
// when some recipe could not be decided (not admitted, skipped, failed, a vote without strict
// majority, a participant lost); else "pass". Slowness does not fail a cycle; it is reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay/backend.h"
#include "replay/outlier.h"
#include "replay/recipe.h"

namespace scout::replay {

struct SdcVerdict {
  int global_rank = -1;
  std::string gpu;
  std::string check;  // "gemm-vote", "gemm-self", "link", "coll"
  std::string recipe;
  int peer = -1;                                    // link: the sender
  nlohmann::json votes = nlohmann::json::object();  // gemm-vote: vote.h to_json; others: fingerprints
};

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
  std::string kind;
  std::string outcome;  // "pass", "fail", "inconclusive"
  std::string reason;   // inconclusive / fail: why
};

struct CycleVerdict {
  std::string outcome = "inconclusive";
  std::vector<RecipeOutcome> recipes;
  std::vector<SdcVerdict> sdc;
  std::vector<SlowGpu> slow_gpus;
  std::vector<SlowPair> slow_pairs;
  std::vector<int> gpu_normal;  // ranks whose GEMM timing was measured and not slow
};

// `not_admitted`: recipes the contract kept from launching (contract.h Admission::inconclusive).
CycleVerdict judge(const std::vector<Recipe>& recipes, const std::vector<GpuInfo>& gpus,
                   const std::vector<Sample>& samples,
                   const std::vector<std::pair<std::string, std::string>>& not_admitted, const OutlierRule& rule);

nlohmann::json to_json(const CycleVerdict& v);

}  // namespace scout::replay
