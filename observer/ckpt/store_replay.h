// Replay for certification from the replay cycles the observer stores (table replay_cycles,
// docs/replay.md, "Cycles in the store"): the ReplayCycles the Certifier gets when replay is on
// (docs/certification.md, "Replay"). Reading the store, not the coordinator, keeps the answer the
// same across observer restarts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "observer/ckpt/replay_cycles.h"
#include "observer/model/finding.h"
#include "observer/model/replay_cycle.h"

namespace scout::store {
class StoreReader;
}

namespace scout::ckpt {

// The replay outcome of a check cycle from the finished replay cycles that concern it:
// `covering`, the one covering its begin (running then, else the first that started after it;
// StoreReader::replay_cycle_covering), and `started`, those that started inside it. `findings`:
// the job's findings, whose replay sdc findings active during a failed replay cycle become the
// result's finding_ids. Returns kFail when any of them failed; else kNone when `covering` is
// absent; else kInconclusive when any was inconclusive (or of an unknown outcome); else kPass.
// Recipes and GPUs are the union over those cycles, in order of first appearance.
ReplayCycleResult replay_outcome(const std::optional<obs::ReplayCycleRecord>& covering,
                                 const std::vector<obs::ReplayCycleRecord>& started,
                                 const std::vector<obs::Finding>& findings);

class StoreReplayCycles : public ReplayCycles {
 public:
  // `store_path`: the observer's own store (its writer commits each pass before the Certifier
  // runs, so this reader sees the cycles that pass finished).
  explicit StoreReplayCycles(std::string store_path);
  ~StoreReplayCycles() override;

  // replay_outcome() of [begin_ns, end_ns) from the store. kNone while the store cannot be read
  // (the error goes to `last_error()`), so the check cycle is incomplete, never clean.
  ReplayCycleResult result(int64_t begin_ns, int64_t end_ns) override;
  const std::string& last_error() const { return error_; }

 private:
  std::string path_;
  std::unique_ptr<store::StoreReader> reader_;  // opened at first use
  std::string error_;
};

}  // namespace scout::ckpt
