#include "observer/replay/cross_gemm.h"

#include <algorithm>
#include <set>

#include "common/clock.h"
#include "observer/replay/worker.h"

namespace scout::obs {

std::vector<replay::GemmShape> cross_gemm_shapes(const std::string& spec) {
  std::vector<replay::GemmShape> g;
  std::string err;
  if (spec.empty() || !replay::parse_gemms(spec, &g, &err) || g.empty()) return replay::default_gemms();
  return g;
}

void add_cross_gemms(const std::vector<NodeMembers>& all, const std::vector<replay::GemmShape>& shapes,
                     size_t* shape_cursor, size_t* node_cursor, CrossPlan* plan) {
  if (shapes.empty() || all.empty()) return;
  std::vector<CrossMember> voters;
  std::set<int> nodes;
  size_t taken = 0;
  for (; taken < all.size(); ++taken) {
    const NodeMembers& n = all[(*node_cursor + taken) % all.size()];
    if (!voters.empty() && voters.size() + n.ranks.size() > size_t(kMaxCrossGemmVoters)) break;
    for (const CrossMember& m : n.ranks) voters.push_back(m);
    if (!n.ranks.empty()) nodes.insert(n.node);
  }
  if (nodes.size() < 2 || voters.size() < 3) return;
  *node_cursor = (*node_cursor + taken) % all.size();
  plan->gemms.push_back(shapes[*shape_cursor % shapes.size()]);
  *shape_cursor = (*shape_cursor + 1) % shapes.size();
  for (const CrossMember& m : voters)
    if (!plan->member(m.global_rank)) plan->members.push_back(m);
}

void ReplayWorker::run_cross_gemms(const CrossPlan& plan, const std::vector<replay::Recipe>& recipes, int64_t deadline,
                                   replay::Admission* adm, std::vector<replay::Sample>* samples,
                                   ReplayCycleRecord* rec) {
  std::vector<std::string> ids;
  for (const replay::Recipe& r : recipes)
    if (r.kind == replay::RecipeKind::kGemm && std::find(adm->run.begin(), adm->run.end(), r.id) != adm->run.end())
      ids.push_back(r.id);
  if (ids.empty()) return;
  const int64_t left_ms = std::max<int64_t>(0, (deadline - shm::mono_ns()) / 1'000'000);
  nlohmann::json run = {{"op", "run"}, {"cycle", plan.id}, {"admitted", ids}, {"deadline_ms", left_ms * 8 / 10}};
  nlohmann::json ans;
  std::string err;
  if (!channel_->call(run, &ans, deadline - shm::mono_ns(), &err)) {
    for (const std::string& id : ids) adm->inconclusive.push_back({id, "participant lost: " + err});
    rec->detail["error"] = err;
    return;
  }
  if (ans.value("op", "") != "result") {
    for (const std::string& id : ids) adm->inconclusive.push_back({id, "scout-replay: " + ans.value("error", "")});
    return;
  }
  for (const auto& s : ans.value("samples", nlohmann::json::array())) {
    replay::Sample x;
    std::string e;
    if (replay::from_json(s, &x, &e)) samples->push_back(x);
  }
}

}  // namespace scout::obs
