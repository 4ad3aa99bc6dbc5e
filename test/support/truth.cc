#include "test/support/truth.h"

#include <fstream>

#include <nlohmann/json.hpp>

namespace scout::testing {

std::string show(const std::multiset<Named>& v) {
  std::string s;
  for (const Named& n : v) {
    s += " " + n.kind + "{";
    for (int r : n.ranks) s += std::to_string(r) + ",";
    s += "}";
  }
  return s.empty() ? " (none)" : s;
}

std::multiset<Named> named(const std::vector<obs::Finding>& findings) {
  std::multiset<Named> out;
  for (const auto& f : findings) {
    Named n{to_string(f.kind), {}};
    for (const auto& s : f.suspects) n.ranks.insert(s.global_rank);
    if (f.peer) n.ranks.insert(f.peer->global_rank);
    out.insert(n);
  }
  return out;
}

std::map<std::string, uint64_t> sim_ops_tp2_pp2(int steps, int bcast_every) {
  std::map<std::string, uint64_t> ops;
  for (int k = 0; k < 4; ++k) {
    ops["tp" + std::to_string(k)] = 4u * steps;
    ops["dp" + std::to_string(k)] = 4u * steps;
    ops["pp" + std::to_string(k)] = 2u * steps;
  }
  ops["world"] = bcast_every > 0 ? uint64_t((steps + bcast_every - 1) / bcast_every) : 0;
  return ops;
}

std::multiset<Named> read_truth(const std::string& path) {
  std::multiset<Named> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    Named n{j["kind"].get<std::string>(), {j["global_rank"].get<int>()}};
    if (j.contains("peer") && j["peer"].is_number_integer()) n.ranks.insert(j["peer"].get<int>());
    out.insert(n);
  }
  return out;
}

std::vector<nlohmann::json> truth_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace scout::testing
