#include "observer/replay/worker.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>

#include "common/clock.h"
#include "common/hex.h"
#include "observer/net/key_store.h"
#include "replay/judge.h"
#include "replay/server.h"

namespace scout::obs {

using replay::Participant;
using replay::Recipe;
using shm::mono_ns;

ReplayWorker::ReplayWorker(const ReplayOptions& opt, const std::string& job, const std::string& shm_dir, int node_rank,
                           std::atomic<uint64_t>* next_cycle, std::function<void(const std::string&)> log)
    : opt_(opt), node_rank_(node_rank), next_cycle_(next_cycle), log_(std::move(log)) {
  std::vector<std::string> argv = opt_.program;
  if (argv.empty()) argv = {default_replay_program()};
  if (argv.size() == 1) {
    argv.insert(argv.end(), {"--job", job, "--shm-dir", shm_dir, "--max-mem", std::to_string(opt_.max_mem)});
  }
  channel_ = std::make_unique<ReplayChannel>(argv);
  if (!opt_.rdzv.empty() && opt_.nodes > 1) {
    try {
      cross_ = std::make_unique<CrossStore>(net::open_key_store(opt_.rdzv), job);
    } catch (const std::exception& e) {
      if (log_) log_(std::string("replay: no links across nodes: ") + e.what());
    }
  }
  thread_ = std::thread([this] { loop(); });
}

ReplayWorker::~ReplayWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  sigset_t pipe_set, old_set;  // stop() writes "quit" from this thread
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  channel_->stop();
  timespec zero{0, 0};  // consume a SIGPIPE the write raised before unblocking
  while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {}
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
}

CycleState ReplayWorker::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

bool ReplayWorker::submit(CycleJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != CycleState::kIdle) return false;
    pending_ = std::move(job);
    state_ = CycleState::kQueued;
  }
  cv_.notify_all();
  return true;
}

bool ReplayWorker::preempt() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!local_trigger_ || *local_trigger_ == Trigger::kStuck || cancel_) return false;
  if (state_ != CycleState::kPreparing && state_ != CycleState::kRunning) return false;
  cancel_ = true;
  return true;
}

std::optional<CycleResult> ReplayWorker::take_judged() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != CycleState::kJudged) return std::nullopt;
  std::optional<CycleResult> out;
  out.swap(judged_);
  state_ = CycleState::kIdle;
  return out;
}

std::vector<std::string> ReplayWorker::take_log() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.swap(worker_log_);
  return out;
}

void ReplayWorker::set_members(NodeMembers members) {
  std::lock_guard<std::mutex> lock(mu_);
  if (members == members_) return;
  members_ = std::move(members);
  to_publish_ = members_;
}

std::map<std::string, std::map<int, int>> ReplayWorker::comm_ranks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cross_comm_ranks_;
}

int ReplayWorker::child_pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return channel_->pid();
}

uint64_t ReplayWorker::cycles_done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cycles_done_;
}

void ReplayWorker::set_state(CycleState s) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = s;
}

void ReplayWorker::finish(CycleResult d) {
  std::lock_guard<std::mutex> lock(mu_);
  local_trigger_.reset();
  cancel_ = false;
  judged_ = std::move(d);
  state_ = CycleState::kJudged;
  cycles_done_++;
}

void ReplayWorker::loop() {
  // A write to a scout-replay that died must fail with EPIPE, not kill the observer: SIGPIPE is
  // directed at the writing thread, so blocking it here is enough (the child inherits the mask;
  // scout-replay ignores SIGPIPE anyway).
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  for (;;) {
    std::optional<CycleJob> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return stop_ || pending_.has_value(); };
      if (cross_)
        cv_.wait_for(lock, std::chrono::milliseconds(200), ready);  // polls the store for plans
      else
        cv_.wait(lock, ready);
      if (stop_) return;
      job.swap(pending_);
      if (job) {
        state_ = CycleState::kPreparing;
        local_trigger_ = job->trigger;
        cancel_ = false;
      }
    }
    if (job)
      finish(run_local(*job));
    else if (cross_)
      cross_tick();
  }
}

void ReplayWorker::start_record(const CycleJob& job, ReplayCycleRecord* rec) {
  rec->cycle = job.cycle;
  rec->trigger = to_string(job.trigger);
  rec->started_ns = shm::wall_ns();
  rec->outcome = "inconclusive";
  nlohmann::json parts = nlohmann::json::array(), rids = nlohmann::json::array();
  for (const Participant& p : job.participants) parts.push_back(replay::to_json(p));
  for (const Recipe& r : job.recipes) rids.push_back(r.id);
  rec->detail["participants"] = parts;
  rec->detail["recipes"] = rids;
  if (!job.request.empty()) rec->detail["request"] = job.request;
}

