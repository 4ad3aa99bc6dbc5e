#include "observer/cluster/leader_merge.h"

#include <algorithm>

namespace scout::obs {

std::string hang_signature(const Finding& f) {
  // A stall is the hang it becomes (docs/findings.md, "stall").
  if ((f.kind != FindingKind::kHang && f.kind != FindingKind::kStall) || f.verdict != Verdict::kAttributed ||
      f.suspects.empty())
    return "";
  std::vector<std::string> who;
  for (const Suspect& s : f.suspects) who.push_back(s.host + ":" + std::to_string(s.pid));
  std::sort(who.begin(), who.end());
  std::string out;
  for (const std::string& w : who) out += (out.empty() ? "" : ",") + w;
  return out;
}

void LeaderMerge::sync(const FindingBoard& board) {
  if (board.stamp() == synced_) return;
  for (const Finding* f : board.changed_since(synced_)) {
    if (auto it = sig_of_.find(f->dedup_key); it != sig_of_.end()) {
      auto s = by_sig_.find(it->second);
      s->second.erase(board.order(f->dedup_key));
      if (s->second.empty()) by_sig_.erase(s);
      sig_of_.erase(it);
    }
    if (!f->open) continue;
    std::string sig = hang_signature(*f);
    if (sig.empty()) continue;
    by_sig_[sig][board.order(f->dedup_key)] = f->dedup_key;
    sig_of_.emplace(f->dedup_key, std::move(sig));
  }
  synced_ = board.stamp();
}

const std::string* LeaderMerge::same_hang(const FindingBoard& board, const std::string& sig) {
  if (sig.empty()) return nullptr;
  sync(board);
  auto it = by_sig_.find(sig);
  if (it == by_sig_.end()) return nullptr;
  return &board.find(it->second.begin()->second)->dedup_key;
}

void LeaderMerge::put(FindingBoard& board, Finding f) {
  f.id = 0;
  const bool open = f.open;
  const std::string key = f.dedup_key;
  const int64_t last = f.last_seen_ns;
  board.report(std::move(f));
  if (!open) board.close(key, last);
}

void LeaderMerge::apply(FindingBoard& board, std::vector<Finding> forwarded, std::vector<Finding> decided) {
  std::set<std::string> open_sigs;
  for (const Finding& f : decided) {
    if (f.open) open_sigs.insert(hang_signature(f));
  }
  for (Finding& f : decided) {
    const std::string sig = hang_signature(f);
    if (!f.open && !sig.empty() && open_sigs.count(sig)) continue;
    if (const std::string* k = same_hang(board, sig)) f.dedup_key = *k;
    if (!f.open && !board.find(f.dedup_key)) continue;  // closes something never stored
    if (f.open) {
      decided_open_.insert(f.dedup_key);
    } else {
      decided_open_.erase(f.dedup_key);
    }
    put(board, std::move(f));
  }
  for (Finding& f : forwarded) {
    if (const std::string* k = same_hang(board, hang_signature(f))) f.dedup_key = *k;
    if (decided_open_.count(f.dedup_key)) continue;
    put(board, std::move(f));
  }
}

}  // namespace scout::obs
