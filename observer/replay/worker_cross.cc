// The worker's cycles across nodes (cross_store.h; docs/replay.md, "Across nodes"): what the
// worker thread does between the local cycles the passes hand it.
#include <time.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "common/clock.h"
#include "observer/replay/cross_gemm.h"
#include "observer/replay/worker.h"
#include "replay/server.h"

namespace scout::obs {
namespace {

using shm::mono_ns;

constexpr int64_t kReadyWaitNs = 5'000'000'000;    // for the other nodes' readiness answers
constexpr int64_t kPairWaitNs = 10'000'000'000;    // for a sender's bootstrap id
constexpr int64_t kFirstPlanPollNs = 250'000'000;  // the leader looks for the observers' meeting

std::string pair_name(int src, int dst) { return std::to_string(src) + "-" + std::to_string(dst); }

// The leader's next plan from every node's members: the directed pairs across nodes of every
// spanning communicator, round-robin from *cursor, at most `max_pairs`, and the collective
// classes of those communicators, round-robin from *coll_cursor, at most `max_colls`; nullopt
// when there are none.
std::optional<CrossPlan> make_plan(const std::vector<NodeMembers>& all, uint64_t id, int max_pairs, size_t* cursor,
                                   int max_colls, size_t* coll_cursor) {
  std::vector<std::pair<int, int>> pairs = cross_pairs(all);
  CrossPlan plan;
  plan.id = id;
  plan.seed = plan.id;
  for (size_t i = 0; i < pairs.size() && int(plan.pairs.size()) < max_pairs; ++i)
    plan.pairs.push_back(pairs[(*cursor + i) % pairs.size()]);
  if (!pairs.empty()) *cursor = (*cursor + plan.pairs.size()) % pairs.size();
  plan.colls = next_cross_colls(all, max_colls, coll_cursor);
  if (plan.pairs.empty() && plan.colls.empty()) return std::nullopt;
  for (const NodeMembers& n : all)
    for (const CrossMember& m : n.ranks)
      if (std::any_of(
              plan.pairs.begin(), plan.pairs.end(),
              [&](const std::pair<int, int>& p) { return p.first == m.global_rank || p.second == m.global_rank; }) ||
          std::any_of(plan.colls.begin(), plan.colls.end(), [&](const replay::CollClass& c) {
            return std::binary_search(c.ranks.begin(), c.ranks.end(), m.global_rank);
          }))
        plan.members.push_back(m);
  return plan;
}

}  // namespace

void add_samples(const nlohmann::json& a, std::vector<replay::Sample>* out, nlohmann::json* kept) {
  if (!a.is_array()) return;
  for (const auto& x : a) {
    replay::Sample s;
    std::string e;
    if (!replay::from_json(x, &s, &e)) continue;
    out->push_back(s);
    if (kept) kept->push_back(x);
  }
}

void ReplayWorker::cross_tick() {
  // After a failure the store is reached again with backoff (1 s doubling to 30 s): a Redis that
  // restarted closed the old connection for good, so a new one is opened, and what this node
  // published is published again (the restarted server lost it).
  if (cross_failures_ > 0) {
    if (mono_ns() < cross_retry_ns_) return;
    try {
      cross_->reconnect(opt_.rdzv);
    } catch (const std::exception& e) {
      cross_failed(e.what());
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    worker_log_.push_back("replay across nodes: the rendezvous store answers again after " +
                          std::to_string(cross_failures_) + " failed attempts; reconnected");
    cross_failures_ = 0;
    cross_backoff_ns_ = 0;
    to_publish_ = members_;
  }
  try {
    std::optional<NodeMembers> publish;
    {
      std::lock_guard<std::mutex> lock(mu_);
      publish.swap(to_publish_);
    }
    if (publish) cross_->put_members(*publish);
    if (!cross_seen_) {  // plans older than this observer are not run
      std::optional<CrossPlan> p = cross_->newer_plan(0);
      cross_seen_ = p ? p->id : 0;
    }
    if (node_rank_ == 0 && mono_ns() >= next_cross_ns_) leader_plan();
    std::optional<CrossPlan> plan = cross_->newer_plan(*cross_seen_);
    if (!plan) return;
    const std::vector<int> nodes = plan->nodes();
    if (std::binary_search(nodes.begin(), nodes.end(), node_rank_)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ != CycleState::kIdle) return;  // a local cycle first; the plan is run after it
      state_ = CycleState::kPreparing;
    }
    cross_seen_ = plan->id;
    if (!std::binary_search(nodes.begin(), nodes.end(), node_rank_)) return;
    CycleResult d = run_cross(*plan);
    if (node_rank_ == 0) {  // pace the next plan by the GPU time this one took
      const int64_t wait =
          std::max<int64_t>(opt_.cross_period_ns, int64_t(double(d.gpu_cost_ns) / std::max(1e-6, opt_.budget)));
      next_cross_ns_ = mono_ns() + wait;
    }
    finish(std::move(d));
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ == CycleState::kPreparing || state_ == CycleState::kRunning) state_ = CycleState::kIdle;
    }
    cross_failed(e.what());
  }
}

