#include "replay/server.h"

#include "common/clock.h"

#include <time.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "common/hex.h"

namespace scout::replay {
namespace {

using shm::mono_ns;

// Every answer is encoded with bytes that are not UTF-8 replaced (a request's strings echo in
// errors): encoding never throws.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string error_line(const std::string& what) { return dump(nlohmann::json{{"op", "error"}, {"error", what}}); }

// A JSON value as a quoted string for an error message.
std::string json_quoted(const nlohmann::json& v) { return dump(v).substr(0, 200); }

// `req[key]` as a non-negative integer; nullopt when it is missing or of another type.
std::optional<uint64_t> cycle_of(const nlohmann::json& req) {
  auto it = req.find("cycle");
  if (it == req.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

// `req[key]` as milliseconds clamped to 0..kMaxDeadlineMs; nullopt when it is not an integer.
std::optional<int64_t> deadline_of(const nlohmann::json& req) {
  auto it = req.find("deadline_ms");
  if (it == req.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned()) return std::min<uint64_t>(it->get<uint64_t>(), uint64_t(kMaxDeadlineMs));
  return std::clamp<int64_t>(it->get<int64_t>(), 0, kMaxDeadlineMs);
}

Sample skipped(const Recipe& r, const Participant& p, int round, const std::string& why) {
  return not_measured(sample_of(r, p, round), SampleStatus::kSkipped, why);
}

}  // namespace

nlohmann::json to_json(const Participant& p) {
  return {{"global_rank", p.global_rank}, {"gpu", p.gpu}, {"cuda_dev", p.cuda_dev}};
}

bool from_json(const nlohmann::json& j, Participant* out, std::string* error) {
  if (!j.is_object() || !j.contains("global_rank") || !j["global_rank"].is_number_integer() ||
      j["global_rank"].get<int64_t>() < 0 || j["global_rank"].get<int64_t>() > kMaxGlobalRank || !j.contains("gpu") ||
      !j["gpu"].is_string() || j["gpu"].get_ref<const std::string&>().size() > 256 || !j.contains("cuda_dev") ||
      !j["cuda_dev"].is_number_integer() || j["cuda_dev"].get<int64_t>() < -1 || j["cuda_dev"].get<int64_t>() > 1023) {
    *error = "participant: expected {global_rank: 0..2^24, gpu: string of at most 256 bytes, cuda_dev: -1..1023}";
    return false;
  }
  out->global_rank = int(j["global_rank"].get<int64_t>());
  out->gpu = j["gpu"].get<std::string>();
  out->cuda_dev = int(j["cuda_dev"].get<int64_t>());
  return true;
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
  try {
    return handle_request(line, quit);
  } catch (const std::exception& e) {  // bad_alloc included: one error line, never an abort
    return error_line(std::string("request refused: ") + e.what());
  }
}

std::string ReplayServer::handle_request(const std::string& line, bool* quit) {
  if (line.size() > kMaxLineBytes) return error_line("request longer than " + std::to_string(kMaxLineBytes) + " bytes");
  nlohmann::json req = nlohmann::json::parse(line, nullptr, false);
  if (!req.is_object() || !req.contains("op") || !req["op"].is_string())
    return error_line("request is not a JSON object with \"op\"");
  const std::string op = req["op"].get<std::string>();
  if (op == "quit") {
    *quit = true;
    return dump(nlohmann::json{{"op", "bye"}});
  }
  if (op == "prepare") return handle_prepare(req);
  if (op == "run") return handle_run(req);
  if (op == "link_id" || op == "link_end") return handle_link(req);
  if (op == "coll_id" || op == "coll_end") return handle_coll(req);
  return error_line("unknown op '" + op.substr(0, 200) + "'");
}

std::string ReplayServer::handle_prepare(const nlohmann::json& req) {
  std::string err;
  Contract c;
  if (!req.contains("contract") || !from_json(req["contract"], &c, &err))
    return error_line(err.empty() ? "no contract" : err);
  if (!req.contains("participants") || !req["participants"].is_array() || !req.contains("recipes") ||
      !req["recipes"].is_array())
    return error_line("prepare: participants and recipes must be lists");
  const auto& pj = req["participants"];
  const auto& rj = req["recipes"];
  if (pj.size() > kMaxParticipants || rj.size() > kMaxRecipes)
    return error_line("prepare: at most " + std::to_string(kMaxParticipants) + " participants and " +
                      std::to_string(kMaxRecipes) + " recipes");
  std::vector<Participant> ps;
  std::set<int> ranks;
  for (const auto& x : pj) {
    Participant p;
    if (!from_json(x, &p, &err)) return error_line(err);
    if (!ranks.insert(p.global_rank).second)
      return error_line("prepare: rank " + std::to_string(p.global_rank) + " is a participant twice");
    ps.push_back(p);
  }
  std::vector<Recipe> rs;
  std::set<std::string> ids;
  uint64_t samples = 0;  // what the run's answer would hold at most
  for (const auto& x : rj) {
    Recipe r;
    if (!from_json(x, &r, &err, max_bytes_)) return error_line(err);
    if (!ids.insert(r.id).second)
      return error_line("prepare: recipe id " + json_quoted(nlohmann::json(r.id)) + " twice");
    const uint64_t per_round = r.kind == RecipeKind::kGemm   ? ps.size()
                               : r.kind == RecipeKind::kLink ? 1
                                                             : r.coll.ranks.size();
    samples += per_round * uint64_t(r.rounds);
    if (samples > kMaxSamples)
      return error_line("prepare: the recipes would give more than " + std::to_string(kMaxSamples) +
                        " samples (rounds x GPUs, summed)");
    rs.push_back(std::move(r));
  }
  contract_ = c;
  participants_ = ps;
  recipes_ = rs;
  prepared_ = true;
  const uint64_t digest = contract_digest(c);
  nlohmann::json answers = nlohmann::json::array();
  for (const Participant& p : ps)
    answers.push_back({{"gpu", to_json(backend_->describe(p))}, {"digest", shm::fp_hex(digest)}});
  return dump(nlohmann::json{{"op", "ready"}, {"cycle", c.cycle}, {"backend", backend_->name()}, {"answers", answers}});
}

std::string ReplayServer::handle_run(const nlohmann::json& req) {
  if (!prepared_) return error_line("run before prepare");
  const std::optional<uint64_t> cycle = cycle_of(req);
  if (!cycle) return error_line("run: cycle must be a non-negative integer");
  if (*cycle != contract_.cycle)
    return error_line("run for cycle " + std::to_string(*cycle) + " but cycle " + std::to_string(contract_.cycle) +
                      " is prepared");
  const std::optional<int64_t> deadline_ms = deadline_of(req);
  if (!deadline_ms) return error_line("run: deadline_ms must be an integer");
  if (!req.contains("admitted") || !req["admitted"].is_array() || req["admitted"].size() > recipes_.size())
    return error_line("run: admitted must be a list of at most the prepared recipes");
  std::vector<std::string> admitted;
  for (const auto& a : req["admitted"]) {
    if (!a.is_string()) return error_line("run: admitted holds something other than a recipe id");
    admitted.push_back(a.get<std::string>());
  }
  std::vector<Sample> ss =
      run_recipes(*backend_, participants_, recipes_, admitted, mono_ns() + *deadline_ms * 1'000'000);
  prepared_ = false;
  nlohmann::json samples = nlohmann::json::array();
  for (const Sample& s : ss) samples.push_back(to_json(s));
  return dump(nlohmann::json{{"op", "result"}, {"cycle", *cycle}, {"samples", samples}});
}

std::string ReplayServer::handle_link(const nlohmann::json& req) {
  const std::string op = req["op"].get<std::string>();
  if (!prepared_) return error_line(op + " before prepare");
  const std::optional<uint64_t> cycle = cycle_of(req);
  if (!cycle) return error_line(op + ": cycle must be a non-negative integer");
  if (*cycle != contract_.cycle)
    return error_line("link for cycle " + std::to_string(*cycle) + " but cycle " + std::to_string(contract_.cycle) +
                      " is prepared");
  if (!req.contains("recipe") || !req["recipe"].is_string()) return error_line(op + ": recipe must be a string");
  const std::string id = req["recipe"].get<std::string>();
  if (!req.contains("role") || !req["role"].is_string() || (req["role"] != "send" && req["role"] != "recv"))
    return error_line(op + ": role must be \"send\" or \"recv\"");
  auto r = std::find_if(recipes_.begin(), recipes_.end(), [&](const Recipe& x) { return x.id == id; });
  if (r == recipes_.end() || r->kind != RecipeKind::kLink)
    return error_line("no prepared link recipe '" + id.substr(0, 300) + "'");
  const bool sender = req["role"] == "send";
  const int self_rank = sender ? r->src : r->dst;
  auto self = std::find_if(participants_.begin(), participants_.end(),
                           [&](const Participant& p) { return p.global_rank == self_rank; });
  if (self == participants_.end()) return error_line("rank " + std::to_string(self_rank) + " is not a participant");
  std::string err;
  if (op == "link_id") {
    std::string uid = backend_->link_unique_id(*self, &err);
    if (uid.empty()) return error_line("no bootstrap id: " + err);
    return dump(nlohmann::json{{"op", "link_id"}, {"cycle", *cycle}, {"recipe", id}, {"uid", uid}});
  }
  Participant peer;
  if (!req.contains("peer") || !from_json(req["peer"], &peer, &err)) return error_line("link_end: " + err);
  if (!req.contains("uid") || !req["uid"].is_string() || req["uid"].get_ref<const std::string&>().size() > 512)
    return error_line("link_end: uid must be a string of at most 512 hex digits");
  const std::string uid = req["uid"].get<std::string>();
  const std::optional<int64_t> deadline_ms = deadline_of(req);
  if (!deadline_ms) return error_line("link_end: deadline_ms must be an integer");
  if (peer.global_rank != (sender ? r->dst : r->src))
    return error_line("peer " + std::to_string(peer.global_rank) + " is not the other end of " + id);
  nlohmann::json samples = nlohmann::json::array();
  for (const Sample& s : backend_->run_link_end(*r, *self, peer, sender, uid, mono_ns() + *deadline_ms * 1'000'000))
    samples.push_back(to_json(s));
  return dump(nlohmann::json{{"op", "result"}, {"cycle", *cycle}, {"samples", samples}});
}

std::string ReplayServer::handle_coll(const nlohmann::json& req) {
  const std::string op = req["op"].get<std::string>();
  if (!prepared_) return error_line(op + " before prepare");
  const std::optional<uint64_t> cycle = cycle_of(req);
  if (!cycle) return error_line(op + ": cycle must be a non-negative integer");
  if (*cycle != contract_.cycle)
    return error_line(op + " for cycle " + std::to_string(*cycle) + " but cycle " + std::to_string(contract_.cycle) +
                      " is prepared");
  if (!req.contains("recipe") || !req["recipe"].is_string()) return error_line(op + ": recipe must be a string");
  const std::string id = req["recipe"].get<std::string>();
  auto r = std::find_if(recipes_.begin(), recipes_.end(), [&](const Recipe& x) { return x.id == id; });
  if (r == recipes_.end() || r->kind != RecipeKind::kColl)
    return error_line("no prepared collective recipe '" + id.substr(0, 300) + "'");
  auto participant = [&](int g) {
    return std::find_if(participants_.begin(), participants_.end(),
                        [&](const Participant& p) { return p.global_rank == g; });
  };
  std::string err;
  if (op == "coll_id") {
    auto self = participant(r->coll.ranks.front());
    if (self == participants_.end())
      return error_line("coll_id: the lowest member, rank " + std::to_string(r->coll.ranks.front()) +
                        ", is not a participant");
    std::string uid = backend_->link_unique_id(*self, &err);
    if (uid.empty()) return error_line("no bootstrap id: " + err);
    return dump(nlohmann::json{{"op", "coll_id"}, {"cycle", *cycle}, {"recipe", id}, {"uid", uid}});
  }
  if (!req.contains("members") || !req["members"].is_array() || req["members"].size() != r->coll.ranks.size())
    return error_line("coll_end: members must list the recipe's " + std::to_string(r->coll.ranks.size()) + " members");
  std::vector<Participant> members;
  std::vector<int> local;
  for (size_t i = 0; i < r->coll.ranks.size(); ++i) {
    Participant p;
    if (!from_json(req["members"][i], &p, &err)) return error_line("coll_end: " + err);
    if (p.global_rank != r->coll.ranks[i])
      return error_line("coll_end: member " + std::to_string(i) + " is rank " + std::to_string(p.global_rank) +
                        ", not " + std::to_string(r->coll.ranks[i]) + " of " + id.substr(0, 300));
    if (auto self = participant(p.global_rank); self != participants_.end()) {
      p = *self;  // this node's members as prepared
      local.push_back(p.global_rank);
    }
    members.push_back(p);
  }
  if (local.empty()) return error_line("coll_end: no member of " + id.substr(0, 300) + " is a participant");
  if (!req.contains("uid") || !req["uid"].is_string() || req["uid"].get_ref<const std::string&>().size() > 512)
    return error_line("coll_end: uid must be a string of at most 512 hex digits");
  const std::optional<int64_t> deadline_ms = deadline_of(req);
  if (!deadline_ms) return error_line("coll_end: deadline_ms must be an integer");
  nlohmann::json samples = nlohmann::json::array();
  for (const Sample& s :
       backend_->run_coll_end(*r, members, local, req["uid"].get<std::string>(), mono_ns() + *deadline_ms * 1'000'000))
    samples.push_back(to_json(s));
  return dump(nlohmann::json{{"op", "result"}, {"cycle", *cycle}, {"samples", samples}});
}

}  // namespace scout::replay
