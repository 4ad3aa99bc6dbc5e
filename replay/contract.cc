#include "replay/contract.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scout::replay {

nlohmann::json to_json(const Contract& c) {
  return {{"cycle", c.cycle}, {"recipes", c.recipes}, {"members", c.members}};
}

bool from_json(const nlohmann::json& j, Contract* out, std::string* error) {
  try {
    Contract c;
    const auto& cycle = j.at("cycle");
    if (!cycle.is_number_unsigned()) throw std::invalid_argument("cycle is not a non-negative integer");
    c.cycle = cycle.get<uint64_t>();
    const auto& recipes = j.at("recipes");
    const auto& members = j.at("members");
    if (!recipes.is_array() || recipes.size() > kMaxContractRecipes || !members.is_array() ||
        members.size() > kMaxContractMembers)
      throw std::invalid_argument("recipes and members must be lists of at most " + std::to_string(kMaxContractRecipes) +
                                  " and " + std::to_string(kMaxContractMembers));
    for (const auto& r : recipes) {
      if (!r.is_string() || r.get_ref<const std::string&>().size() > kMaxRecipeIdBytes)
        throw std::invalid_argument("a recipe id is not a string of at most 65536 bytes");
      c.recipes.push_back(r.get<std::string>());
    }
    for (const auto& m : members) {
      if (!m.is_number_integer() || m.get<int64_t>() < 0 || m.get<int64_t>() > kMaxGlobalRank)
        throw std::invalid_argument("a member is not a rank 0..2^24");
      c.members.push_back(int(m.get<int64_t>()));
    }
    *out = std::move(c);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("contract: ") + e.what();
    return false;
  }
}

uint64_t contract_digest(const Contract& c) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0xC0117AC7ull);
  XXH64_update(st, &c.cycle, sizeof(c.cycle));
  for (const std::string& r : c.recipes) {
    uint64_t n = r.size();
    XXH64_update(st, &n, sizeof(n));
    XXH64_update(st, r.data(), r.size());
  }
  for (int m : c.members) {
    int64_t v = m;
    XXH64_update(st, &v, sizeof(v));
  }
  uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

std::string vote_class(const GpuInfo& g) { return g.model + "|" + std::to_string(g.sm_count) + "|" + g.libs; }

ContractCheck check_contract(const Contract& c, const std::vector<Readiness>& answers) {
  ContractCheck r;
  const uint64_t want = contract_digest(c);
  std::map<int, const Readiness*> by_rank;
  for (const Readiness& a : answers) by_rank[a.gpu.global_rank] = &a;
  for (int m : c.members) {
    auto it = by_rank.find(m);
    if (it == by_rank.end())
      r.missing.push_back(m);
    else if (it->second->digest != want)
      r.wrong_contract.push_back(m);
    else if (!it->second->gpu.ready)
      r.not_ready.push_back(m);
    else {
      r.ready.push_back(m);
      r.classes[vote_class(it->second->gpu)].push_back(m);
    }
  }
  return r;
}

Admission admit(const std::vector<Recipe>& recipes, const ContractCheck& check, const std::vector<Readiness>& answers) {
  Admission a;
  std::set<int> ready(check.ready.begin(), check.ready.end());
  std::map<int, std::string> libs;
  for (const Readiness& r : answers) libs[r.gpu.global_rank] = r.gpu.libs;
  auto why_not = [&](const std::vector<int>& members) -> std::string {
    for (int m : members) {
      if (std::find(check.missing.begin(), check.missing.end(), m) != check.missing.end())
        return "rank " + std::to_string(m) + " did not answer the readiness contract";
      if (std::find(check.wrong_contract.begin(), check.wrong_contract.end(), m) != check.wrong_contract.end())
        return "rank " + std::to_string(m) + " answered another contract";
      if (!ready.count(m)) return "rank " + std::to_string(m) + " is not ready";
    }
    std::set<std::string> versions;
    for (int m : members) versions.insert(libs[m]);
    if (versions.size() > 1) return "members run different library versions";
    return "";
  };
  for (const Recipe& r : recipes) {
    std::string why;
    if (r.kind == RecipeKind::kGemm) {
      if (check.ready.empty()) why = "no GPU is ready";
    } else if (r.kind == RecipeKind::kLink) {
      why = why_not({r.src, r.dst});
    } else {
      why = why_not(r.coll.ranks);
    }
    if (why.empty())
      a.run.push_back(r.id);
    else
      a.inconclusive.push_back({r.id, why});
  }
  return a;
}

}  // namespace scout::replay
