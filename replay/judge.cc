#include "replay/judge.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/hex.h"
#include "replay/contract.h"

namespace scout::replay {
namespace {

using SampleList = std::vector<const Sample*>;
using shm::fp_hex;

// A fingerprint vote: every voter once, the electorate the voters themselves.
VoteResult<uint64_t> fp_vote(const std::vector<std::pair<int, uint64_t>>& ballots) {
  return strict_majority(ballots, int(ballots.size()));
}

// Times of round 0 that were measured (>= 0).
std::vector<int64_t> measured(const std::vector<int64_t>& row) {
  std::vector<int64_t> x;
  for (int64_t t : row)
    if (t >= 0) x.push_back(t);
  return x;
}

// The timing of one GEMM vote class: confirmed outliers are slow GPUs; GPUs measured in enough
// rounds and not slow (in a class of at least three) are normal.
void judge_gemm_timing(const Recipe& r, const std::vector<int>& ranks,
                       std::map<int, std::map<int, const Sample*>>& by_rank, const OutlierRule& rule, CycleVerdict* v,
                       std::map<int, SlowGpu>* normal) {
  std::map<int, std::vector<int64_t>> per_round;  // round -> ns per class member (or -1)
  for (size_t i = 0; i < ranks.size(); ++i)
    for (const auto& [rd, s] : by_rank[ranks[i]]) {
      auto& row = per_round[rd];
      row.resize(ranks.size(), -1);
      row[i] = s->ns;
    }
  std::vector<std::vector<int64_t>> rounds;
  for (auto& [rd, row] : per_round) {
    row.resize(ranks.size(), -1);
    rounds.push_back(row);
  }
  std::vector<int> slow = confirmed_outliers(rounds, rule);
  std::set<int> slow_set(slow.begin(), slow.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    int count = 0;
    for (const auto& row : rounds) count += row[i] >= 0;
    SlowGpu sg;
    sg.global_rank = ranks[i];
    sg.gpu = by_rank[ranks[i]].begin()->second->gpu;
    sg.recipe = r.id;
    sg.median_ns = median_of(measured(rounds[0]));
    for (const auto& row : rounds) sg.ns.push_back(row[i]);
    if (slow_set.count(int(i))) {
      v->slow_gpus.push_back(sg);
    } else if (count >= rule.confirm_rounds && ranks.size() >= 3) {
      auto [it, added] = normal->try_emplace(ranks[i], sg);
      if (!added && sg.median_ns > it->second.median_ns) it->second = sg;
    }
  }
}

void judge_gemm(const Recipe& r, const SampleList& ss, const std::map<int, const GpuInfo*>& gpus,
                const OutlierRule& rule, CycleVerdict* v, RecipeOutcome* ro, std::map<int, SlowGpu>* normal) {
  // rank -> samples by round
  std::map<int, std::map<int, const Sample*>> by_rank;
  for (const Sample* s : ss)
    if (s->status == SampleStatus::kOk) by_rank[s->global_rank][s->round] = s;
  if (by_rank.empty()) {
    ro->outcome = Outcome::kInconclusive;
    ro->reason = ss.empty() ? "no sample" : ss[0]->reason;
    return;
  }
  std::map<std::string, std::vector<int>> classes;
  for (const auto& [rank, rounds] : by_rank) {
    auto it = gpus.find(rank);
    classes[it == gpus.end() ? "?" : vote_class(*it->second)].push_back(rank);
  }
  bool fail = false, undecided = false;
  std::string why;
  for (const auto& [cls, ranks] : classes) {
    std::vector<std::pair<int, uint64_t>> ballots;
    for (int rank : ranks) {
      const auto& rounds = by_rank[rank];
      const Sample* first = rounds.begin()->second;
      bool consistent = true;
      for (const auto& [rd, s] : rounds) consistent &= s->fp == first->fp;
      if (!consistent) {
        SdcVerdict sv{rank, first->gpu, SdcCheck::kGemmSelf, r.id, -1, nlohmann::json::object()};
        for (const auto& [rd, s] : rounds) sv.votes["round" + std::to_string(rd)] = fp_hex(s->fp);
        v->sdc.push_back(sv);
        fail = true;
        continue;
      }
      ballots.push_back({rank, first->fp});
    }
    const VoteResult<uint64_t> vr = fp_vote(ballots);
    if (vr.verdict == VoteVerdict::kAttributed) {
      for (int rank : vr.dissenters)
        v->sdc.push_back({rank, by_rank[rank].begin()->second->gpu, SdcCheck::kGemmVote, r.id, -1, vote_json(vr)});
      fail = true;
    } else if (vr.verdict == VoteVerdict::kInconclusive) {
      undecided = true;
      why = "no strict majority among " + std::to_string(ballots.size()) + " GPUs of class " + cls;
    }
    judge_gemm_timing(r, ranks, by_rank, rule, v, normal);
  }
  ro->outcome = fail ? Outcome::kFail : undecided ? Outcome::kInconclusive : Outcome::kPass;
  ro->reason = fail ? "GPU output differs" : why;
}

// A link: the receiver's fingerprint against the expected payload's.
void judge_link(const Recipe& r, const SampleList& ss, const std::string& skip, CycleVerdict* v, RecipeOutcome* ro) {
  const bool ok = !ss.empty() && skip.empty();
  bool corrupt = false;
  nlohmann::json fps = nlohmann::json::object();
  for (const Sample* s : ss)
    if (s->status == SampleStatus::kOk && s->expected_known && s->fp != s->expected_fp) {
      corrupt = true;
      fps["round" + std::to_string(s->round)] = fp_hex(s->fp);
      fps["expected"] = fp_hex(s->expected_fp);
    }
  if (corrupt) {
    v->sdc.push_back({r.dst, ss[0]->gpu, SdcCheck::kLink, r.id, r.src, fps});
    ro->outcome = Outcome::kFail;
    ro->reason = "payload from rank " + std::to_string(r.src) + " arrived corrupted";
  } else if (!ok) {
    ro->outcome = Outcome::kInconclusive;
    ro->reason = ss.empty() ? "no sample (participant lost)" : skip;
  }
}

// A collective: every member's result against the exact expected one, or (no exact result
// known) a vote of the members that hold the same result.
void judge_coll(const Recipe& r, const SampleList& ss, std::string skip, CycleVerdict* v, RecipeOutcome* ro) {
  std::vector<const Sample*> wrong, right;
  std::vector<std::pair<int, uint64_t>> ballots;  // members without an exact expected result vote instead
  for (const Sample* s : ss) {
    if (s->status != SampleStatus::kOk) continue;
    if (s->expected_known)
      (s->fp == s->expected_fp ? right : wrong).push_back(s);
    else if (r.coll.func == "AllReduce" || r.coll.func == "AllGather" || r.coll.func == "Broadcast")
      ballots.push_back({s->global_rank, s->fp});
  }
  const VoteResult<uint64_t> vr = fp_vote(ballots);
  if (vr.verdict == VoteVerdict::kAttributed)
    for (const Sample* s : ss)
      if (std::find(vr.dissenters.begin(), vr.dissenters.end(), s->global_rank) != vr.dissenters.end())
        wrong.push_back(s);
  if (vr.verdict == VoteVerdict::kInconclusive && skip.empty()) skip = "members disagree without a strict majority";
  std::set<int> wrong_ranks;
  for (const Sample* s : wrong) wrong_ranks.insert(s->global_rank);
  // Members hold the same result only in AllReduce, AllGather and Broadcast: there a member
  // that differs while others match received corrupted data. In a ReduceScatter a corrupted
  // input changes only the chunk of the member that owns it, so nobody can be blamed.
  const bool same_result = r.coll.func != "ReduceScatter";
  if (!wrong.empty() && !right.empty() && same_result) {
    for (int rank : wrong_ranks) {
      const Sample* s =
          *std::find_if(wrong.begin(), wrong.end(), [&](const Sample* x) { return x->global_rank == rank; });
      v->sdc.push_back(
          {rank, s->gpu, SdcCheck::kColl, r.id, -1, {{"got", fp_hex(s->fp)}, {"expected", fp_hex(s->expected_fp)}}});
    }
    ro->outcome = Outcome::kFail;
    ro->reason = "members received a result that differs from the expected one";
  } else if (!wrong.empty()) {
    ro->outcome = Outcome::kFail;
    ro->reason = right.empty() ? "every member's result differs from the expected one (a corrupted input)"
                               : "some members' chunks differ from the expected ones (a corrupted input or link)";
  } else if (!skip.empty() || ss.empty()) {
    ro->outcome = Outcome::kInconclusive;
    ro->reason = ss.empty() ? "no sample (participant lost)" : skip;
  }
}

// Slow links: outliers among the cycle's directed pairs, per round, named as unordered pairs.
void judge_link_times(const std::vector<const Recipe*>& links, std::map<std::string, SampleList>& by_recipe,
                      const OutlierRule& rule, CycleVerdict* v) {
  if (links.empty()) return;
  std::map<int, std::vector<int64_t>> per_round;  // round -> (recipe index -> ns)
  for (size_t i = 0; i < links.size(); ++i)
    for (const Sample* s : by_recipe[links[i]->id]) {
      if (s->status != SampleStatus::kOk) continue;
      auto& row = per_round[s->round];
      row.resize(links.size(), -1);
      row[i] = s->ns;
    }
  std::vector<std::vector<int64_t>> rounds;
  for (auto& [rd, row] : per_round) {
    row.resize(links.size(), -1);
    rounds.push_back(row);
  }
  const int64_t med = rounds.empty() ? 0 : median_of(measured(rounds[0]));
  std::map<std::pair<int, int>, SlowPair> pairs;
  for (int i : confirmed_outliers(rounds, rule)) {
    const Recipe* r = links[i];
    std::pair<int, int> key{std::min(r->src, r->dst), std::max(r->src, r->dst)};
    SlowPair& p = pairs[key];
    p.a = key.first;
    p.b = key.second;
    p.recipes.push_back(r->id);
    p.ns = std::max(p.ns, rounds[0][i]);
    p.median_ns = med;
  }
  for (auto& [k, p] : pairs) v->slow_pairs.push_back(p);
}

// The GPUs and links the cycle's timeouts name (judge.h, "timeouts").
void judge_timeouts(const std::vector<Recipe>& recipes, std::map<std::string, SampleList>& by_recipe, CycleVerdict* v) {
  std::map<int, std::vector<std::string>> gemm_out;     // rank -> GEMMs that timed out on it
  std::set<int> finished;                               // ranks that finished a GEMM, or ended a finished link
  std::map<std::pair<int, int>, std::string> link_out;  // timed-out directed pairs -> recipe
  std::map<int, int> link_timeouts;                     // rank -> timed-out links it is an end of
  for (const Recipe& r : recipes) {
    const SampleList& ss = by_recipe[r.id];
    bool out = false, ok = !ss.empty();
    for (const Sample* s : ss) {
      out |= s->status == SampleStatus::kTimeout;
      ok &= s->status == SampleStatus::kOk;
      if (r.kind == RecipeKind::kGemm && s->status == SampleStatus::kTimeout) {
        auto& l = gemm_out[s->global_rank];
        if (std::find(l.begin(), l.end(), r.id) == l.end()) l.push_back(r.id);
      }
      if (r.kind == RecipeKind::kGemm && s->status == SampleStatus::kOk) finished.insert(s->global_rank);
    }
    if (out) v->timed_out.push_back(r.id);
    if (r.kind != RecipeKind::kLink) continue;
    if (out) {
      link_out[{r.src, r.dst}] = r.id;
      link_timeouts[r.src]++;
      link_timeouts[r.dst]++;
    } else if (ok) {
      finished.insert(r.src);
      finished.insert(r.dst);
    }
  }
  // gpu: a GEMM timed out on R while another GPU finished it.
  std::set<int> hung;
  for (const auto& [rank, ids] : gemm_out) {
    std::vector<std::string> named;
    for (const std::string& id : ids)
      for (const Sample* s : by_recipe[id])
        if (s->status == SampleStatus::kOk && s->global_rank != rank) {
          named.push_back(id);
          break;
        }
    hung.insert(rank);
    if (!named.empty()) v->timeouts.push_back({"gpu", {rank}, named});
  }
  // link: both directions timed out, nothing else on either end did, and each end finished something.
  for (const auto& [pair, id] : link_out) {
    const auto [a, b] = pair;
    if (a > b || !link_out.count({b, a})) continue;
    if (hung.count(a) || hung.count(b) || gemm_out.count(a) || gemm_out.count(b)) continue;
    if (link_timeouts[a] != 2 || link_timeouts[b] != 2) continue;  // another link of an end timed out too
    if (!finished.count(a) || !finished.count(b)) continue;
    v->timeouts.push_back({"link", {a, b}, {id, link_out[{b, a}]}});
  }
}

}  // namespace

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kInconclusive: return "inconclusive";
    case Outcome::kTimeout: return "timeout";
  }
  return "?";
}

