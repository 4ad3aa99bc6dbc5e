#include "observer/replay/cross_store.h"

#include "common/clock.h"
#include "common/hex.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <thread>

namespace scout::obs {
namespace {

using shm::mono_ns;

nlohmann::json member_json(const CrossMember& m) {
  return {{"global_rank", m.global_rank},
          {"gpu", m.gpu},
          {"cuda_dev", m.cuda_dev},
          {"host", m.host},
          {"pid", m.pid},
          {"node", m.node}};
}

CrossMember member_of(const nlohmann::json& j) {
  CrossMember m;
  m.global_rank = j.at("global_rank").get<int>();
  m.gpu = j.at("gpu").get<std::string>();
  m.cuda_dev = j.at("cuda_dev").get<int>();
  m.host = j.at("host").get<std::string>();
  m.pid = j.at("pid").get<int>();
  m.node = j.at("node").get<int>();
  return m;
}

}  // namespace

bool NodeMembers::operator==(const NodeMembers& o) const { return to_json(*this) == to_json(o); }

std::vector<int> CrossPlan::nodes() const {
  std::set<int> n;
  for (const CrossMember& m : members) n.insert(m.node);
  return {n.begin(), n.end()};
}

const CrossMember* CrossPlan::member(int global_rank) const {
  for (const CrossMember& m : members)
    if (m.global_rank == global_rank) return &m;
  return nullptr;
}

nlohmann::json to_json(const NodeMembers& n) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const CrossMember& m : n.ranks) ranks.push_back(member_json(m));
  nlohmann::json cr = nlohmann::json::object();
  for (const auto& [key, m] : n.comm_ranks) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& [c, g] : m) pairs.push_back({c, g});
    cr[key] = pairs;
  }
  nlohmann::json colls = nlohmann::json::object();
  for (const auto& [key, cs] : n.colls) {
    nlohmann::json a = nlohmann::json::array();
    for (const replay::CollClass& c : cs) a.push_back(replay::to_json(c));
    colls[key] = a;
  }
  return {{"node", n.node}, {"ranks", ranks}, {"comms", n.comms}, {"comm_ranks", cr}, {"colls", colls}};
}

bool from_json(const nlohmann::json& j, NodeMembers* out, std::string* error) {
  try {
    NodeMembers n;
    n.node = j.at("node").get<int>();
    for (const auto& m : j.at("ranks")) n.ranks.push_back(member_of(m));
    n.comms = j.at("comms").get<std::map<std::string, std::vector<int>>>();
    const nlohmann::json cr = j.value("comm_ranks", nlohmann::json::object());  // absent before it existed
    for (const auto& [key, pairs] : cr.items())
      for (const auto& p : pairs) n.comm_ranks[key][p.at(0).get<int>()] = p.at(1).get<int>();
    const nlohmann::json colls = j.value("colls", nlohmann::json::object());  // absent before it existed
    for (const auto& [key, a] : colls.items())
      for (const auto& c : a) n.colls[key].push_back(replay::coll_class_of(c));
    *out = std::move(n);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("replay members: ") + e.what();
    return false;
  }
}

nlohmann::json to_json(const CrossPlan& p) {
  nlohmann::json members = nlohmann::json::array();
  for (const CrossMember& m : p.members) members.push_back(member_json(m));
  nlohmann::json colls = nlohmann::json::array();
  for (const replay::CollClass& c : p.colls) colls.push_back(replay::to_json(c));
  nlohmann::json j = {{"id", p.id}, {"seed", p.seed}, {"pairs", p.pairs}, {"colls", colls}, {"members", members}};
  if (!p.gemms.empty()) {
    j["gemms"] = nlohmann::json::array();
    for (const replay::GemmShape& g : p.gemms)
      j["gemms"].push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", g.dtype}});
  }
  return j;
}

