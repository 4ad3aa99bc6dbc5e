// What certification needs from replay (re-running the job's work on its GPUs): the result of
// the replay cycle for one time range. A replay engine implements ReplayCycles and hands it to the
// Certifier (observer/ckpt/certifier.h); without one, replay counts as off and check cycles are
// judged on fingerprint consensus and findings alone (docs/certification.md, "Replay").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scout::ckpt {

enum class ReplayStatus {
  kNone,          // no replay cycle ran in the range (with replay on, the check cycle is incomplete)
  kPass,          // a whole replay cycle ran in the range and every comparison agreed
  kFail,          // some GPU or link computed wrong bits: the check cycle is dirty
  kUnfinished,    // a replay cycle began but did not finish in the range: incomplete
  kInconclusive,  // a replay cycle ran but could not decide (a recipe skipped, a participant lost,
                  // no strict majority, scout-replay died or missed its deadline): incomplete
};
// "none", "pass", "fail", "unfinished", "inconclusive"
const char* to_string(ReplayStatus s);

struct ReplayCycleResult {
  ReplayStatus status = ReplayStatus::kNone;
  std::vector<std::string> recipes;  // recipe ids replayed (for the certificate)
  std::vector<std::string> gpus;     // GPU identities that replayed
  std::vector<int64_t> finding_ids;  // findings a failure opened (reasons of a rejection)
};

class ReplayCycles {
 public:
  virtual ~ReplayCycles() = default;
  // The replay outcome for operations that began in [begin_ns, end_ns) (CLOCK_REALTIME ns).
  // Called from the observer thread once the range has ended; must not block for long.
  virtual ReplayCycleResult result(int64_t begin_ns, int64_t end_ns) = 0;
};

}  // namespace scout::ckpt
