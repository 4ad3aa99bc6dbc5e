// One merge step of the drill-down summaries reduced up the observers' tree: decode both sides,
// merge, encode (observer/net/wait_summary.h, observer/net/vote_summary.h;
// docs/observer-network.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace scout::net {

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