bool from_json(const nlohmann::json& j, CrossPlan* out, std::string* error) {
  try {
    CrossPlan p;
    p.id = j.at("id").get<uint64_t>();
    p.seed = j.at("seed").get<uint64_t>();
    p.pairs = j.at("pairs").get<std::vector<std::pair<int, int>>>();
    for (const auto& c : j.value("colls", nlohmann::json::array())) p.colls.push_back(replay::coll_class_of(c));
    for (const auto& m : j.at("members")) p.members.push_back(member_of(m));
    for (const auto& g : j.value("gemms", nlohmann::json::array())) {  // absent before GEMM votes across nodes
      replay::GemmShape s{g.at("m").get<int64_t>(), g.at("n").get<int64_t>(), g.at("k").get<int64_t>(),
                          g.at("dtype").get<std::string>()};
      p.gemms.push_back(s);
    }
    *out = std::move(p);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("replay plan: ") + e.what();
    return false;
  }
}

std::string cross_comm_key(uint64_t comm_hash, int nranks) {
  return shm::hex64(comm_hash) + ":" + std::to_string(nranks);
}

std::map<std::string, std::map<int, int>> merged_comm_ranks(const std::vector<NodeMembers>& nodes) {
  std::map<std::string, std::map<int, int>> out;
  for (const NodeMembers& n : nodes)
    for (const auto& [key, m] : n.comm_ranks) out[key].insert(m.begin(), m.end());
  return out;
}

std::vector<std::pair<int, int>> cross_pairs(const std::vector<NodeMembers>& nodes) {
  std::map<int, int> node_of;
  std::map<std::string, std::set<int>> comms;
  for (const NodeMembers& n : nodes) {
    for (const CrossMember& m : n.ranks) node_of[m.global_rank] = n.node;
    for (const auto& [key, ranks] : n.comms) comms[key].insert(ranks.begin(), ranks.end());
  }
  std::set<std::pair<int, int>> pairs;
  for (const auto& [key, ranks] : comms)
    for (int a : ranks)
      for (int b : ranks) {
        auto na = node_of.find(a), nb = node_of.find(b);
        if (na != node_of.end() && nb != node_of.end() && na->second != nb->second) pairs.insert({a, b});
      }
  return {pairs.begin(), pairs.end()};
}

bool observers_met(const std::vector<NodeMembers>& all, int nodes) {
  std::set<int> seen;
  for (const NodeMembers& n : all)
    if (!n.ranks.empty() && n.node >= 0 && n.node < nodes) seen.insert(n.node);
  return int(seen.size()) == nodes;
}

