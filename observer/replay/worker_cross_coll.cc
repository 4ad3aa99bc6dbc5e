// The worker's collective recipes across nodes (docs/replay.md, "Across nodes"): a collective
// class of a communicator spanning nodes runs on one replay communicator of all its members, each
// node's scout-replay running its own members, bootstrapped through the key store as links are.
#include <algorithm>
#include <set>

#include "common/clock.h"
#include "observer/replay/worker.h"
#include "replay/server.h"

namespace scout::obs {
namespace {

using shm::mono_ns;

constexpr int64_t kCollWaitNs = 10'000'000'000;  // for the lowest member's bootstrap id, and to run

}  // namespace

void add_missing_members(const std::vector<replay::Recipe>& recipes, std::vector<replay::Sample>* samples) {
  std::set<std::pair<std::string, int>> have;
  for (const replay::Sample& s : *samples) have.insert({s.recipe, s.global_rank});
  for (const replay::Recipe& r : recipes) {
    if (r.kind != replay::RecipeKind::kColl) continue;
    for (int g : r.coll.ranks) {
      if (have.count({r.id, g})) continue;
      for (int round = 0; round < r.rounds; ++round) {
        replay::Sample s;
        s.recipe = r.id;
        s.global_rank = g;
        s.round = round;
        samples->push_back(replay::not_measured(s, replay::SampleStatus::kSkipped,
                                                "no sample from rank " + std::to_string(g) + "'s node"));
      }
    }
  }
}

void ReplayWorker::run_cross_colls(const CrossPlan& plan, const std::vector<replay::Recipe>& recipes, int64_t deadline,
                                   replay::Admission* adm, std::vector<replay::Sample>* samples) {
  std::set<int> local;
  for (const CrossMember& m : plan.members)
    if (m.node == node_rank_) local.insert(m.global_rank);
  std::string lost;
  nlohmann::json ans;
  std::string err;
  int index = -1;  // the class's index in the plan: its key "uid/coll-<i>"
  for (const replay::Recipe& r : recipes) {
    if (r.kind != replay::RecipeKind::kColl) continue;
    ++index;
    const std::vector<int>& ranks = r.coll.ranks;
    if (std::none_of(ranks.begin(), ranks.end(), [&](int g) { return local.count(g) > 0; }) ||
        std::find(adm->run.begin(), adm->run.end(), r.id) == adm->run.end())
      continue;
    if (!lost.empty()) {
      adm->inconclusive.push_back({r.id, "participant lost: " + lost});
      continue;
    }
    const std::string name = "uid/coll-" + std::to_string(index);
    const int64_t until = std::min(deadline, mono_ns() + kCollWaitNs);
    std::string uid;
    if (local.count(ranks.front())) {  // the lowest member's node makes the id
      nlohmann::json q = {{"op", "coll_id"}, {"cycle", plan.id}, {"recipe", r.id}};
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
      std::optional<std::string> v = cross_->wait(plan.id, name, until);
      if (!v) {
        adm->inconclusive.push_back(
            {r.id, "no bootstrap id from rank " + std::to_string(ranks.front()) + "'s node by the deadline"});
        continue;
      }
      uid = *v;
    }
    nlohmann::json members = nlohmann::json::array();
    for (int g : ranks) {
      const CrossMember* m = plan.member(g);
      members.push_back(replay::to_json(replay::Participant{g, m ? m->gpu : "", m ? m->cuda_dev : -1}));
    }
    const int64_t left_ms = std::max<int64_t>(0, (until - mono_ns()) / 1'000'000);
    nlohmann::json q = {{"op", "coll_end"},   {"cycle", plan.id}, {"recipe", r.id},
                        {"members", members}, {"uid", uid},       {"deadline_ms", left_ms}};
    if (!channel_->call(q, &ans, deadline - mono_ns(), &err)) {
      lost = err;
      adm->inconclusive.push_back({r.id, "participant lost: " + err});
      continue;
    }
    if (ans.value("op", "") != "result")
      adm->inconclusive.push_back({r.id, "scout-replay refused the collective: " + ans.value("error", ans.dump())});
    else
      add_samples(ans.value("samples", nlohmann::json::array()), samples);
  }
}

}  // namespace scout::obs
