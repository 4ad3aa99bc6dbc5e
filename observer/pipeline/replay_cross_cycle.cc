// The coordinator's cross-node cycles (replay_cross.h; docs/replay.md, "Across nodes"): what the
// worker thread does between the cycles the passes hand it.
#include <time.h>

#include <algorithm>

#include "common/clock.h"
#include "common/names.h"
#include "observer/pipeline/replay_coordinator.h"
#include "replay/contract.h"
#include "replay/server.h"
#include "replay/vote.h"

namespace scout::obs {
namespace {

using shm::mono_ns;


constexpr int64_t kReadyWaitNs = 5'000'000'000;  // for the other nodes' readiness answers
constexpr int64_t kPairWaitNs = 10'000'000'000;  // for a sender's bootstrap id

std::string pair_name(int src, int dst) { return std::to_string(src) + "-" + std::to_string(dst); }

}  // namespace

NodeMembers ReplayCoordinator::node_members(const Model& m) const {
  NodeMembers n;
  n.node = node_rank_;
  for (const Proc& p : m.procs()) {
    if (p.node_rank != node_rank_ || p.state != ProcState::kRunning || p.global_rank < 0 || p.gpu.empty()) continue;
    n.ranks.push_back({p.global_rank, p.gpu, p.cuda_dev, p.host, p.pid, node_rank_});
  }
  std::sort(n.ranks.begin(), n.ranks.end(),
            [](const CrossMember& a, const CrossMember& b) { return a.global_rank < b.global_rank; });
  for (const auto& [key, c] : m.comms()) {
    if (c.nnodes < 2 && c.members_known()) continue;  // on this node only
    std::vector<int> mine;
    std::map<int, int> ranks;
    for (int cr = 0; cr < int(c.ranks.size()); ++cr) {
      const int proc = c.ranks[cr].proc;
      if (proc < 0 || m.proc(proc).node_rank != node_rank_ || m.proc(proc).global_rank < 0) continue;
      mine.push_back(m.proc(proc).global_rank);
      ranks[cr] = m.proc(proc).global_rank;
    }
    if (mine.empty()) continue;
    std::sort(mine.begin(), mine.end());
    const std::string k = cross_comm_key(key.hash, key.nranks);
    n.comms[k] = mine;
    n.comm_ranks[k] = ranks;
  }
  return n;
}

void ReplayCoordinator::cross_tick() {
  try {
    NodeMembers mine;
    bool dirty = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      mine = members_;
      dirty = members_dirty_;
      members_dirty_ = false;
    }
    if (dirty) cross_->put_members(mine);
    if (!cross_started_) {  // plans older than this observer are not run
      if (std::optional<CrossPlan> p = cross_->newer_plan(0)) cross_seen_ = p->id;
      cross_started_ = true;
    }
    if (node_rank_ == 0 && mono_ns() >= next_cross_ns_) {
      next_cross_ns_ = mono_ns() + opt_.cross_period_ns;
      std::vector<NodeMembers> all = cross_->members(opt_.nodes);
      {
        std::lock_guard<std::mutex> lock(mu_);
        cross_comm_ranks_ = merged_comm_ranks(all);
      }
      std::vector<std::pair<int, int>> pairs = cross_pairs(all);
      if (!pairs.empty()) {
        CrossPlan plan;
        plan.id = cross_seen_ + 1;
        plan.seed = plan.id;
        for (size_t i = 0; i < pairs.size() && int(plan.pairs.size()) < opt_.max_pairs; ++i)
          plan.pairs.push_back(pairs[(cross_cursor_ + i) % pairs.size()]);
        cross_cursor_ = (cross_cursor_ + plan.pairs.size()) % pairs.size();
        for (const NodeMembers& n : all)
          for (const CrossMember& m : n.ranks)
            if (std::any_of(plan.pairs.begin(), plan.pairs.end(), [&](const std::pair<int, int>& p) {
                  return p.first == m.global_rank || p.second == m.global_rank;
                }))
              plan.members.push_back(m);
        cross_->put_plan(plan, opt_.nodes);
      }
    }
    std::optional<CrossPlan> plan = cross_->newer_plan(cross_seen_);
    if (!plan) return;
    cross_seen_ = plan->id;
    const std::vector<int> nodes = plan->nodes();
    if (!std::binary_search(nodes.begin(), nodes.end(), node_rank_)) return;
    Done d = run_cross(*plan);
    if (node_rank_ == 0) {  // pace the next plan by the GPU time this one took
      const int64_t wait = std::max<int64_t>(opt_.cross_period_ns,
                                             int64_t(double(d.gpu_cost_ns) / std::max(1e-6, opt_.budget)));
      next_cross_ns_ = mono_ns() + wait;
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_.push_back(std::move(d));
    cycles_done_++;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    worker_log_.push_back(std::string("replay across nodes: ") + e.what());
  }
}

ReplayCoordinator::Done ReplayCoordinator::run_cross(const CrossPlan& plan) {
  Done d;
  Job& job = d.job;
  job.cycle = next_cycle_++;
  job.trigger = "cross";
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
  rp.seed = plan.seed;
  job.recipes = replay::build_recipes(rp);
  ReplayCycleRecord& rec = d.record;
  nlohmann::json parts, recipes;
  start_record(job, &rec, &parts, &recipes);
  rec.detail["plan"] = {{"id", plan.id}, {"nodes", plan.nodes()}};
  const int64_t deadline = mono_ns() + opt_.deadline_ns;
  auto give_up = [&](const std::string& why) {
    rec.detail["error"] = why;
    rec.ended_ns = shm::wall_ns();
    return d;
  };
  // Readiness: the same contract on every node (the plan's id, every recipe, every member).
  replay::Contract contract;
  contract.cycle = plan.id;
  for (const replay::Recipe& r : job.recipes) contract.recipes.push_back(r.id);
  for (const CrossMember& m : plan.members) contract.members.push_back(m.global_rank);
  std::sort(contract.members.begin(), contract.members.end());
  nlohmann::json ans;
  std::string err;
  nlohmann::json prep = {
      {"op", "prepare"}, {"contract", replay::to_json(contract)}, {"participants", parts}, {"recipes", recipes}};
  if (!channel_->call(prep, &ans, deadline - mono_ns(), &err)) return give_up(err);
  if (ans.value("op", "") != "ready") return give_up("scout-replay: " + ans.value("error", ans.dump()));
  rec.backend = ans.value("backend", "");
  nlohmann::json all_answers = ans.value("answers", nlohmann::json::array());
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
  // This node's ends, one pair at a time in the plan's order (every node walks the same order,
  // so each pair's bootstrap meets its peer).
  std::vector<replay::Sample> samples;
  std::string lost;
  for (const replay::Recipe& r : job.recipes) {
    const bool send = local.count(r.src) > 0, recv = local.count(r.dst) > 0;
    if ((!send && !recv) || std::find(adm.run.begin(), adm.run.end(), r.id) == adm.run.end()) continue;
    if (!lost.empty()) {
      adm.inconclusive.push_back({r.id, "participant lost: " + lost});
      continue;
    }
    const std::string name = "uid/" + pair_name(r.src, r.dst);
    std::string uid;
    if (send) {
      nlohmann::json q = {{"op", "link_id"}, {"cycle", plan.id}, {"recipe", r.id}, {"role", "send"}};
      if (!channel_->call(q, &ans, deadline - mono_ns(), &err)) {
        lost = err;
        adm.inconclusive.push_back({r.id, "participant lost: " + err});
        continue;
      }
      uid = ans.value("uid", "");
      if (uid.empty()) {
        adm.inconclusive.push_back({r.id, "no bootstrap id: " + ans.value("error", ans.dump())});
        continue;
      }
      cross_->put(plan.id, name, uid);
    } else {
      std::optional<std::string> v = cross_->wait(plan.id, name, std::min(deadline, mono_ns() + kPairWaitNs));
      if (!v) {
        adm.inconclusive.push_back(
            {r.id, "no bootstrap id from rank " + std::to_string(r.src) + "'s node by the deadline"});
        continue;
      }
      uid = *v;
    }
    const CrossMember* peer = plan.member(send ? r.dst : r.src);
    replay::Participant pp{peer->global_rank, peer->gpu, peer->cuda_dev};
    const int64_t left_ms = std::max<int64_t>(0, (std::min(deadline, mono_ns() + kPairWaitNs) - mono_ns()) / 1'000'000);
    nlohmann::json q = {{"op", "link_end"},  {"cycle", plan.id}, {"recipe", r.id},       {"role", send ? "send" : "recv"},
                        {"peer", replay::to_json(pp)}, {"uid", uid}, {"deadline_ms", left_ms}};
    if (!channel_->call(q, &ans, deadline - mono_ns(), &err)) {
      lost = err;
      adm.inconclusive.push_back({r.id, "participant lost: " + err});
      continue;
    }
    for (const auto& sj : ans.value("samples", nlohmann::json::array())) {
      replay::Sample x;
      std::string e;
      if (replay::from_json(sj, &x, &e)) samples.push_back(x);
    }
  }
  nlohmann::json sj = nlohmann::json::array();
  for (const replay::Sample& x : samples) sj.push_back(replay::to_json(x));
  cross_->put(plan.id, "samples/" + std::to_string(node_rank_), sj.dump());
  // The leader judges every pair from every node's samples; another node judges the pairs it
  // received (its record; the leader reports the findings).
  std::vector<replay::Recipe> judged;
  if (node_rank_ == 0) {
    for (int n : plan.nodes()) {
      if (n == node_rank_) continue;
      std::optional<std::string> v = cross_->wait(plan.id, "samples/" + std::to_string(n), deadline);
      nlohmann::json a = v ? nlohmann::json::parse(*v, nullptr, false) : nlohmann::json();
      if (!a.is_array()) {
        rec.detail["error"] = "node " + std::to_string(n) + " sent no samples by the deadline";
        continue;
      }
      for (const auto& x : a) {
        replay::Sample s;
        std::string e;
        if (replay::from_json(x, &s, &e)) {
          samples.push_back(s);
          sj.push_back(x);
        }
      }
    }
    judged = job.recipes;
  } else {
    for (const replay::Recipe& r : job.recipes)
      if (local.count(r.dst)) judged.push_back(r);
  }
  rec.detail["samples"] = sj;
  tally_cost(samples, &d);
  std::vector<std::pair<std::string, std::string>> blocked;
  for (const auto& b : adm.inconclusive)
    if (std::any_of(judged.begin(), judged.end(), [&](const replay::Recipe& r) { return r.id == b.first; }))
      blocked.push_back(b);
  d.verdict = replay::judge(judged, gpus, samples, blocked, opt_.rule);
  d.have_verdict = true;
  rec.outcome = d.verdict.outcome;
  rec.detail["verdict"] = replay::to_json(d.verdict);
  rec.ended_ns = shm::wall_ns();
  return d;
}

}  // namespace scout::obs
