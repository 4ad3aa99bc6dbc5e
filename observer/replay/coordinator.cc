#include "observer/replay/coordinator.h"

#include "observer/replay/lookup.h"

namespace scout::obs {

ReplayCoordinator::ReplayCoordinator(const ReplayOptions& opt, const std::string& job, const std::string& shm_dir,
                                     int node_rank, std::function<void(const std::string&)> log)
    : log_(log),
      reporter_(opt.rule),
      triggers_(opt, node_rank, &next_cycle_, log),
      worker_(opt, job, shm_dir, node_rank, &next_cycle_, log) {}

void ReplayCoordinator::on_pass(const Model& m, const std::vector<JudgedOp>& judged, FindingBoard& board, Sink& sink,
                                int64_t now_ns) {
  for (const JudgedOp& j : judged) observe(m, j);
  step(m, board, now_ns);
  for (ReplayCycleRecord& c : take_records()) sink.put_replay_cycle(&c);
}

void ReplayCoordinator::observe(const Model& m, const JudgedOp& j) { triggers_.observe(m, j); }

std::vector<ReplayCycleRecord> ReplayCoordinator::take_records() {
  std::vector<ReplayCycleRecord> out;
  out.swap(records_);
  return out;
}

void ReplayCoordinator::apply(const Model& m, FindingBoard& board, const CycleResult& d, int64_t now_ns) {
  const ReplayCycleRecord& rec = d.record;
  triggers_.pace(d, now_ns);
  if (log_) {
    std::string why = rec.detail.contains("error") ? " (" + rec.detail["error"].get<std::string>() + ")" : "";
    log_("replay cycle " + std::to_string(rec.cycle) + " (" + rec.trigger + "): " + outcome_word(rec) + ", " +
         std::to_string(d.job.recipes.size()) + " recipes, " + ms_text(rec.ended_ns - rec.started_ns) + why);
  }
  reporter_.apply(m, board, d, worker_.comm_ranks(), now_ns);
}

void ReplayCoordinator::step(const Model& m, FindingBoard& board, int64_t now_ns) {
  if (worker_.across_nodes() && now_ns - members_ns_ >= 1'000'000'000) {  // at most once a second
    triggers_.observe_spanning(m);
    worker_.set_members(triggers_.node_members(m));
    members_ns_ = now_ns;
  }
  for (const std::string& l : worker_.take_log())
    if (log_) log_(l);
  if (std::optional<CycleResult> d = worker_.take_judged()) {
    apply(m, board, *d, now_ns);
    records_.push_back(std::move(d->record));
  }
  reporter_.mark_stragglers(board);
  if (worker_.state() != CycleState::kIdle) return;
  if (!held_) held_ = triggers_.next_job(m, board, reporter_, now_ns, &records_);
  // The worker may have taken the slot for a plan across nodes meanwhile: the job waits for the
  // next pass then.
  if (held_ && worker_.submit(*held_)) held_.reset();
}

}  // namespace scout::obs
