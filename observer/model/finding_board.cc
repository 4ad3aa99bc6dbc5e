#include "observer/model/finding_board.h"

#include <algorithm>

namespace scout::obs {

void FindingBoard::touch(size_t i) {
  Entry& e = entries_[i];
  if (e.stamp) by_stamp_.erase(e.stamp);
  e.stamp = ++stamp_;
  by_stamp_.emplace(e.stamp, i);
  if (!e.dirty) {
    e.dirty = true;
    dirty_.push_back(i);
  }
}

void FindingBoard::report(Finding f) {
  auto it = index_.find(f.dedup_key);
  if (it == index_.end()) {
    f.open = true;
    const size_t i = entries_.size();
    index_.emplace(f.dedup_key, i);
    entries_.push_back(Entry{std::move(f)});
    ++open_;
    touch(i);
    return;
  }
  Finding& old = entries_[it->second].f;
  f.id = old.id;
  if (old.first_seen_ns != 0 && (f.first_seen_ns == 0 || old.first_seen_ns < f.first_seen_ns)) {
    f.first_seen_ns = old.first_seen_ns;
  }
  f.last_seen_ns = std::max(f.last_seen_ns, old.last_seen_ns);
  if (!old.open) ++open_;
  f.open = true;
  old = std::move(f);
  touch(it->second);
}

bool FindingBoard::close(const std::string& dedup_key, int64_t now_ns) {
  auto it = index_.find(dedup_key);
  if (it == index_.end() || !entries_[it->second].f.open) return false;
  Finding& f = entries_[it->second].f;
  f.open = false;
  f.last_seen_ns = std::max(f.last_seen_ns, now_ns);
  --open_;
  touch(it->second);
  return true;
}

const Finding* FindingBoard::find(const std::string& dedup_key) const {
  auto it = index_.find(dedup_key);
  return it == index_.end() ? nullptr : &entries_[it->second].f;
}

bool FindingBoard::is_open(const std::string& dedup_key) const {
  const Finding* f = find(dedup_key);
  return f && f->open;
}

std::vector<const Finding*> FindingBoard::all() const {
  std::vector<const Finding*> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back(&e.f);
  return out;
}

std::vector<const Finding*> FindingBoard::changed_since(uint64_t since) const {
  std::vector<const Finding*> out;
  for (auto it = by_stamp_.upper_bound(since); it != by_stamp_.end(); ++it) out.push_back(&entries_[it->second].f);
  return out;
}

int64_t FindingBoard::order(const std::string& dedup_key) const {
  auto it = index_.find(dedup_key);
  return it == index_.end() ? -1 : int64_t(it->second);
}

std::vector<size_t> FindingBoard::flush_to(Sink& sink) {
  for (size_t i : dirty_) {
    entries_[i].dirty = false;
    sink.upsert_finding(&entries_[i].f);
  }
  std::vector<size_t> flushed;
  flushed.swap(dirty_);
  return flushed;
}

void FindingBoard::unflushed(const std::vector<size_t>& positions) {
  for (size_t i : positions) {
    if (i >= entries_.size() || entries_[i].dirty) continue;
    entries_[i].dirty = true;
    dirty_.push_back(i);
  }
}

}  // namespace scout::obs