void ReplayWorker::leader_plan() {
  std::vector<NodeMembers> all = cross_->members(opt_.nodes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    cross_comm_ranks_ = merged_comm_ranks(all);
  }
  // The first plan is written as soon as the observers have met (every node's members are in
  // the store), looked for every kFirstPlanPollNs; it falls back to the pacing interval when some
  // node never publishes. Later plans keep the pacing.
  const bool first = !cross_planned_;
  if (first && !observers_met(all, opt_.nodes)) {
    if (cross_first_look_ns_ == 0) cross_first_look_ns_ = mono_ns();
    if (mono_ns() - cross_first_look_ns_ < opt_.cross_period_ns) {
      next_cross_ns_ = mono_ns() + kFirstPlanPollNs;
      return;
    }
  }
  std::optional<CrossPlan> plan =
      make_plan(all, *cross_seen_ + 1, opt_.max_pairs, &cross_cursor_, opt_.max_colls, &cross_coll_cursor_);
  if (!plan) {  // no pair or class across nodes: the plan may still vote on a GEMM
    plan = CrossPlan{};
    plan->id = plan->seed = *cross_seen_ + 1;
  }
  add_cross_gemms(all, cross_gemm_shapes(opt_.gemms), &gemm_shape_cursor_, &gemm_node_cursor_, &*plan);
  if (plan->pairs.empty() && plan->gemms.empty()) plan.reset();
  next_cross_ns_ = mono_ns() + (first && !plan ? kFirstPlanPollNs : opt_.cross_period_ns);
  if (!plan) return;
  cross_->put_plan(*plan, opt_.nodes);
  cross_planned_ = true;
}

void ReplayWorker::cross_failed(const std::string& what) {
  cross_backoff_ns_ =
      cross_backoff_ns_ == 0 ? opt_.cross_retry_first_ns : std::min(opt_.cross_retry_max_ns, 2 * cross_backoff_ns_);
  cross_retry_ns_ = mono_ns() + cross_backoff_ns_;
  cross_failures_++;
  // Said at the first failure and then at most every cross_say_every_ns (a minute; with the
  // count), not at every poll.
  if (cross_failures_ == 1 || mono_ns() - cross_said_ns_ >= opt_.cross_say_every_ns) {
    cross_said_ns_ = mono_ns();
    std::lock_guard<std::mutex> lock(mu_);
    worker_log_.push_back(fmt::format("replay across nodes: {} ({} {}; reconnecting in {:g} s)", what, cross_failures_,
                                      cross_failures_ == 1 ? "failure" : "failures", double(cross_backoff_ns_) / 1e9));
  }
}

CycleResult ReplayWorker::run_cross(const CrossPlan& plan) {
  CycleResult d;
  CycleJob& job = d.job;
  job.cycle = (*next_cycle_)++;
  job.trigger = Trigger::kCross;
  job.started_ns = shm::wall_ns();
  d.report = node_rank_ == 0;
  std::set<int> local;
  for (const CrossMember& m : plan.members) {
    if (m.node == node_rank_) {
      job.participants.push_back({m.global_rank, m.gpu, m.cuda_dev});
      local.insert(m.global_rank);
    } else {
      d.remote[m.global_rank] = m;
    }
  }
  replay::RecipePlan rp;
  rp.links = plan.pairs;
  rp.colls = plan.colls;
  rp.gemms = plan.gemms;
  rp.seed = plan.seed;
  job.recipes = replay::build_recipes(rp);
  ReplayCycleRecord& rec = d.record;
  start_record(job, &rec);
  rec.detail["plan"] = {{"id", plan.id}, {"nodes", plan.nodes()}};
  const int64_t deadline = mono_ns() + opt_.deadline_ns;
  // Readiness: the same contract on every node (the plan's id, every recipe, every member).
  replay::Contract contract;
  contract.cycle = plan.id;
  for (const replay::Recipe& r : job.recipes) contract.recipes.push_back(r.id);
  for (const CrossMember& m : plan.members) contract.members.push_back(m.global_rank);
  std::sort(contract.members.begin(), contract.members.end());
  nlohmann::json all_answers;
  if (!prepare(job, contract, deadline, &rec, &all_answers)) return d;
  cross_->put(plan.id, "ready/" + std::to_string(node_rank_), all_answers.dump());
  for (int n : plan.nodes()) {
    if (n == node_rank_) continue;
    std::optional<std::string> v =
        cross_->wait(plan.id, "ready/" + std::to_string(n), std::min(deadline, mono_ns() + kReadyWaitNs));
    nlohmann::json a = v ? nlohmann::json::parse(*v, nullptr, false) : nlohmann::json();
    if (a.is_array())
      for (const auto& x : a) all_answers.push_back(x);
  }
  std::vector<replay::GpuInfo> gpus;
  replay::Admission adm = admit_answers(contract, all_answers, job.recipes, &rec, &gpus);
  set_state(CycleState::kRunning);
  std::vector<replay::Sample> samples;
  run_cross_pairs(plan, job.recipes, deadline, &adm, &samples);
  run_cross_colls(plan, job.recipes, deadline, &adm, &samples);
  run_cross_gemms(plan, job.recipes, deadline, &adm, &samples, &rec);  // last: "run" ends the cycle
  nlohmann::json sj = nlohmann::json::array();
  for (const replay::Sample& x : samples) sj.push_back(replay::to_json(x));
  cross_->put(plan.id, "samples/" + std::to_string(node_rank_), sj.dump());
  // The leader judges every pair and collective from every node's samples; another node judges
  // the pairs it received and the collectives it has members in, from the samples it holds (its
  // own; every node's when the plan votes a GEMM), and, the same way as the leader, the GEMM vote
  // across nodes (its record; the leader reports the findings).
  std::vector<replay::Recipe> judged;
  if (node_rank_ == 0 || !plan.gemms.empty()) {
    for (int n : plan.nodes()) {
      if (n == node_rank_) continue;
      std::optional<std::string> v = cross_->wait(plan.id, "samples/" + std::to_string(n), deadline);
      nlohmann::json a = v ? nlohmann::json::parse(*v, nullptr, false) : nlohmann::json();
      if (!a.is_array()) rec.detail["error"] = "node " + std::to_string(n) + " sent no samples by the deadline";
      add_samples(a, &samples, &sj);
    }
  }
  if (node_rank_ == 0) {
    judged = job.recipes;
    add_missing_members(judged, &samples);
  } else {
    for (const replay::Recipe& r : job.recipes)
      if (local.count(r.dst) || r.kind == replay::RecipeKind::kGemm ||
          std::any_of(r.coll.ranks.begin(), r.coll.ranks.end(), [&](int g) { return local.count(g) > 0; }))
        judged.push_back(r);
  }
  rec.detail["samples"] = sj;
  tally_cost(samples, &d);
  std::vector<std::pair<std::string, std::string>> blocked;
  for (const auto& b : adm.inconclusive)
    if (std::any_of(judged.begin(), judged.end(), [&](const replay::Recipe& r) { return r.id == b.first; }))
      blocked.push_back(b);
  judge(judged, gpus, samples, blocked, &d);
  return d;
}

