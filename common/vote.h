// Strict-majority voting (docs/observer.md#consensus, docs/replay.md "Verdicts"): the one rule
// behind every consensus verdict, live (observer/detect) and in replay (replay/judge.cc).
//
//   Agree        every voter holds the same value.
//   Attributed   one value is held by a strict majority of the electorate (more than half of
//                `electorate`, usually the communicator's nranks); the voters holding other
//                values are named.
//   Inconclusive voters disagree and no value has a strict majority: reported, blames no one.
//
// The electorate may be larger than the number of voters (ranks whose evidence is missing): a
// majority must still be a majority of the whole electorate, so absent voters can never be
// outvoted by a minority that happens to be present.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace scout {

enum class VoteVerdict { kAgree, kAttributed, kInconclusive };
const char* to_string(VoteVerdict v);  // "agree", "attributed", "inconclusive"

// Voters sharing one value.
template <typename V>
struct VoteGroup {
  V value{};
  std::vector<int> voters;  // voter ids (comm ranks, global ranks ...), ascending
};

template <typename V>
struct VoteResult {
  VoteVerdict verdict = VoteVerdict::kAgree;
  std::vector<VoteGroup<V>> groups;  // largest first; ties by value order
  bool has_majority = false;         // groups[0] holds a strict majority of the electorate
  std::vector<int> dissenters;       // attributed: voters outside the majority, ascending
};

// Votes `ballots` (voter id, value) with an electorate of `electorate` voters (>= ballots).
// With no ballots the verdict is Agree (nothing to disagree about).
template <typename V>
VoteResult<V> strict_majority(const std::vector<std::pair<int, V>>& ballots, int electorate) {
  std::map<V, std::vector<int>> by_value;
  for (const auto& [voter, value] : ballots) by_value[value].push_back(voter);
  VoteResult<V> out;
  for (auto& [value, voters] : by_value) {
    std::sort(voters.begin(), voters.end());
    out.groups.push_back(VoteGroup<V>{value, voters});
  }
  std::stable_sort(out.groups.begin(), out.groups.end(),
                   [](const VoteGroup<V>& a, const VoteGroup<V>& b) { return a.voters.size() > b.voters.size(); });
  electorate = std::max<int>(electorate, int(ballots.size()));
  out.has_majority = !out.groups.empty() && 2 * int(out.groups[0].voters.size()) > electorate;
  if (out.groups.size() <= 1) {
    out.verdict = VoteVerdict::kAgree;
  } else if (out.has_majority) {
    out.verdict = VoteVerdict::kAttributed;
    for (size_t g = 1; g < out.groups.size(); ++g) {
      out.dissenters.insert(out.dissenters.end(), out.groups[g].voters.begin(), out.groups[g].voters.end());
    }
    std::sort(out.dissenters.begin(), out.dissenters.end());
  } else {
    out.verdict = VoteVerdict::kInconclusive;
  }
  return out;
}

}  // namespace scout
