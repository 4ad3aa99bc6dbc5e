#include "observer/replay/lookup.h"

#include <algorithm>
#include <cstdio>

namespace scout::obs {

int proc_of_rank(const Model& m, int global_rank) {
  for (const Proc& p : m.procs())
    if (p.global_rank == global_rank) return p.id;
  return -1;
}

std::vector<int> members_of(const Model& m, const Comm& c) {
  std::vector<int> out;
  if (!c.members_known()) return {};
  for (const RankProgress& r : c.ranks) {
    if (r.proc < 0 || m.proc(r.proc).global_rank < 0) return {};
    out.push_back(m.proc(r.proc).global_rank);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const Comm* comm_by_hash(const Model& m, uint64_t hash, int nranks) {
  auto it = m.comms().find(CommKey{hash, nranks});
  return it == m.comms().end() ? nullptr : &it->second;
}

std::string ms_text(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f ms", double(ns) / 1e6);
  return b;
}

}  // namespace scout::obs
