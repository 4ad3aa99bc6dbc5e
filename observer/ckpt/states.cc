#include "observer/ckpt/states.h"

namespace scout::ckpt {

const char* to_string(State s) {
  switch (s) {
    case State::kCandidate: return "candidate";
    case State::kVerified: return "verified";
    case State::kRejected: return "rejected";
  }
  return "candidate";
}

std::optional<State> state_from_string(const std::string& s) {
  for (State x : {State::kCandidate, State::kVerified, State::kRejected})
    if (s == to_string(x)) return x;
  return std::nullopt;
}

bool reject_on_findings(Checkpoint& c, const std::vector<FindingEvent>& events, int64_t horizon_ns, int64_t now_ns) {
  if (c.state != State::kCandidate) return false;
  std::vector<int64_t> ids;
  std::string words;
  for (const FindingEvent& e : events) {
    const bool before_open = e.event_ns < c.completed_ns && (e.open || e.last_seen_ns >= c.completed_ns);
    const bool inside = e.event_ns >= c.completed_ns && e.event_ns < horizon_ns;
    if (!before_open && !inside) continue;
    ids.push_back(e.id);
    if (!words.empty()) words += "; ";
    words += e.kind + " finding #" + std::to_string(e.id) + " (" + e.verdict + ")" +
             (before_open ? " began before it and was open when it was written" : " after it was written");
  }
  if (ids.empty()) return false;
  c.state = State::kRejected;
  c.finding_ids = ids;
  c.reason = words;
  c.decided_ns = now_ns;
  return true;
}

bool apply_cycle(Checkpoint& c, const CycleVerdict& v, int k, int64_t now_ns) {
  if (c.state != State::kCandidate || v.begin_ns < c.completed_ns) return false;
  switch (v.status) {
    case CycleStatus::kDirty: {
      c.state = State::kRejected;
      c.finding_ids = v.finding_ids;
      c.reason = "cycle " + std::to_string(v.index) + " was not clean:";
      for (const std::string& r : v.reasons) c.reason += " " + r + ";";
      if (!c.reason.empty() && c.reason.back() == ';') c.reason.pop_back();
      c.cycles.push_back(v.index);
      c.decided_ns = now_ns;
      return true;
    }
    case CycleStatus::kIncomplete: c.cycles.clear(); return false;
    case CycleStatus::kClean:
      c.cycles.push_back(v.index);
      if (int(c.cycles.size()) < k) return false;
      c.state = State::kVerified;
      c.reason = std::to_string(k) + " consecutive clean check cycles";
      c.decided_ns = now_ns;
      return true;
  }
  return false;
}

}  // namespace scout::ckpt
