// Strict-majority vote over fingerprints (docs/replay.md, "Verdicts"): every voter gives one
// 64-bit value; the value held by more than half of all voters is the majority and the others
// are attributed; without a strict majority the vote is inconclusive (e.g. one of two differs).
// The same rule as live consensus (docs/findings.md, "sdc") and the SCOUT reference's
// classify_evidence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::replay {

struct Ballot {
  int voter = -1;      // caller's id (a GPU index, a global rank)
  uint64_t value = 0;  // fingerprint
};

enum class VoteOutcome { kAgree, kAttributed, kInconclusive, kEmpty };
const char* to_string(VoteOutcome o);  // "agree", "attributed", "inconclusive", "empty"

struct VoteGroup {
  uint64_t value = 0;
  std::vector<int> voters;  // ascending
};

struct VoteResult {
  VoteOutcome outcome = VoteOutcome::kEmpty;
  std::vector<VoteGroup> groups;  // largest first, ties by value
  std::optional<uint64_t> majority;
  std::vector<int> minority;  // attributed: voters outside the majority, ascending
};

VoteResult vote(const std::vector<Ballot>& ballots);

// "0x" + 16 hex digits, the spelling of fingerprints in findings (docs/findings.md).
std::string fp_hex(uint64_t fp);

// {"outcome", "majority": "0x..."|null, "groups": [{"value": "0x...", "voters": [...]}]}.
nlohmann::json to_json(const VoteResult& v);

}  // namespace scout::replay