std::vector<replay::CollClass> cross_colls(const std::vector<NodeMembers>& nodes) {
  const std::map<std::string, std::map<int, int>> ranks = merged_comm_ranks(nodes);
  std::map<int, int> node_of;
  for (const NodeMembers& n : nodes)
    for (const CrossMember& m : n.ranks) node_of[m.global_rank] = n.node;
  std::map<std::string, std::vector<replay::CollClass>> classes;  // by communicator key, first seen first
  for (const NodeMembers& n : nodes)
    for (const auto& [key, cs] : n.colls)
      for (const replay::CollClass& c : cs)
        if (std::find(classes[key].begin(), classes[key].end(), c) == classes[key].end()) classes[key].push_back(c);
  std::vector<replay::CollClass> out;
  for (auto& [key, cs] : classes) {
    auto r = ranks.find(key);
    const size_t colon = key.rfind(':');
    const long nranks = colon == std::string::npos ? -1 : std::strtol(key.c_str() + colon + 1, nullptr, 10);
    if (r == ranks.end() || nranks < 2 || nranks > kMaxCrossCollMembers || long(r->second.size()) != nranks) continue;
    std::vector<int> members;
    std::set<int> on;
    for (const auto& [cr, g] : r->second) {
      auto nd = node_of.find(g);
      if (nd == node_of.end()) break;
      members.push_back(g);
      on.insert(nd->second);
    }
    if (long(members.size()) != nranks || on.size() < 2) continue;
    std::sort(members.begin(), members.end());
    for (replay::CollClass c : cs) {
      c.ranks = members;
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<replay::CollClass> next_cross_colls(const std::vector<NodeMembers>& nodes, int max, size_t* cursor) {
  const std::vector<replay::CollClass> all = cross_colls(nodes);
  std::vector<replay::CollClass> out;
  if (all.empty()) return out;
  for (size_t i = 0; i < all.size() && int(out.size()) < max; ++i) out.push_back(all[(*cursor + i) % all.size()]);
  *cursor = (*cursor + out.size()) % all.size();
  return out;
}

CrossStore::CrossStore(std::unique_ptr<net::KeyStore> keys, const std::string& job)
    : keys_(std::move(keys)), base_("scout/" + job + "/replay/") {}

void CrossStore::reconnect(const std::string& spec) { keys_ = net::open_key_store(spec); }

std::string CrossStore::key(uint64_t plan, const std::string& name) const {
  return base_ + "x/" + std::to_string(plan) + "/" + name;
}

void CrossStore::put_members(const NodeMembers& mine) {
  keys_->put(base_ + "members/" + std::to_string(mine.node), to_json(mine).dump());
}

std::vector<NodeMembers> CrossStore::members(int nodes) {
  std::vector<NodeMembers> out;
  for (int n = 0; n < nodes; ++n) {
    std::optional<std::string> v = keys_->get_if(base_ + "members/" + std::to_string(n));
    NodeMembers m;
    std::string err;
    if (v && from_json(nlohmann::json::parse(*v, nullptr, false), &m, &err)) out.push_back(std::move(m));
  }
  return out;
}

void CrossStore::put_plan(const CrossPlan& plan, int nodes) {
  keys_->put(base_ + "plan/" + std::to_string(plan.id), to_json(plan).dump());
  keys_->put(base_ + "plan/latest", std::to_string(plan.id));
  if (plan.id < 3) return;
  const uint64_t old = plan.id - 2;
  std::optional<std::string> v = keys_->get_if(base_ + "plan/" + std::to_string(old));
  CrossPlan p;
  std::string err;
  if (v && from_json(nlohmann::json::parse(*v, nullptr, false), &p, &err)) {
    for (const auto& [a, b] : p.pairs) keys_->erase(key(old, "uid/" + std::to_string(a) + "-" + std::to_string(b)));
    for (size_t i = 0; i < p.colls.size(); ++i) keys_->erase(key(old, "uid/coll-" + std::to_string(i)));
  }
  for (int n = 0; n < nodes; ++n) {
    keys_->erase(key(old, "ready/" + std::to_string(n)));
    keys_->erase(key(old, "samples/" + std::to_string(n)));
  }
  keys_->erase(base_ + "plan/" + std::to_string(old));
}

std::optional<CrossPlan> CrossStore::newer_plan(uint64_t after) {
  std::optional<std::string> latest = keys_->get_if(base_ + "plan/latest");
  if (!latest) return std::nullopt;
  const uint64_t id = std::strtoull(latest->c_str(), nullptr, 10);
  if (id <= after) return std::nullopt;
  std::optional<std::string> v = keys_->get_if(base_ + "plan/" + std::to_string(id));
  CrossPlan p;
  std::string err;
  if (!v || !from_json(nlohmann::json::parse(*v, nullptr, false), &p, &err)) return std::nullopt;
  return p;
}

void CrossStore::put(uint64_t plan, const std::string& name, const std::string& value) {
  keys_->put(key(plan, name), value);
}

std::optional<std::string> CrossStore::wait(uint64_t plan, const std::string& name, int64_t deadline_ns) {
  const std::string k = key(plan, name);
  for (;;) {
    if (std::optional<std::string> v = keys_->get_if(k)) return v;
    if (mono_ns() >= deadline_ns) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace scout::obs
