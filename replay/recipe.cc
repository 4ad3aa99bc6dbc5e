#include "replay/recipe.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <iterator>
#include <set>
#include <stdexcept>

namespace scout::replay {

namespace {

// Every value read only from a JSON value of its type and range: nothing narrows silently
// (2^40 to int, 1e300 to int64); each throws std::exception with what is wrong.
int64_t int_of(const nlohmann::json& v, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) throw std::invalid_argument("not an integer");
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
  if (x < lo || x > hi)
    throw std::out_of_range("integer out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}
uint64_t u64_of(const nlohmann::json& v) {
  if (!v.is_number_unsigned()) throw std::invalid_argument("not a non-negative integer");
  return v.get<uint64_t>();
}
std::string str_of(const nlohmann::json& v) {
  if (!v.is_string()) throw std::invalid_argument("not a string");
  return v.get<std::string>();
}

}  // namespace

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

nlohmann::json to_json(const CollClass& c) {
  return {{"func", c.func},   {"datatype", c.datatype}, {"elem_bytes", c.elem_bytes},
          {"count", c.count}, {"algo", c.algo},         {"proto", c.proto},
          {"ranks", c.ranks}};
}

CollClass coll_class_of(const nlohmann::json& c) {
  CollClass out;
  out.func = str_of(c.at("func"));
  out.datatype = str_of(c.at("datatype"));
  out.elem_bytes = int(int_of(c.at("elem_bytes"), 1, 8));
  out.count = u64_of(c.at("count"));
  out.algo = str_of(c.at("algo"));
  out.proto = str_of(c.at("proto"));
  const auto& ranks = c.at("ranks");
  if (!ranks.is_array() || ranks.size() > kMaxCollRanks)
    throw std::invalid_argument("ranks is not a list of at most " + std::to_string(kMaxCollRanks));
  for (const auto& g : ranks) out.ranks.push_back(int(int_of(g, 0, kMaxGlobalRank)));
  return out;
}

nlohmann::json to_json(const Recipe& r) {
  nlohmann::json j = {
      {"id", r.id}, {"kind", to_string(r.kind)}, {"seed", r.seed}, {"rounds", r.rounds}, {"iters", r.iters}};
  switch (r.kind) {
    case RecipeKind::kGemm:
      j["gemm"] = {{"m", r.gemm.m}, {"n", r.gemm.n}, {"k", r.gemm.k}, {"dtype", r.gemm.dtype}};
      break;
    case RecipeKind::kColl: j["coll"] = to_json(r.coll); break;
    case RecipeKind::kLink: j["link"] = {{"src", r.src}, {"dst", r.dst}, {"bytes", r.bytes}}; break;
  }
  return j;
}

uint64_t recipe_device_bytes(const Recipe& r) {
  using u128 = unsigned __int128;
  u128 b = 0;
  switch (r.kind) {
    case RecipeKind::kGemm: {
      const u128 m = u128(std::max<int64_t>(0, r.gemm.m)), n = u128(std::max<int64_t>(0, r.gemm.n)),
                 k = u128(std::max<int64_t>(0, r.gemm.k));
      b = (m * k + k * n + m * n) * u128(std::max(1, gemm_dtype_bytes(r.gemm.dtype)));
      break;
    }
    case RecipeKind::kLink: b = r.bytes; break;
    case RecipeKind::kColl:
      b = u128(r.coll.count) * u128(std::max(1, r.coll.elem_bytes)) * 2 *
          u128(std::max<size_t>(1, r.coll.ranks.size()));
      break;
  }
  return b > u128(UINT64_MAX) ? UINT64_MAX : uint64_t(b);
}

std::string check_recipe(const Recipe& r, uint64_t max_bytes) {
  if (r.id.empty() || r.id.size() > kMaxRecipeIdBytes)
    return "recipe id must be 1.." + std::to_string(kMaxRecipeIdBytes) + " bytes";
  const std::string who =
      "recipe " + nlohmann::json(r.id).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (r.rounds < 1 || r.rounds > 16 || r.iters < 1 || r.iters > 1000)
    return who + ": rounds must be 1..16 and iters 1..1000";
  auto rank_ok = [](int g) { return g >= 0 && g <= kMaxGlobalRank; };
  switch (r.kind) {
    case RecipeKind::kGemm:
      for (int64_t d : {r.gemm.m, r.gemm.n, r.gemm.k})
        if (d < 1 || d > kMaxGemmDim) return who + ": GEMM dimensions must be 1.." + std::to_string(kMaxGemmDim);
      if (gemm_dtype_bytes(r.gemm.dtype) == 0) return who + ": GEMM dtype must be bf16, fp16 or fp32";
      break;
    case RecipeKind::kLink:
      if (!rank_ok(r.src) || !rank_ok(r.dst) || r.src == r.dst)
        return who + ": a link joins two different ranks 0..2^24";
      if (r.bytes < 4 || r.bytes % 4 != 0) return who + ": link bytes must be a positive multiple of 4";
      break;
    case RecipeKind::kColl: {
      static const char* kFuncs[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce"};
      if (std::find(std::begin(kFuncs), std::end(kFuncs), r.coll.func) == std::end(kFuncs))
        return who + ": collective function must be AllReduce, AllGather, ReduceScatter, Broadcast or Reduce";
      if (r.coll.elem_bytes != 1 && r.coll.elem_bytes != 2 && r.coll.elem_bytes != 4 && r.coll.elem_bytes != 8)
        return who + ": elem_bytes must be 1, 2, 4 or 8";
      if (r.coll.count < 1) return who + ": count must be at least 1";
      if (r.coll.ranks.empty() || r.coll.ranks.size() > kMaxCollRanks)
        return who + ": a collective has 1.." + std::to_string(kMaxCollRanks) + " members";
      for (size_t i = 0; i < r.coll.ranks.size(); ++i)
        if (!rank_ok(r.coll.ranks[i]) || (i > 0 && r.coll.ranks[i] <= r.coll.ranks[i - 1]))
          return who + ": members must be ranks 0..2^24, ascending, each once";
      if (r.coll.datatype.size() > 64 || r.coll.algo.size() > 64 || r.coll.proto.size() > 64)
        return who + ": datatype, algo and proto are at most 64 bytes";
      break;
    }
  }
  const uint64_t need = recipe_device_bytes(r);
  if (need > max_bytes)
    return who + " needs " + std::to_string(need) + " bytes, more than the replay memory limit of " +
           std::to_string(max_bytes) + " (SCOUT_REPLAY_MAX_MEM)";
  return "";
}

bool from_json(const nlohmann::json& j, Recipe* out, std::string* error, uint64_t max_bytes) {
  try {
    if (!j.is_object()) throw std::invalid_argument("not an object");
    Recipe r;
    r.id = str_of(j.at("id"));
    const std::string kind = str_of(j.at("kind"));
    r.seed = u64_of(j.at("seed"));
    r.rounds = int(int_of(j.at("rounds"), 1, 16));
    r.iters = j.contains("iters") ? int(int_of(j["iters"], 1, 1000)) : 1;
    if (kind == "gemm") {
      r.kind = RecipeKind::kGemm;
      const auto& g = j.at("gemm");
      r.gemm = {int_of(g.at("m"), 1, kMaxGemmDim), int_of(g.at("n"), 1, kMaxGemmDim), int_of(g.at("k"), 1, kMaxGemmDim),
                str_of(g.at("dtype"))};
    } else if (kind == "coll") {
      r.kind = RecipeKind::kColl;
      r.coll = coll_class_of(j.at("coll"));
    } else if (kind == "link") {
      r.kind = RecipeKind::kLink;
      const auto& l = j.at("link");
      r.src = int(int_of(l.at("src"), 0, kMaxGlobalRank));
      r.dst = int(int_of(l.at("dst"), 0, kMaxGlobalRank));
      r.bytes = u64_of(l.at("bytes"));
    } else {
      *error =
          "unknown recipe kind " + nlohmann::json(kind).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return false;
    }
    const std::string why = check_recipe(r, max_bytes);
    if (!why.empty()) {
      *error = why;
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
