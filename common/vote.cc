#include "common/vote.h"

namespace scout {

const char* to_string(VoteVerdict v) {
  switch (v) {
    case VoteVerdict::kAgree: return "agree";
    case VoteVerdict::kAttributed: return "attributed";
    case VoteVerdict::kInconclusive: return "inconclusive";
  }
  return "unknown";
}

}  // namespace scout
