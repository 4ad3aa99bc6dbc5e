#include "replay/backend.h"

#include "common/hex.h"

namespace scout::replay {

namespace {
uint64_t parse_hex(const std::string& s) { return std::stoull(s, nullptr, 16); }
}  // namespace

nlohmann::json to_json(const GpuInfo& g) {
  return {{"global_rank", g.global_rank},
          {"gpu", g.gpu},
          {"model", g.model},
          {"sm_count", g.sm_count},
          {"libs", g.libs},
          {"free_bytes", g.free_bytes},
          {"ready", g.ready},
          {"reason", g.reason}};
}

bool from_json(const nlohmann::json& j, GpuInfo* out, std::string* error) {
  try {
    GpuInfo g;
    g.global_rank = j.at("global_rank").get<int>();
    g.gpu = j.at("gpu").get<std::string>();
    g.model = j.at("model").get<std::string>();
    g.sm_count = j.at("sm_count").get<int>();
    g.libs = j.at("libs").get<std::string>();
    g.free_bytes = j.at("free_bytes").get<int64_t>();
    g.ready = j.at("ready").get<bool>();
    g.reason = j.at("reason").get<std::string>();
    *out = std::move(g);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("gpu info: ") + e.what();
    return false;
  }
}

const char* to_string(SampleStatus s) {
  switch (s) {
    case SampleStatus::kOk: return "ok";
    case SampleStatus::kSkipped: return "skipped";
    case SampleStatus::kFailed: return "failed";
  }
  return "?";
}

nlohmann::json to_json(const Sample& s) {
  nlohmann::json j = {{"recipe", s.recipe}, {"global_rank", s.global_rank},  {"gpu", s.gpu},
                      {"round", s.round},   {"status", to_string(s.status)}, {"ns", s.ns}};
  if (!s.reason.empty()) j["reason"] = s.reason;
  if (s.status == SampleStatus::kOk) j["fp"] = shm::fp_hex(s.fp);
  if (s.expected_known) j["expected_fp"] = shm::fp_hex(s.expected_fp);
  if (s.peer >= 0) j["peer"] = s.peer;
  return j;
}

bool from_json(const nlohmann::json& j, Sample* out, std::string* error) {
  try {
    Sample s;
    s.recipe = j.at("recipe").get<std::string>();
    s.global_rank = j.at("global_rank").get<int>();
    s.gpu = j.at("gpu").get<std::string>();
    s.round = j.at("round").get<int>();
    const std::string st = j.at("status").get<std::string>();
    if (st == "ok")
      s.status = SampleStatus::kOk;
    else if (st == "skipped")
      s.status = SampleStatus::kSkipped;
    else if (st == "failed")
      s.status = SampleStatus::kFailed;
    else {
      *error = "sample: unknown status '" + st + "'";
      return false;
    }
    s.ns = j.at("ns").get<int64_t>();
    s.reason = j.value("reason", "");
    if (j.contains("fp")) s.fp = parse_hex(j.at("fp").get<std::string>());
    if (j.contains("expected_fp")) {
      s.expected_known = true;
      s.expected_fp = parse_hex(j.at("expected_fp").get<std::string>());
    }
    s.peer = j.value("peer", -1);
    *out = std::move(s);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("sample: ") + e.what();
    return false;
  }
}

Sample sample_of(const Recipe& r, const Participant& p, int round) {
  Sample s;
  s.recipe = r.id;
  s.global_rank = p.global_rank;
  s.gpu = p.gpu;
  s.round = round;
  return s;
}

Sample not_measured(Sample s, SampleStatus st, const std::string& why) {
  s.status = st;
  s.reason = why;
  s.fp = 0;
  s.ns = -1;
  s.expected_known = false;
  s.expected_fp = 0;
  return s;
}

}  // namespace scout::replay
