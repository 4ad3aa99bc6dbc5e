#include "observer/model/memory_sink.h"

#include <algorithm>

namespace scout::obs {

void MemorySink::put_ranks(const std::vector<RankInfo>& ranks) {
  for (const RankInfo& r : ranks) ranks_[{r.host, r.pid}] = r;
}

void MemorySink::put_comms(const std::vector<CommInfo>& comms) {
  for (const CommInfo& c : comms) {
    auto it = comms_.find({c.comm_hash, c.nranks});
    if (c.members || it == comms_.end()) {
      comms_[{c.comm_hash, c.nranks}] = c;
      continue;
    }
    // Progress only: the stored name, nnodes and member list stay.
    CommInfo& old = it->second;
    old.ops_complete = c.ops_complete;
    for (int f = 0; f < 5; ++f) old.last_seq[f] = c.last_seq[f];
    old.last_progress_ns = c.last_progress_ns;
    old.state = c.state;
  }
}

void MemorySink::put_ops(const std::vector<OpSummary>& ops, const std::vector<OpRankTiming>& timings) {
  for (const OpSummary& o : ops) ops_[{o.comm_hash, o.kind, o.func, o.seq}] = o;
  timings_.insert(timings_.end(), timings.begin(), timings.end());
}

void MemorySink::upsert_finding(Finding* f) {
  auto it = findings_.find(f->dedup_key);
  if (it == findings_.end()) {
    f->id = next_id_++;
    findings_[f->dedup_key] = *f;
    return;
  }
  Finding keep = *f;
  keep.id = it->second.id;
  keep.first_seen_ns = it->second.first_seen_ns;
  f->id = keep.id;
  it->second = keep;
}

std::vector<RankInfo> MemorySink::ranks() const {
  std::vector<RankInfo> v;
  for (const auto& [k, r] : ranks_) v.push_back(r);
  return v;
}

std::vector<CommInfo> MemorySink::comms() const {
  std::vector<CommInfo> v;
  for (const auto& [k, c] : comms_) v.push_back(c);
  return v;
}

std::vector<OpSummary> MemorySink::ops() const {
  std::vector<OpSummary> v;
  for (const auto& [k, o] : ops_) v.push_back(o);
  return v;
}

std::vector<Finding> MemorySink::findings() const {
  std::vector<Finding> v;
  for (const auto& [k, f] : findings_) v.push_back(f);
  std::sort(v.begin(), v.end(), [](const Finding& a, const Finding& b) { return a.id < b.id; });
  return v;
}

}  // namespace scout::obs
