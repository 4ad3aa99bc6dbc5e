#include "observer/core/names.h"

namespace scout::obs {

namespace {
constexpr const char* kTypes[] = {"int8",    "uint8",    "int32",      "uint32",
                                  "int64",   "uint64",   "float16",    "float32",
                                  "float64", "bfloat16", "float8e4m3", "float8e5m2"};
constexpr const char* kFp[] = {"none",          "pending",          "done",
                               "skipped-device", "skipped-captured", "skipped-callback",
                               "skipped-error", "timed-out"};
constexpr const char* kStates[] = {"empty", "enqueued", "running", "complete", "api-only"};

template <size_t N>
const char* pick(const char* const (&table)[N], unsigned i, const char* other) {
  return i < N ? table[i] : other;
}
}  // namespace

const char* datatype_name(uint8_t datatype) { return pick(kTypes, datatype, "unknown"); }
const char* fp_status_name(uint8_t status) { return pick(kFp, status, "unknown"); }
const char* op_state_name(uint32_t state) { return pick(kStates, state, "unknown"); }

}  // namespace scout::obs
