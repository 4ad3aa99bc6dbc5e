#include "observer/replay/cycle.h"

namespace scout::obs {

const char* to_string(Trigger t) {
  switch (t) {
    case Trigger::kPeriodic: return "periodic";
    case Trigger::kStraggler: return "straggler";
    case Trigger::kSdc: return "sdc";
    case Trigger::kSlowLink: return "slowlink";
    case Trigger::kDemand: return "demand";
    case Trigger::kCross: return "cross";
    case Trigger::kStuck: return "stuck";
  }
  return "?";
}

const char* to_string(CycleState s) {
  switch (s) {
    case CycleState::kIdle: return "idle";
    case CycleState::kQueued: return "queued";
    case CycleState::kPreparing: return "preparing";
    case CycleState::kRunning: return "running";
    case CycleState::kJudged: return "judged";
  }
  return "?";
}

}  // namespace scout::obs
