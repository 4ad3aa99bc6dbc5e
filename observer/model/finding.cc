#include "observer/model/finding.h"

#include <cinttypes>
#include <cstdio>
#include <iterator>

namespace scout::obs {

namespace {
constexpr const char* kKindNames[] = {"hang", "deadlock", "desync", "straggler", "slowlink",
                                      "sdc",  "nan",      "crash",  "stall"};
static_assert(std::size(kKindNames) == std::size(kAllFindingKinds));

nlohmann::json suspect_json(const Suspect& s) {
  nlohmann::json j = {{"global_rank", s.global_rank}, {"host", s.host}, {"pid", s.pid}, {"gpu", s.gpu}};
  if (s.comm_rank >= 0) j["comm_rank"] = s.comm_rank;
  return j;
}

bool suspect_from(const nlohmann::json& j, Suspect* s, std::string* error) {
  if (!j.is_object() || !j.contains("global_rank") || !j["global_rank"].is_number_integer()) {
    if (error) *error = "suspect without integer global_rank";
    return false;
  }
  s->global_rank = j["global_rank"].get<int>();
  s->host = j.value("host", std::string());
  s->pid = j.value("pid", 0);
  s->gpu = j.value("gpu", std::string());
  s->comm_rank = j.value("comm_rank", -1);
  return true;
}
}  // namespace

const char* to_string(FindingKind k) { return kKindNames[static_cast<int>(k)]; }

const char* to_string(Verdict v) { return v == Verdict::kAttributed ? "attributed" : "inconclusive"; }

std::optional<FindingKind> kind_from_string(const std::string& s) {
  for (size_t i = 0; i < std::size(kAllFindingKinds); ++i) {
    if (s == kKindNames[i]) return kAllFindingKinds[i];
  }
  return std::nullopt;
}

std::optional<Verdict> verdict_from_string(const std::string& s) {
  if (s == "attributed") return Verdict::kAttributed;
  if (s == "inconclusive") return Verdict::kInconclusive;
  return std::nullopt;
}

nlohmann::json to_json(const Finding& f) {
  nlohmann::json j;
  j["id"] = f.id;
  j["kind"] = to_string(f.kind);
  j["verdict"] = to_string(f.verdict);
  j["status"] = f.open ? "open" : "closed";
  j["suspects"] = nlohmann::json::array();
  for (const Suspect& s : f.suspects) j["suspects"].push_back(suspect_json(s));
  j["peer"] = f.peer ? suspect_json(*f.peer) : nlohmann::json(nullptr);
  if (f.comm_hash != 0) {
    j["comm"] = {{"hash", hex64(f.comm_hash)}, {"name", f.comm_name}, {"nranks", f.comm_nranks}};
  } else {
    j["comm"] = nullptr;
  }
  j["key"] = f.key ? nlohmann::json{{"func", f.key->func}, {"seq", f.key->seq}} : nlohmann::json(nullptr);
  j["first_seen_ns"] = f.first_seen_ns;
  j["last_seen_ns"] = f.last_seen_ns;
  j["summary"] = f.summary;
  j["evidence"] = f.evidence;
  return j;
}

bool from_json(const nlohmann::json& j, Finding* out, std::string* error) {
  auto fail = [&](const std::string& m) {
    if (error) *error = m;
    return false;
  };
  if (!j.is_object()) return fail("finding is not an object");
  Finding f;
  if (!j.contains("kind") || !j["kind"].is_string()) return fail("missing kind");
  auto kind = kind_from_string(j["kind"].get<std::string>());
  if (!kind) return fail("unknown kind " + j["kind"].get<std::string>());
  f.kind = *kind;
  if (!j.contains("verdict") || !j["verdict"].is_string()) return fail("missing verdict");
  auto verdict = verdict_from_string(j["verdict"].get<std::string>());
  if (!verdict) return fail("unknown verdict");
  f.verdict = *verdict;
  f.id = j.value("id", int64_t{0});
  f.open = j.value("status", std::string("open")) == "open";
  if (j.contains("suspects")) {
    if (!j["suspects"].is_array()) return fail("suspects is not a list");
    for (const auto& s : j["suspects"]) {
      Suspect sus;
      if (!suspect_from(s, &sus, error)) return false;
      f.suspects.push_back(sus);
    }
  }
  if (j.contains("peer") && !j["peer"].is_null()) {
    Suspect p;
    if (!suspect_from(j["peer"], &p, error)) return false;
    f.peer = p;
  }
  if (j.contains("comm") && j["comm"].is_object()) {
    std::string h = j["comm"].value("hash", std::string("0x0"));
    f.comm_hash = std::strtoull(h.c_str(), nullptr, 16);
    f.comm_name = j["comm"].value("name", std::string());
    f.comm_nranks = j["comm"].value("nranks", 0);
  }
  if (j.contains("key") && j["key"].is_object()) {
    f.key = OpKey{j["key"].value("func", std::string()), j["key"].value("seq", uint64_t{0})};
  }
  f.first_seen_ns = j.value("first_seen_ns", int64_t{0});
  f.last_seen_ns = j.value("last_seen_ns", int64_t{0});
  f.summary = j.value("summary", std::string());
  f.evidence = j.contains("evidence") ? j["evidence"] : nlohmann::json::object();
  f.dedup_key = j.value("dedup_key", std::string());
  *out = std::move(f);
  return true;
}

}  // namespace scout::obs
