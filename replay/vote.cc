#include "replay/vote.h"

#include <algorithm>
#include <map>

#include "scout/fingerprint.h"

namespace scout::replay {

const char* to_string(VoteOutcome o) {
  switch (o) {
    case VoteOutcome::kAgree: return "agree";
    case VoteOutcome::kAttributed: return "attributed";
    case VoteOutcome::kInconclusive: return "inconclusive";
    case VoteOutcome::kEmpty: return "empty";
  }
  return "?";
}

VoteResult vote(const std::vector<Ballot>& ballots) {
  VoteResult r;
  if (ballots.empty()) return r;
  std::map<uint64_t, std::vector<int>> by_value;
  for (const Ballot& b : ballots) by_value[b.value].push_back(b.voter);
  for (auto& [v, who] : by_value) {
    std::sort(who.begin(), who.end());
    r.groups.push_back({v, who});
  }
  std::stable_sort(r.groups.begin(), r.groups.end(),
                   [](const VoteGroup& a, const VoteGroup& b) { return a.voters.size() > b.voters.size(); });
  if (r.groups.size() == 1) {
    r.outcome = VoteOutcome::kAgree;
    r.majority = r.groups[0].value;
    return r;
  }
  if (r.groups[0].voters.size() * 2 > ballots.size()) {
    r.outcome = VoteOutcome::kAttributed;
    r.majority = r.groups[0].value;
    for (size_t g = 1; g < r.groups.size(); ++g)
      r.minority.insert(r.minority.end(), r.groups[g].voters.begin(), r.groups[g].voters.end());
    std::sort(r.minority.begin(), r.minority.end());
  } else {
    r.outcome = VoteOutcome::kInconclusive;
  }
  return r;
}

std::string fp_hex(uint64_t v) { return "0x" + fp::to_hex(v); }

nlohmann::json to_json(const VoteResult& v) {
  nlohmann::json j;
  j["outcome"] = to_string(v.outcome);
  j["majority"] = v.majority ? nlohmann::json(fp_hex(*v.majority)) : nlohmann::json(nullptr);
  j["groups"] = nlohmann::json::array();
  for (const VoteGroup& g : v.groups) j["groups"].push_back({{"value", fp_hex(g.value)}, {"voters", g.voters}});
  return j;
}

}  // namespace scout::replay
