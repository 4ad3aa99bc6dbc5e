#include "observer/ckpt/cycle.h"

#include <algorithm>

namespace scout::ckpt {

const char* to_string(ReplayStatus s) {
  switch (s) {
    case ReplayStatus::kNone: return "none";
    case ReplayStatus::kPass: return "pass";
    case ReplayStatus::kFail: return "fail";
    case ReplayStatus::kUnfinished: return "unfinished";
    case ReplayStatus::kInconclusive: return "inconclusive";
  }
  return "none";
}

const char* to_string(CycleStatus s) {
  switch (s) {
    case CycleStatus::kClean: return "clean";
    case CycleStatus::kDirty: return "dirty";
    case CycleStatus::kIncomplete: return "incomplete";
  }
  return "incomplete";
}

std::optional<CycleStatus> cycle_status_from_string(const std::string& s) {
  for (CycleStatus c : {CycleStatus::kClean, CycleStatus::kDirty, CycleStatus::kIncomplete})
    if (s == to_string(c)) return c;
  return std::nullopt;
}

void CycleEvidence::add(uint64_t comm_hash, const std::string& name, int nranks, const std::string& fp_verdict,
                        int nvoters, uint64_t bytes) {
  CommCoverage& c = comms[comm_hash];
  if (c.name.empty()) c.name = name;
  c.nranks = nranks;
  c.ops++;
  if (fp_verdict == "n/a") return;  // this function's output differs per rank by design
  c.comparable++;
  if (fp_verdict == "not-sampled") return;
  if (fp_verdict == "partial") {
    c.partial++;
    return;
  }
  c.compared++;
  if (fp_verdict == "agree") c.agree++;
  voters[nvoters]++;
  bytes_fingerprinted += bytes * uint64_t(std::max(nvoters, 0));
}

int voters_min(const std::map<int, int64_t>& hist) { return hist.empty() ? 0 : hist.begin()->first; }

double voters_median(const std::map<int, int64_t>& hist) {
  int64_t n = 0;
  for (const auto& [v, c] : hist) n += c;
  if (n == 0) return 0;
  // Values at sorted positions (n-1)/2 and n/2; their mean is the median.
  auto at = [&](int64_t pos) {
    for (const auto& [v, c] : hist) {
      if (pos < c) return v;
      pos -= c;
    }
    return hist.rbegin()->first;
  };
  return (at((n - 1) / 2) + at(n / 2)) / 2.0;
}

nlohmann::json to_json(const CycleVerdict& v) {
  nlohmann::json voters = nlohmann::json::object();
  for (const auto& [n, k] : v.voters) voters[std::to_string(n)] = k;
  return {{"index", v.index},
          {"begin_ns", v.begin_ns},
          {"end_ns", v.end_ns},
          {"status", to_string(v.status)},
          {"reasons", v.reasons},
          {"finding_ids", v.finding_ids},
          {"comparisons", v.comparisons},
          {"communicators_ran", v.comms_ran},
          {"communicators_covered", v.comms_covered},
          {"voters_min", voters_min(v.voters)},
          {"voters_median", voters_median(v.voters)},
          {"voters", voters},
          {"bytes_fingerprinted", v.bytes_fingerprinted},
          {"replay", to_string(v.replay)},
          {"replay_recipes", v.replay_recipes},
          {"replay_gpus", v.replay_gpus}};
}

CycleVerdict cycle_from_json(const nlohmann::json& j) {
  CycleVerdict v;
  v.index = j.value("index", int64_t(0));
  v.begin_ns = j.value("begin_ns", int64_t(0));
  v.end_ns = j.value("end_ns", int64_t(0));
  v.status = cycle_status_from_string(j.value("status", "")).value_or(CycleStatus::kIncomplete);
  v.reasons = j.value("reasons", std::vector<std::string>{});
  v.finding_ids = j.value("finding_ids", std::vector<int64_t>{});
  v.comparisons = j.value("comparisons", int64_t(0));
  v.comms_ran = j.value("communicators_ran", 0);
  v.comms_covered = j.value("communicators_covered", 0);
  if (j.contains("voters") && j["voters"].is_object())
    for (const auto& [k, n] : j["voters"].items()) v.voters[std::stoi(k)] = n.get<int64_t>();
  v.bytes_fingerprinted = j.value("bytes_fingerprinted", uint64_t(0));
  const std::string r = j.value("replay", "none");
  for (ReplayStatus s : {ReplayStatus::kNone, ReplayStatus::kPass, ReplayStatus::kFail, ReplayStatus::kUnfinished,
                         ReplayStatus::kInconclusive})
    if (r == to_string(s)) v.replay = s;
  v.replay_recipes = j.value("replay_recipes", std::vector<std::string>{});
  v.replay_gpus = j.value("replay_gpus", std::vector<std::string>{});
  return v;
}

CycleVerdict judge_cycle(int64_t index, int64_t cycle_ns, const CycleEvidence& ev, bool watched,
                         const std::vector<FindingEvent>& events, const std::optional<ReplayCycleResult>& replay) {
  CycleVerdict v;
  v.index = index;
  v.begin_ns = index * cycle_ns;
  v.end_ns = v.begin_ns + cycle_ns;
  std::vector<std::string> dirty, missing;
  for (const FindingEvent& e : events) {
    if (e.event_ns < v.begin_ns || e.event_ns >= v.end_ns) continue;
    v.finding_ids.push_back(e.id);
    dirty.push_back(e.kind + " finding #" + std::to_string(e.id) + " (" + e.verdict + ")");
  }
  if (!watched) missing.push_back("the observer did not watch the whole cycle");
  for (const auto& [hash, c] : ev.comms) {
    v.comms_ran++;
    const int64_t disagree = c.compared - c.agree;
    v.comparisons += c.compared;
    if (disagree > 0)
      dirty.push_back("comm " + c.name + ": " + std::to_string(disagree) + " fingerprint disagreements");
    if (c.comparable == 0) continue;  // nothing of it can be compared: not required
    if (c.partial > 0)
      missing.push_back("comm " + c.name + ": " + std::to_string(c.partial) + " comparisons missed voters");
    else if (c.compared == 0)
      missing.push_back("comm " + c.name + ": no sampled fingerprint comparison");
    else
      v.comms_covered++;
  }
  if (ev.comms.empty()) missing.push_back("no collective operation was judged in it");
  v.voters = ev.voters;
  v.bytes_fingerprinted = ev.bytes_fingerprinted;
  if (replay) {
    v.replay = replay->status;
    v.replay_recipes = replay->recipes;
    v.replay_gpus = replay->gpus;
    switch (replay->status) {
      case ReplayStatus::kFail:
        dirty.push_back("the replay cycle failed");
        for (int64_t id : replay->finding_ids) v.finding_ids.push_back(id);
        break;
      case ReplayStatus::kUnfinished: missing.push_back("the replay cycle did not finish"); break;
      case ReplayStatus::kInconclusive: missing.push_back("the replay cycle was inconclusive"); break;
      case ReplayStatus::kNone: missing.push_back("no replay cycle ran"); break;
      case ReplayStatus::kPass: break;
    }
  }
  if (!dirty.empty()) {
    v.status = CycleStatus::kDirty;
    v.reasons = dirty;
  } else if (!missing.empty()) {
    v.status = CycleStatus::kIncomplete;
    v.reasons = missing;
  } else {
    v.status = CycleStatus::kClean;
  }
  return v;
}

}  // namespace scout::ckpt
