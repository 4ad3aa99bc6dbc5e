#include "observer/core/names.h"

#include <strings.h>

#include "scout/shm_format.h"

namespace scout::obs {

namespace {
constexpr const char* kFuncs[] = {"Broadcast", "Reduce",   "AllGather", "ReduceScatter",
                                  "AllReduce", "Send",     "Recv",      "AlltoAll",
                                  "Gather",    "Scatter",  "SendRecv"};
constexpr const char* kTypes[] = {"int8",    "uint8",   "int32",    "uint32",
                                  "int64",   "uint64",  "float16",  "float32",
                                  "float64", "bfloat16", "float8e4m3", "float8e5m2"};
constexpr int kTypeBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
constexpr const char* kAlgos[] = {"RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                  "NVLS", "NVLS_TREE", "PAT"};
constexpr const char* kProtos[] = {"LL", "LL128", "SIMPLE"};
constexpr const char* kFp[] = {"none",          "pending",          "done",
                               "skipped-device", "skipped-captured", "skipped-callback",
                               "skipped-error", "timed-out"};
constexpr const char* kStates[] = {"empty", "enqueued", "running", "complete", "api-only"};

template <size_t N>
const char* pick(const char* const (&table)[N], unsigned i, const char* other) {
  return i < N ? table[i] : other;
}
}  // namespace

const char* func_name(uint8_t func) { return pick(kFuncs, func, "Unknown"); }

std::optional<uint8_t> func_from_name(const std::string& name) {
  for (unsigned i = 0; i < sizeof(kFuncs) / sizeof(kFuncs[0]); ++i) {
    if (strcasecmp(name.c_str(), kFuncs[i]) == 0) return static_cast<uint8_t>(i);
  }
  return std::nullopt;
}

const char* datatype_name(uint8_t datatype) { return pick(kTypes, datatype, "unknown"); }
int datatype_bytes(uint8_t datatype) {
  return datatype < sizeof(kTypeBytes) / sizeof(kTypeBytes[0]) ? kTypeBytes[datatype] : 0;
}
const char* algo_name(uint8_t algo) { return pick(kAlgos, algo, "unknown"); }
const char* proto_name(uint8_t proto) { return pick(kProtos, proto, "unknown"); }
const char* fp_status_name(uint8_t status) { return pick(kFp, status, "unknown"); }
const char* op_state_name(uint32_t state) { return pick(kStates, state, "unknown"); }

}  // namespace scout::obs
