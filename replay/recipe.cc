#include "replay/recipe.h"

#include <algorithm>
#include <set>

namespace scout::replay {

const char* to_string(RecipeKind k) {
  switch (k) {
    case RecipeKind::kGemm: return "gemm";
    case RecipeKind::kColl: return "coll";
    case RecipeKind::kLink: return "link";
  }
  return "?";
}

int gemm_dtype_bytes(const std::string& d) {
  if (d == "bf16" || d == "fp16") return 2;
  if (d == "fp32") return 4;
  return 0;
}

nlohmann::json to_json(const Recipe& r) {
  nlohmann::json j = {
      {"id", r.id}, {"kind", to_string(r.kind)}, {"seed", r.seed}, {"rounds", r.rounds}, {"iters", r.iters}};
  switch (r.kind) {
    case RecipeKind::kGemm:
      j["gemm"] = {{"m", r.gemm.m}, {"n", r.gemm.n}, {"k", r.gemm.k}, {"dtype", r.gemm.dtype}};
      break;
    case RecipeKind::kColl:
      j["coll"] = {{"func", r.coll.func},   {"datatype", r.coll.datatype}, {"elem_bytes", r.coll.elem_bytes},
                   {"count", r.coll.count}, {"algo", r.coll.algo},         {"proto", r.coll.proto},
                   {"ranks", r.coll.ranks}};
      break;
    case RecipeKind::kLink: j["link"] = {{"src", r.src}, {"dst", r.dst}, {"bytes", r.bytes}}; break;
  }
  return j;
}

bool from_json(const nlohmann::json& j, Recipe* out, std::string* error) {
  try {
    Recipe r;
    r.id = j.at("id").get<std::string>();
    const std::string kind = j.at("kind").get<std::string>();
    r.seed = j.at("seed").get<uint64_t>();
    r.rounds = j.at("rounds").get<int>();
    r.iters = j.value("iters", 1);
    if (kind == "gemm") {
      r.kind = RecipeKind::kGemm;
      const auto& g = j.at("gemm");
      r.gemm = {g.at("m").get<int64_t>(), g.at("n").get<int64_t>(), g.at("k").get<int64_t>(),
                g.at("dtype").get<std::string>()};
    } else if (kind == "coll") {
      r.kind = RecipeKind::kColl;
      const auto& c = j.at("coll");
      r.coll.func = c.at("func").get<std::string>();
      r.coll.datatype = c.at("datatype").get<std::string>();
      r.coll.elem_bytes = c.at("elem_bytes").get<int>();
      r.coll.count = c.at("count").get<uint64_t>();
      r.coll.algo = c.at("algo").get<std::string>();
      r.coll.proto = c.at("proto").get<std::string>();
      r.coll.ranks = c.at("ranks").get<std::vector<int>>();
    } else if (kind == "link") {
      r.kind = RecipeKind::kLink;
      const auto& l = j.at("link");
      r.src = l.at("src").get<int>();
      r.dst = l.at("dst").get<int>();
      r.bytes = l.at("bytes").get<uint64_t>();
    } else {
      *error = "unknown recipe kind '" + kind + "'";
      return false;
    }
    if (r.rounds < 1 || r.rounds > 16 || r.iters < 1 || r.iters > 1000) {
      *error = "recipe " + r.id + ": rounds must be 1..16 and iters 1..1000";
      return false;
    }
    *out = std::move(r);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("recipe: ") + e.what();
    return false;
  }
}

bool parse_gemms(const std::string& spec, std::vector<GemmShape>* out, std::string* error) {
  std::vector<GemmShape> shapes;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty()) continue;
    GemmShape g;
    std::string dims = item;
    size_t colon = item.find(':');
    if (colon != std::string::npos) {
      dims = item.substr(0, colon);
      g.dtype = item.substr(colon + 1);
      if (gemm_dtype_bytes(g.dtype) == 0) {
        *error = "SCOUT_REPLAY_GEMMS item '" + item + "': datatype must be bf16, fp16 or fp32";
        return false;
      }
    }
    int64_t v[3] = {0, 0, 0};
    int nv = 0;
    size_t p = 0;
    bool ok = true;
    while (ok && nv < 3) {
      size_t x = dims.find('x', p);
      std::string num = dims.substr(p, x == std::string::npos ? std::string::npos : x - p);
      if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos || num.size() > 6)
        ok = false;
      else
        v[nv++] = std::stoll(num);
      if (x == std::string::npos) break;
      p = x + 1;
    }
    if (!ok || nv != 3 || dims.find('x', p) != std::string::npos) {
      *error = "SCOUT_REPLAY_GEMMS item '" + item + "': expected MxNxK[:dtype]";
      return false;
    }
    for (int64_t d : v)
      if (d < 1 || d > 65536) {
        *error = "SCOUT_REPLAY_GEMMS item '" + item + "': dimensions must be 1..65536";
        return false;
      }
    g.m = v[0];
    g.n = v[1];
    g.k = v[2];
    shapes.push_back(g);
  }
  *out = std::move(shapes);
  return true;
}

