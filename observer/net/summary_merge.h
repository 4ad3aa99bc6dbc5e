// The merge steps shared by the drill-down summaries reduced up the observers' tree
// (observer/net/wait_summary.h, observer/net/vote_summary.h; docs/observer-network.md): sorted
// lists merged, two groups' members merged, and one tree node's step (decode both sides, merge,
// encode).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "observer/net/rank_runs.h"

namespace scout::net {

// Merges two lists sorted by `less`, combining equal elements with `combine(a, b)` (b moved in);
// returns the merged list, sorted.
template <typename T, typename Less, typename Combine>
std::vector<T> merge_sorted(std::vector<T> a, std::vector<T> b, Less less, Combine combine) {
  std::vector<T> out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && less(a[i], b[j]))) {
      out.push_back(std::move(a[i++]));
    } else if (i == a.size() || less(b[j], a[i])) {
      out.push_back(std::move(b[j++]));
    } else {
      combine(a[i], std::move(b[j++]));
      out.push_back(std::move(a[i++]));
    }
  }
  return out;
}

// Adds the members of group `b` to group `a`, two groups of one summary in the same state or vote
// (Group: MemberGroup or VoteGroup, with `runs`, `count` and `identities`, one per member in run
// order or none). The runs are joined and normalized (normalize_runs: a comm rank both claim is
// kept once, the first), `count` recounted, and the identities kept only while both groups carry
// them, the merged group has at most kIdentifiedMembers members and they cover every member.
// What else the groups hold (state, vote) is the caller's to merge.
template <class Group>
void merge_members(Group& a, Group b) {
  using Identity = typename decltype(a.identities)::value_type;
  std::vector<std::pair<int, Identity>> ids;  // by comm rank, while both carry identities
  const bool keep_ids = !a.identities.empty() && !b.identities.empty() && a.count + b.count <= kIdentifiedMembers;
  if (keep_ids) {
    for (const Group* g : {&a, &b}) {
      const auto rk = run_ranks(g->runs);
      for (size_t i = 0; i < rk.size() && i < g->identities.size(); ++i)
        ids.emplace_back(rk[i].first, g->identities[i]);
    }
  }
  std::vector<RankRun> runs = a.runs;
  runs.insert(runs.end(), b.runs.begin(), b.runs.end());
  a.runs = normalize_runs(std::move(runs));
  a.count = run_members(a.runs);
  a.identities.clear();
  if (keep_ids) {
    std::stable_sort(ids.begin(), ids.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    int last = -1;
    for (auto& [cr, id] : ids) {
      if (cr == last) continue;  // claimed twice: the first stays (as in the runs)
      last = cr;
      a.identities.push_back(std::move(id));
    }
    if (a.identities.size() != a.count) a.identities.clear();
  }
}

// Merges the encoded summaries `a` and `b` (bytes as `Summary`'s encoder writes them; empty =
// this subtree sent nothing). A side that does not decode is dropped: the first such error is
// written to `*error` and every one counted in `*bad` (both may be null). Returns the other side
// unchanged when only one decodes, nothing when neither does, else the encoded merge. `decode`
// is bool(std::span<const uint8_t>, Summary*, std::string*), `encode` vector<uint8_t>(const
// Summary&), and `merge(Summary&, Summary)` is found by argument-dependent lookup.
template <class Summary, class Decode, class Encode>
std::vector<uint8_t> merge_encoded_summaries(std::vector<uint8_t> a, std::vector<uint8_t> b, int* bad,
                                             std::string* error, Decode decode, Encode encode) {
  Summary sa, sb;
  auto take = [&](const std::vector<uint8_t>& bytes, Summary* s) {
    if (bytes.empty()) return false;
    std::string why;
    if (decode(std::span<const uint8_t>(bytes), s, &why)) return true;
    if (bad && (*bad)++ == 0 && error) *error = why;
    return false;
  };
  const bool ha = take(a, &sa), hb = take(b, &sb);
  if (!ha && !hb) return {};
  if (!hb) return a;
  if (!ha) return b;
  merge(sa, std::move(sb));
  return encode(sa);
}

}  // namespace scout::net
