#include "observer/net/rank_runs.h"

#include <algorithm>

namespace scout::net {

namespace {

// Whether `b` (after `a` in comm rank order) continues run `a`; if so, extends `a`.
bool extend(RankRun& a, const RankRun& b) {
  if (b.comm_rank != run_end(a)) return false;
  const int64_t step = int64_t(b.global_rank) - a.global_rank;  // from a's first member to b's first
  if (a.count == 1) {
    if (step == 0 || (b.count > 1 && int64_t(b.stride) != step)) return false;
    a.stride = int32_t(step);
  } else if (int64_t(b.global_rank) != int64_t(a.global_rank) + int64_t(a.count) * a.stride ||
             (b.count > 1 && b.stride != a.stride)) {
    return false;
  }
  a.count += b.count;
  return true;
}

}  // namespace

std::vector<RankRun> normalize_runs(std::vector<RankRun> runs) {
  std::stable_sort(runs.begin(), runs.end(),
                   [](const RankRun& a, const RankRun& b) { return a.comm_rank < b.comm_rank; });
  std::vector<RankRun> out;
  for (RankRun r : runs) {
    if (r.count == 1) r.stride = 1;
    if (!out.empty() && r.comm_rank < run_end(out.back())) {
      const int64_t skip = run_end(out.back()) - r.comm_rank;
      if (skip >= r.count) continue;
      r.global_rank = int32_t(r.global_rank + skip * r.stride);
      r.comm_rank = int32_t(r.comm_rank + skip);
      r.count = int32_t(r.count - skip);
      if (r.count == 1) r.stride = 1;
    }
    if (out.empty() || !extend(out.back(), r)) out.push_back(r);
  }
  return out;
}

uint32_t run_members(const std::vector<RankRun>& runs) {
  uint64_t n = 0;
  for (const RankRun& r : runs) n += uint64_t(r.count);
  return uint32_t(n);
}

std::vector<std::pair<int, int>> run_ranks(const std::vector<RankRun>& runs) {
  std::vector<std::pair<int, int>> out;
  for (const RankRun& r : runs) {
    for (int32_t i = 0; i < r.count; ++i)
      out.emplace_back(r.comm_rank + i, int(int64_t(r.global_rank) + int64_t(i) * r.stride));
  }
  return out;
}

}  // namespace scout::net
