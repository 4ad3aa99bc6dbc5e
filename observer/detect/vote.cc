#include "observer/detect/vote.h"

namespace scout::obs {

const char* to_string(VoteVerdict v) {
  switch (v) {
    case VoteVerdict::kAgree: return "agree";
    case VoteVerdict::kAttributed: return "attributed";
    case VoteVerdict::kInconclusive: return "inconclusive";
  }
  return "unknown";
}

}  // namespace scout::obs
