#include "observer/model/finding_board.h"

#include <algorithm>

namespace scout::obs {

void FindingBoard::report(Finding f) {
  auto it = by_key_.find(f.dedup_key);
  if (it == by_key_.end()) {
    f.open = true;
    order_.push_back(f.dedup_key);
    dirty_.push_back(f.dedup_key);
    by_key_.emplace(f.dedup_key, std::move(f));
    return;
  }
  Finding& old = it->second;
  f.id = old.id;
  if (old.first_seen_ns != 0 && (f.first_seen_ns == 0 || old.first_seen_ns < f.first_seen_ns)) {
    f.first_seen_ns = old.first_seen_ns;
  }
  f.last_seen_ns = std::max(f.last_seen_ns, old.last_seen_ns);
  f.open = true;
  old = std::move(f);
  if (std::find(dirty_.begin(), dirty_.end(), old.dedup_key) == dirty_.end()) dirty_.push_back(old.dedup_key);
}

bool FindingBoard::close(const std::string& dedup_key, int64_t now_ns) {
  auto it = by_key_.find(dedup_key);
  if (it == by_key_.end() || !it->second.open) return false;
  it->second.open = false;
  it->second.last_seen_ns = std::max(it->second.last_seen_ns, now_ns);
  if (std::find(dirty_.begin(), dirty_.end(), dedup_key) == dirty_.end()) dirty_.push_back(dedup_key);
  return true;
}

const Finding* FindingBoard::find(const std::string& dedup_key) const {
  auto it = by_key_.find(dedup_key);
  return it == by_key_.end() ? nullptr : &it->second;
}

bool FindingBoard::is_open(const std::string& dedup_key) const {
  const Finding* f = find(dedup_key);
  return f && f->open;
}

std::vector<const Finding*> FindingBoard::all() const {
  std::vector<const Finding*> out;
  for (const std::string& k : order_) out.push_back(&by_key_.at(k));
  return out;
}

void FindingBoard::flush_to(Sink& sink) {
  for (const std::string& k : dirty_) sink.upsert_finding(&by_key_.at(k));
  dirty_.clear();
}

}  // namespace scout::obs
