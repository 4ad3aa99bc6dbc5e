// The readiness contract of a replay cycle (docs/replay.md, "Readiness contract"): before any
// replay collective or link runs, every participant answers for the cycle id, the recipe list
// and the membership (one digest over them), and gives its GPU model, SM count and library
// versions. A participant that is missing, not ready, or answered for another contract makes
// every coll/link recipe it is a member of inconclusive, and those recipes are not launched
// (the rule of the SCOUT reference's readiness handshake: no replay can wait for a peer that
// will never come). GEMM recipes run on the ready GPUs and vote inside each class of equal
// model, SM count and library versions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay/backend.h"
#include "replay/recipe.h"

namespace scout::replay {

struct Contract {
  uint64_t cycle = 0;
  std::vector<std::string> recipes;  // recipe ids, in run order
  std::vector<int> members;          // global ranks asked to take part, ascending
};
nlohmann::json to_json(const Contract& c);
// False with *error unless cycle is a non-negative integer, recipes a list of at most
// kMaxContractRecipes ids and members a list of at most kMaxContractMembers ranks 0..2^24.
constexpr size_t kMaxContractRecipes = 4096;
constexpr size_t kMaxContractMembers = 65536;
bool from_json(const nlohmann::json& j, Contract* out, std::string* error);

// XXH64 over the cycle, the recipe ids and the members (what every participant must agree on).
uint64_t contract_digest(const Contract& c);

// One participant's answer to the contract.
struct Readiness {
  GpuInfo gpu;
  uint64_t digest = 0;
};

struct ContractCheck {
  std::vector<int> missing;         // asked, no answer
  std::vector<int> not_ready;       // answered, cannot replay (GpuInfo::reason)
  std::vector<int> wrong_contract;  // answered for another digest
  std::vector<int> ready;           // the others
  // Vote classes of the ready GPUs: "model|sm_count|libs" -> global ranks.
  std::map<std::string, std::vector<int>> classes;
  bool all_ready() const { return missing.empty() && not_ready.empty() && wrong_contract.empty(); }
};

ContractCheck check_contract(const Contract& c, const std::vector<Readiness>& answers);

// The recipes that may launch, and the others with the reason they are inconclusive.
struct Admission {
  std::vector<std::string> run;
  std::vector<std::pair<std::string, std::string>> inconclusive;  // (recipe id, reason)
};
// GEMM recipes are admitted when at least one GPU is ready. A coll or link recipe is admitted
// only when all its members are ready, answered this contract, and share one library version.
Admission admit(const std::vector<Recipe>& recipes, const ContractCheck& check, const std::vector<Readiness>& answers);

// The vote class key of a GPU.
std::string vote_class(const GpuInfo& g);

}  // namespace scout::replay