bool ReplayWorker::prepare(const CycleJob& job, const replay::Contract& contract, int64_t deadline,
                           ReplayCycleRecord* rec, nlohmann::json* answers) {
  nlohmann::json parts = nlohmann::json::array(), recipes = nlohmann::json::array();
  for (const Participant& p : job.participants) parts.push_back(replay::to_json(p));
  for (const Recipe& r : job.recipes) recipes.push_back(replay::to_json(r));
  nlohmann::json prep = {
      {"op", "prepare"}, {"contract", replay::to_json(contract)}, {"participants", parts}, {"recipes", recipes}};
  nlohmann::json ans;
  std::string err;
  if (!channel_->call(prep, &ans, deadline - mono_ns(), &err, &cancel_)) {
    rec->detail["error"] = err;
  } else if (ans.value("op", "") != "ready") {
    rec->detail["error"] = "scout-replay: " + ans.value("error", ans.dump());
  } else {
    rec->backend = ans.value("backend", "");
    *answers = ans.value("answers", nlohmann::json::array());
    return true;
  }
  rec->ended_ns = shm::wall_ns();
  return false;
}

replay::Admission admit_answers(const replay::Contract& contract, const nlohmann::json& answers,
                                const std::vector<Recipe>& recipes, ReplayCycleRecord* rec,
                                std::vector<replay::GpuInfo>* gpus) {
  std::vector<replay::Readiness> ready;
  nlohmann::json gj = nlohmann::json::array();
  for (const auto& a : answers) {
    replay::Readiness r;
    std::string e;
    if (!a.is_object() || !a.contains("gpu") || !replay::from_json(a["gpu"], &r.gpu, &e)) continue;
    r.digest = std::strtoull(a.value("digest", "0").c_str(), nullptr, 16);
    ready.push_back(r);
    gpus->push_back(r.gpu);
    gj.push_back(replay::to_json(r.gpu));
  }
  rec->detail["gpus"] = gj;
  replay::ContractCheck check = replay::check_contract(contract, ready);
  rec->detail["contract"] = {{"digest", shm::fp_hex(replay::contract_digest(contract))},
                             {"missing", check.missing},
                             {"not_ready", check.not_ready},
                             {"wrong_contract", check.wrong_contract}};
  return replay::admit(recipes, check, ready);
}

void ReplayWorker::tally_cost(const std::vector<replay::Sample>& samples, CycleResult* d) {
  std::map<int, int64_t> busy;
  for (const replay::Sample& x : samples) {
    if (x.status != replay::SampleStatus::kOk || x.ns < 0) continue;
    d->any_ok = true;
    busy[x.global_rank] += x.ns;
    if (x.peer >= 0) busy[x.peer] += x.ns;  // a link occupies the sender too
  }
  for (const auto& [rank, ns] : busy) d->gpu_cost_ns = std::max(d->gpu_cost_ns, ns);
}

void ReplayWorker::judge(const std::vector<Recipe>& recipes, const std::vector<replay::GpuInfo>& gpus,
                         const std::vector<replay::Sample>& samples,
                         const std::vector<std::pair<std::string, std::string>>& blocked, CycleResult* d) const {
  d->verdict = replay::judge(recipes, gpus, samples, blocked, opt_.rule);
  d->have_verdict = true;
  d->record.outcome = to_string(d->verdict.outcome);
  d->record.detail["verdict"] = replay::to_json(d->verdict);
  d->record.ended_ns = shm::wall_ns();
}

CycleResult ReplayWorker::run_local(const CycleJob& job) {
  CycleResult d;
  d.job = job;
  ReplayCycleRecord& rec = d.record;
  start_record(job, &rec);
  const int64_t deadline = mono_ns() + opt_.deadline_ns;
  replay::Contract contract;
  contract.cycle = job.cycle;
  for (const Recipe& r : job.recipes) contract.recipes.push_back(r.id);
  for (const Participant& p : job.participants) contract.members.push_back(p.global_rank);
  nlohmann::json answers;
  if (!prepare(job, contract, deadline, &rec, &answers)) return d;
  std::vector<replay::GpuInfo> gpus;
  replay::Admission adm = admit_answers(contract, answers, job.recipes, &rec, &gpus);
  set_state(CycleState::kRunning);
  std::vector<replay::Sample> samples;
  if (!adm.run.empty()) {
    const int64_t left_ms = (deadline - mono_ns()) / 1'000'000;
    nlohmann::json run = {{"op", "run"},
                          {"cycle", job.cycle},
                          {"admitted", adm.run},
                          {"deadline_ms", std::max<int64_t>(0, left_ms * 8 / 10)},
                          {"recipe_deadline_ms", job.recipe_deadline_ns / 1'000'000}};
    nlohmann::json ans;
    std::string err;
    if (!channel_->call(run, &ans, deadline - mono_ns(), &err, &cancel_)) {
      // A participant lost mid-cycle: every admitted recipe is undecided.
      for (const std::string& id : adm.run) adm.inconclusive.push_back({id, "participant lost: " + err});
      rec.detail["error"] = err;
    } else if (ans.value("op", "") != "result") {
      for (const std::string& id : adm.run) adm.inconclusive.push_back({id, "scout-replay: " + ans.value("error", "")});
    } else {
      nlohmann::json sj = nlohmann::json::array();
      for (const auto& s : ans.value("samples", nlohmann::json::array())) {
        replay::Sample x;
        std::string e;
        if (replay::from_json(s, &x, &e)) {
          samples.push_back(x);
          sj.push_back(s);
        }
      }
      rec.detail["samples"] = sj;
      tally_cost(samples, &d);
    }
  }
  judge(job.recipes, gpus, samples, adm.inconclusive, &d);
  return d;
}

}  // namespace scout::obs