std::vector<GemmShape> default_gemms() { return {{4096, 4096, 4096, "bf16"}, {4096, 4096, 4096, "fp32"}}; }

void CollClassSet::add(const CollClass& c) {
  if (std::find(classes_.begin(), classes_.end(), c) != classes_.end()) return;
  if (classes_.size() >= max_) {
    dropped_++;
    return;
  }
  classes_.push_back(c);
}

std::vector<Recipe> build_recipes(const RecipePlan& plan) {
  std::vector<Recipe> out;
  std::set<std::string> ids;
  auto push = [&](Recipe r) {
    std::string base = r.id;
    for (int i = 2; ids.count(r.id); ++i) r.id = base + "#" + std::to_string(i);
    ids.insert(r.id);
    r.seed = plan.seed;
    r.rounds = plan.rounds;
    if (r.kind == RecipeKind::kGemm) r.iters = plan.gemm_iters;
    out.push_back(std::move(r));
  };
  for (const GemmShape& g : plan.gemms) {
    Recipe r;
    r.kind = RecipeKind::kGemm;
    r.gemm = g;
    r.id = "gemm:" + g.dtype + ":" + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k);
    push(r);
  }
  for (const CollClass& c : plan.colls) {
    Recipe r;
    r.kind = RecipeKind::kColl;
    r.coll = c;
    const uint64_t eb = c.elem_bytes > 0 ? uint64_t(c.elem_bytes) : 1;
    if (r.coll.count * eb > plan.max_coll_bytes) r.coll.count = plan.max_coll_bytes / eb;
    std::string members;
    for (int g : c.ranks) members += (members.empty() ? "" : ",") + std::to_string(g);
    // algorithm/protocol as recorded; a part NCCL did not report is left out, never an empty field
    // (docs/replay.md, "Recipes").
    std::string how = c.algo.empty() ? c.proto : c.proto.empty() ? c.algo : c.algo + "/" + c.proto;
    r.id = "coll:" + c.func + ":" + c.datatype + ":" + std::to_string(r.coll.count) + ":" +
           (how.empty() ? "" : how + ":") + "[" + members + "]";
    push(r);
  }
  for (const auto& [a, b] : plan.links) {
    Recipe r;
    r.kind = RecipeKind::kLink;
    r.src = a;
    r.dst = b;
    r.bytes = plan.link_bytes;
    r.id = "link:" + std::to_string(a) + "->" + std::to_string(b);
    push(r);
  }
  return out;
}

std::vector<std::pair<int, int>> pairs_of(const std::vector<std::vector<int>>& groups) {
  std::set<std::pair<int, int>> s;
  for (const auto& g : groups)
    for (int a : g)
      for (int b : g)
        if (a != b) s.insert({a, b});
  return {s.begin(), s.end()};
}

}  // namespace scout::replay
