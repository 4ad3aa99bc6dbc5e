#include "observer/ckpt/store_replay.h"

#include <algorithm>

#include "observer/store/reader.h"
#include "observer/store/sqlite.h"

namespace scout::ckpt {

namespace {

void add_unique(std::vector<std::string>* v, const std::string& s) {
  if (!s.empty() && std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

// Recipe ids and GPU identities of one stored cycle (detail.recipes, detail.gpus[].gpu).
void collect(const obs::ReplayCycleRecord& c, ReplayCycleResult* r) {
  const nlohmann::json& d = c.detail;
  if (d.contains("recipes") && d["recipes"].is_array())
    for (const auto& id : d["recipes"])
      if (id.is_string()) add_unique(&r->recipes, id.get<std::string>());
  if (d.contains("gpus") && d["gpus"].is_array())
    for (const auto& g : d["gpus"])
      if (g.is_object() && g.contains("gpu") && g["gpu"].is_string()) add_unique(&r->gpus, g["gpu"].get<std::string>());
}

// Replay's sdc findings (evidence.source "replay") active while `c` ran.
void failure_findings(const obs::ReplayCycleRecord& c, const std::vector<obs::Finding>& findings,
                      std::vector<int64_t>* ids) {
  for (const obs::Finding& f : findings) {
    if (f.kind != obs::FindingKind::kSdc || f.id == 0) continue;
    if (!f.evidence.is_object() || f.evidence.value("source", "") != "replay") continue;
    if (f.first_seen_ns > c.ended_ns || f.last_seen_ns < c.started_ns) continue;
    if (std::find(ids->begin(), ids->end(), f.id) == ids->end()) ids->push_back(f.id);
  }
}

}  // namespace

ReplayCycleResult replay_outcome(const std::optional<obs::ReplayCycleRecord>& covering,
                                 const std::vector<obs::ReplayCycleRecord>& started,
                                 const std::vector<obs::Finding>& findings) {
  std::vector<const obs::ReplayCycleRecord*> cycles;
  if (covering) cycles.push_back(&*covering);
  for (const obs::ReplayCycleRecord& c : started)
    if (!covering || c.id != covering->id) cycles.push_back(&c);
  ReplayCycleResult r;
  bool failed = false, undecided = false;
  for (const obs::ReplayCycleRecord* c : cycles) {
    collect(*c, &r);
    if (c->outcome == "fail") {
      failed = true;
      failure_findings(*c, findings, &r.finding_ids);
    } else if (c->outcome != "pass") {
      undecided = true;
    }
  }
  std::sort(r.finding_ids.begin(), r.finding_ids.end());
  if (failed)
    r.status = ReplayStatus::kFail;
  else if (!covering)
    r.status = ReplayStatus::kNone;
  else if (undecided)
    r.status = ReplayStatus::kInconclusive;
  else
    r.status = ReplayStatus::kPass;
  return r;
}

StoreReplayCycles::StoreReplayCycles(std::string store_path) : path_(std::move(store_path)) {}

StoreReplayCycles::~StoreReplayCycles() = default;

ReplayCycleResult StoreReplayCycles::result(int64_t begin_ns, int64_t end_ns) {
  try {
    if (!reader_) reader_ = store::StoreReader::open(path_);
    std::optional<obs::ReplayCycleRecord> covering = reader_->replay_cycle_covering(begin_ns);
    std::vector<obs::ReplayCycleRecord> started = reader_->replay_cycles(begin_ns, end_ns - 1);
    std::vector<obs::Finding> findings;
    const auto failed = [](const obs::ReplayCycleRecord& c) { return c.outcome == "fail"; };
    if ((covering && failed(*covering)) || std::any_of(started.begin(), started.end(), failed))
      findings = reader_->findings();
    reader_->refresh();  // let go of the read snapshot: an open one would keep the WAL from being checkpointed
    error_.clear();
    return replay_outcome(covering, started, findings);
  } catch (const store::Error& e) {
    error_ = e.what();
    reader_.reset();
    return ReplayCycleResult{};
  }
}

}  // namespace scout::ckpt