const char* to_string(SdcCheck c) {
  switch (c) {
    case SdcCheck::kGemmVote: return "gemm-vote";
    case SdcCheck::kGemmSelf: return "gemm-self";
    case SdcCheck::kLink: return "link";
    case SdcCheck::kColl: return "coll";
  }
  return "?";
}

CycleVerdict judge(const std::vector<Recipe>& recipes, const std::vector<GpuInfo>& gpus,
                   const std::vector<Sample>& samples,
                   const std::vector<std::pair<std::string, std::string>>& not_admitted, const OutlierRule& rule) {
  CycleVerdict v;
  std::map<int, const GpuInfo*> gpu_of;
  for (const GpuInfo& g : gpus) gpu_of[g.global_rank] = &g;
  std::map<std::string, SampleList> by_recipe;
  for (const Sample& s : samples) by_recipe[s.recipe].push_back(&s);
  std::map<std::string, std::string> blocked(not_admitted.begin(), not_admitted.end());
  std::map<int, SlowGpu> normal;
  std::vector<const Recipe*> links;  // link timing is compared across the cycle's link recipes
  for (const Recipe& r : recipes) {
    RecipeOutcome ro{r.id, r.kind, Outcome::kPass, ""};
    if (blocked.count(r.id)) {
      ro.outcome = Outcome::kInconclusive;
      ro.reason = blocked[r.id];
      v.recipes.push_back(ro);
      continue;
    }
    const SampleList& ss = by_recipe[r.id];
    std::string skip, late;
    for (const Sample* s : ss) {
      if (s->status != SampleStatus::kOk && skip.empty()) skip = std::string(to_string(s->status)) + ": " + s->reason;
      if (s->status == SampleStatus::kTimeout && late.empty())
        late = "rank " + std::to_string(s->global_rank) + ": " + s->reason;
    }
    if (r.kind == RecipeKind::kGemm) {
      judge_gemm(r, ss, gpu_of, rule, &v, &ro, &normal);
      if (ro.outcome == Outcome::kPass && !skip.empty()) {
        ro.outcome = Outcome::kInconclusive;
        ro.reason = skip;
      }
    } else if (r.kind == RecipeKind::kLink) {
      links.push_back(&r);
      judge_link(r, ss, skip, &v, &ro);
    } else {
      judge_coll(r, ss, skip, &v, &ro);
    }
    if (!late.empty() && ro.outcome != Outcome::kFail) {
      ro.outcome = Outcome::kTimeout;
      ro.reason = late;
    }
    v.recipes.push_back(ro);
  }
  judge_link_times(links, by_recipe, rule, &v);
  judge_timeouts(recipes, by_recipe, &v);
  std::set<int> slow_ranks;
  for (const SlowGpu& s : v.slow_gpus) slow_ranks.insert(s.global_rank);
  for (const auto& [r, timing] : normal) {
    if (slow_ranks.count(r)) continue;
    v.gpu_normal.push_back(r);
    v.normal_gpus.push_back(timing);
  }
  bool any_fail = !v.sdc.empty() || !v.timeouts.empty(), any_undecided = false;
  for (const RecipeOutcome& ro : v.recipes) {
    any_undecided |= ro.outcome == Outcome::kInconclusive || ro.outcome == Outcome::kTimeout;
    any_fail |= ro.outcome == Outcome::kFail;  // e.g. every member of a collective got the same wrong result
  }
  v.outcome = any_fail                               ? Outcome::kFail
              : (any_undecided || v.recipes.empty()) ? Outcome::kInconclusive
                                                     : Outcome::kPass;
  return v;
}

