#include "replay/server.h"

#include "common/clock.h"

#include <time.h>

#include <algorithm>
#include <map>

#include "common/hex.h"

namespace scout::replay {
namespace {

using shm::mono_ns;

std::string error_line(const std::string& what) { return nlohmann::json{{"op", "error"}, {"error", what}}.dump(); }

Sample skipped(const Recipe& r, const Participant& p, int round, const std::string& why) {
  return not_measured(sample_of(r, p, round), SampleStatus::kSkipped, why);
}

}  // namespace

nlohmann::json to_json(const Participant& p) {
  return {{"global_rank", p.global_rank}, {"gpu", p.gpu}, {"cuda_dev", p.cuda_dev}};
}

bool from_json(const nlohmann::json& j, Participant* out, std::string* error) {
  try {
    out->global_rank = j.at("global_rank").get<int>();
    out->gpu = j.at("gpu").get<std::string>();
    out->cuda_dev = j.at("cuda_dev").get<int>();
    return true;
  } catch (const std::exception& e) {
    *error = std::string("participant: ") + e.what();
    return false;
  }
}

std::vector<Sample> run_recipes(Backend& backend, const std::vector<Participant>& participants,
                                const std::vector<Recipe>& recipes, const std::vector<std::string>& admitted,
                                int64_t deadline_ns) {
  std::vector<Sample> out;
  std::map<int, const Participant*> by_rank;
  for (const Participant& p : participants) by_rank[p.global_rank] = &p;
  int max_rounds = 0;
  for (const Recipe& r : recipes) max_rounds = std::max(max_rounds, r.rounds);
  for (int round = 0; round < max_rounds; ++round) {
    for (const Recipe& r : recipes) {
      if (round >= r.rounds || std::find(admitted.begin(), admitted.end(), r.id) == admitted.end()) continue;
      const bool late = mono_ns() > deadline_ns;
      switch (r.kind) {
        case RecipeKind::kGemm:
          for (const Participant& p : participants)
            out.push_back(late ? skipped(r, p, round, "deadline") : backend.run_gemm(r, p, round));
          break;
        case RecipeKind::kLink: {
          auto s = by_rank.find(r.src), d = by_rank.find(r.dst);
          Participant dst = d != by_rank.end() ? *d->second : Participant{r.dst, "", -1};
          if (s == by_rank.end() || d == by_rank.end())
            out.push_back(skipped(r, dst, round, "not a participant"));
          else
            out.push_back(late ? skipped(r, dst, round, "deadline") : backend.run_link(r, *s->second, dst, round));
          break;
        }
        case RecipeKind::kColl: {
          std::vector<Participant> members;
          bool all = true;
          for (int g : r.coll.ranks) {
            auto it = by_rank.find(g);
            if (it == by_rank.end()) {
              all = false;
              members.push_back({g, "", -1});
            } else {
              members.push_back(*it->second);
            }
          }
          if (!all || late) {
            for (const Participant& p : members)
              out.push_back(skipped(r, p, round, late ? "deadline" : "not a participant"));
          } else {
            for (Sample& s : backend.run_coll(r, members, round)) out.push_back(std::move(s));
          }
          break;
        }
      }
    }
  }
  return out;
}

std::string ReplayServer::handle(const std::string& line, bool* quit) {
  nlohmann::json req = nlohmann::json::parse(line, nullptr, false);
  if (!req.is_object() || !req.contains("op") || !req["op"].is_string())
    return error_line("request is not a JSON object with \"op\"");
  const std::string op = req["op"].get<std::string>();
  std::string err;
  if (op == "quit") {
    *quit = true;
    return nlohmann::json{{"op", "bye"}}.dump();
  }
  if (op == "prepare") {
    Contract c;
    if (!req.contains("contract") || !from_json(req["contract"], &c, &err))
      return error_line(err.empty() ? "no contract" : err);
    std::vector<Participant> ps;
    std::vector<Recipe> rs;
    try {
      for (const auto& pj : req.at("participants")) {
        Participant p;
        if (!from_json(pj, &p, &err)) return error_line(err);
        ps.push_back(p);
      }
      for (const auto& rj : req.at("recipes")) {
        Recipe r;
        if (!from_json(rj, &r, &err)) return error_line(err);
        rs.push_back(r);
      }
    } catch (const std::exception& e) { return error_line(std::string("prepare: ") + e.what()); }
    contract_ = c;
    participants_ = ps;
    recipes_ = rs;
    prepared_ = true;
    const uint64_t digest = contract_digest(c);
    nlohmann::json answers = nlohmann::json::array();
    for (const Participant& p : ps)
      answers.push_back({{"gpu", to_json(backend_->describe(p))}, {"digest", shm::fp_hex(digest)}});
    return nlohmann::json{{"op", "ready"}, {"cycle", c.cycle}, {"backend", backend_->name()}, {"answers", answers}}
        .dump();
  }
  if (op == "run") {
    if (!prepared_) return error_line("run before prepare");
    uint64_t cycle = req.value("cycle", uint64_t(0));
    if (cycle != contract_.cycle)
      return error_line("run for cycle " + std::to_string(cycle) + " but cycle " + std::to_string(contract_.cycle) +
                        " is prepared");
    std::vector<std::string> admitted;
    int64_t deadline_ms = 0;
    try {
      admitted = req.at("admitted").get<std::vector<std::string>>();
      deadline_ms = req.at("deadline_ms").get<int64_t>();
    } catch (const std::exception& e) { return error_line(std::string("run: ") + e.what()); }
    std::vector<Sample> ss =
        run_recipes(*backend_, participants_, recipes_, admitted, mono_ns() + deadline_ms * 1'000'000);
    prepared_ = false;
    nlohmann::json samples = nlohmann::json::array();
    for (const Sample& s : ss) samples.push_back(to_json(s));
    return nlohmann::json{{"op", "result"}, {"cycle", cycle}, {"samples", samples}}.dump();
  }
  if (op == "link_id" || op == "link_end") return handle_link(req);
  return error_line("unknown op '" + op + "'");
}

std::string ReplayServer::handle_link(const nlohmann::json& req) {
  if (!prepared_) return error_line(req["op"].get<std::string>() + " before prepare");
  const uint64_t cycle = req.value("cycle", uint64_t(0));
  if (cycle != contract_.cycle)
    return error_line("link for cycle " + std::to_string(cycle) + " but cycle " + std::to_string(contract_.cycle) +
                      " is prepared");
  std::string id, err;
  try {
    id = req.at("recipe").get<std::string>();
  } catch (const std::exception& e) { return error_line(std::string("link: ") + e.what()); }
  auto r = std::find_if(recipes_.begin(), recipes_.end(), [&](const Recipe& x) { return x.id == id; });
  if (r == recipes_.end() || r->kind != RecipeKind::kLink) return error_line("no prepared link recipe '" + id + "'");
  const bool sender = req.value("role", "") == "send";
  const int self_rank = sender ? r->src : r->dst;
  auto self = std::find_if(participants_.begin(), participants_.end(),
                           [&](const Participant& p) { return p.global_rank == self_rank; });
  if (self == participants_.end()) return error_line("rank " + std::to_string(self_rank) + " is not a participant");
  if (req["op"] == "link_id") {
    std::string uid = backend_->link_unique_id(*self, &err);
    if (uid.empty()) return error_line("no bootstrap id: " + err);
    return nlohmann::json{{"op", "link_id"}, {"cycle", cycle}, {"recipe", id}, {"uid", uid}}.dump();
  }
  Participant peer;
  std::string uid;
  int64_t deadline_ms = 0;
  try {
    if (!from_json(req.at("peer"), &peer, &err)) return error_line(err);
    uid = req.at("uid").get<std::string>();
    deadline_ms = req.at("deadline_ms").get<int64_t>();
  } catch (const std::exception& e) { return error_line(std::string("link_end: ") + e.what()); }
  if (peer.global_rank != (sender ? r->dst : r->src))
    return error_line("peer " + std::to_string(peer.global_rank) + " is not the other end of " + id);
  nlohmann::json samples = nlohmann::json::array();
  for (const Sample& s : backend_->run_link_end(*r, *self, peer, sender, uid, mono_ns() + deadline_ms * 1'000'000))
    samples.push_back(to_json(s));
  return nlohmann::json{{"op", "result"}, {"cycle", cycle}, {"samples", samples}}.dump();
}

}  // namespace scout::replay
