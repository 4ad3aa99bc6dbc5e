// One replay cycle as the observer keeps it (docs/replay.md, "Cycles in the store"): what
// scout-replay ran, when, and the verdict. Contract between the replay coordination
// (observer/replay/worker.h, producer), the store (table replay_cycles) and its
// readers (`scout replay list`, checkpoint certification: "did the replay cycle covering time T
// pass").
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace scout::obs {

struct ReplayCycleRecord {
  int64_t id = 0;          // store row id; 0 until stored
  uint64_t cycle = 0;      // the observer's cycle counter (restarts with the observer)
  std::string trigger;     // "periodic", "straggler", "sdc", "slowlink"
  int64_t started_ns = 0;  // CLOCK_REALTIME when the readiness contract was sent
  int64_t ended_ns = 0;    // when the verdict was reached (or the cycle was given up)
  std::string outcome;     // "pass", "fail", "inconclusive" (replay/judge.h)
  std::string backend;     // "emu", "cuda", "auto", "" when no answer came
  // {"participants": [...], "recipes": [...], "gpus": [...], "samples": [...],
  //  "verdict": {...}, "error": "..."} (docs/replay.md)
  nlohmann::json detail = nlohmann::json::object();
};

// The outcome in words every screen uses (the observer's log, `scout replay list`, Prometheus'
// `outcome` label): the stored outcome, except "slow" for a cycle that passed (every output
// right) but whose verdict names a slow GPU or link (`slow_gpus`, `slow_pairs`; docs/replay.md,
// "Verdicts"), so that it agrees with what the cycle found.
inline std::string outcome_word(const ReplayCycleRecord& c) {
  if (c.outcome != "pass") return c.outcome;
  auto nonempty = [&](const char* key) {
    const auto v = c.detail.find("verdict");
    if (v == c.detail.end() || !v->is_object()) return false;
    const auto a = v->find(key);
    return a != v->end() && a->is_array() && !a->empty();
  };
  return nonempty("slow_gpus") || nonempty("slow_pairs") ? "slow" : "pass";
}

}  // namespace scout::obs