nlohmann::json vote_json(const VoteResult<uint64_t>& v) {
  nlohmann::json j;
  j["outcome"] = to_string(v.verdict);
  j["majority"] = v.has_majority ? nlohmann::json(fp_hex(v.groups[0].value)) : nlohmann::json(nullptr);
  j["groups"] = nlohmann::json::array();
  for (const auto& g : v.groups) j["groups"].push_back({{"value", fp_hex(g.value)}, {"voters", g.voters}});
  return j;
}

nlohmann::json to_json(const CycleVerdict& v) {
  nlohmann::json j;
  j["outcome"] = to_string(v.outcome);
  j["recipes"] = nlohmann::json::array();
  for (const RecipeOutcome& r : v.recipes)
    j["recipes"].push_back(
        {{"recipe", r.recipe}, {"kind", to_string(r.kind)}, {"outcome", to_string(r.outcome)}, {"reason", r.reason}});
  j["sdc"] = nlohmann::json::array();
  for (const SdcVerdict& s : v.sdc) {
    nlohmann::json e = {{"global_rank", s.global_rank},
                        {"gpu", s.gpu},
                        {"check", to_string(s.check)},
                        {"recipe", s.recipe},
                        {"votes", s.votes}};
    e["peer"] = s.peer >= 0 ? nlohmann::json(s.peer) : nlohmann::json(nullptr);
    j["sdc"].push_back(e);
  }
  j["slow_gpus"] = nlohmann::json::array();
  for (const SlowGpu& s : v.slow_gpus)
    j["slow_gpus"].push_back({{"global_rank", s.global_rank},
                              {"gpu", s.gpu},
                              {"recipe", s.recipe},
                              {"median_ns", s.median_ns},
                              {"ns", s.ns}});
  j["slow_pairs"] = nlohmann::json::array();
  for (const SlowPair& p : v.slow_pairs)
    j["slow_pairs"].push_back(
        {{"ranks", {p.a, p.b}}, {"recipes", p.recipes}, {"ns", p.ns}, {"median_ns", p.median_ns}});
  j["gpu_normal"] = v.gpu_normal;
  j["timed_out"] = v.timed_out;
  j["timeouts"] = nlohmann::json::array();
  for (const TimeoutVerdict& t : v.timeouts)
    j["timeouts"].push_back({{"verdict", t.verdict}, {"ranks", t.ranks}, {"recipes", t.recipes}});
  j["normal_gpus"] = nlohmann::json::array();
  for (const SlowGpu& s : v.normal_gpus)
    j["normal_gpus"].push_back({{"global_rank", s.global_rank},
                                {"gpu", s.gpu},
                                {"recipe", s.recipe},
                                {"median_ns", s.median_ns},
                                {"ns", s.ns}});
  return j;
}

}  // namespace scout::replay