void ReplayWorker::run_cross_pairs(const CrossPlan& plan, const std::vector<replay::Recipe>& recipes, int64_t deadline,
                                   replay::Admission* adm, std::vector<replay::Sample>* samples) {
  std::set<int> local;
  for (const CrossMember& m : plan.members)
    if (m.node == node_rank_) local.insert(m.global_rank);
  std::string lost;
  nlohmann::json ans;
  std::string err;
  for (const replay::Recipe& r : recipes) {
    const bool send = local.count(r.src) > 0, recv = local.count(r.dst) > 0;
    if ((!send && !recv) || std::find(adm->run.begin(), adm->run.end(), r.id) == adm->run.end()) continue;
    if (!lost.empty()) {
      adm->inconclusive.push_back({r.id, "participant lost: " + lost});
      continue;
    }
    const std::string name = "uid/" + pair_name(r.src, r.dst);
    std::string uid;
    if (send) {
      nlohmann::json q = {{"op", "link_id"}, {"cycle", plan.id}, {"recipe", r.id}, {"role", "send"}};
      if (!channel_->call(q, &ans, deadline - mono_ns(), &err)) {
        lost = err;
        adm->inconclusive.push_back({r.id, "participant lost: " + err});
        continue;
      }
      uid = ans.value("uid", "");
      if (uid.empty()) {
        adm->inconclusive.push_back({r.id, "no bootstrap id: " + ans.value("error", ans.dump())});
        continue;
      }
      cross_->put(plan.id, name, uid);
    } else {
      std::optional<std::string> v = cross_->wait(plan.id, name, std::min(deadline, mono_ns() + kPairWaitNs));
      if (!v) {
        adm->inconclusive.push_back(
            {r.id, "no bootstrap id from rank " + std::to_string(r.src) + "'s node by the deadline"});
        continue;
      }
      uid = *v;
    }
    const CrossMember* peer = plan.member(send ? r.dst : r.src);
    replay::Participant pp{peer->global_rank, peer->gpu, peer->cuda_dev};
    const int64_t left_ms = std::max<int64_t>(0, (std::min(deadline, mono_ns() + kPairWaitNs) - mono_ns()) / 1'000'000);
    nlohmann::json q = {{"op", "link_end"},
                        {"cycle", plan.id},
                        {"recipe", r.id},
                        {"role", send ? "send" : "recv"},
                        {"peer", replay::to_json(pp)},
                        {"uid", uid},
                        {"deadline_ms", left_ms}};
    if (!channel_->call(q, &ans, deadline - mono_ns(), &err)) {
      lost = err;
      adm->inconclusive.push_back({r.id, "participant lost: " + err});
      continue;
    }
    add_samples(ans.value("samples", nlohmann::json::array()), samples);
  }
}

}  // namespace scout::obs
