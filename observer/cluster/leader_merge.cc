#include "observer/cluster/leader_merge.h"

#include <algorithm>

namespace scout::obs {

std::string hang_signature(const Finding& f) {
  if (f.kind != FindingKind::kHang || f.verdict != Verdict::kAttributed || f.suspects.empty()) return "";
  std::vector<std::string> who;
  for (const Suspect& s : f.suspects) who.push_back(s.host + ":" + std::to_string(s.pid));
  std::sort(who.begin(), who.end());
  std::string out;
  for (const std::string& w : who) out += (out.empty() ? "" : ",") + w;
  return out;
}

namespace {
// The open attributed hang on `board` naming the same suspects, if any: its key.
const std::string* same_hang(const FindingBoard& board, const std::string& sig) {
  if (sig.empty()) return nullptr;
  for (const Finding* f : board.all()) {
    if (f->open && hang_signature(*f) == sig) return &f->dedup_key;
  }
  return nullptr;
}
}  // namespace

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
