// String-to-enum mapping with a pointer cache (names.h).
#include "common/names.h"

#include <atomic>
#include <iterator>

namespace scout::shm {
namespace {

struct Name {
  const char* text;
  uint8_t id;
};

constexpr Name kFuncs[] = {
    {"Broadcast", kFuncBroadcast}, {"Reduce", kFuncReduce},
    {"AllGather", kFuncAllGather}, {"ReduceScatter", kFuncReduceScatter},
    {"AllReduce", kFuncAllReduce}, {"Send", kFuncSend},
    {"Recv", kFuncRecv},           {"AlltoAll", kFuncAlltoAll},
    {"Gather", kFuncGather},       {"Scatter", kFuncScatter},
    {"SendRecv", kFuncSendRecv},
};

constexpr Name kTypes[] = {
    {"ncclInt8", kTypeInt8},
    {"ncclUint8", kTypeUint8},
    {"ncclInt32", kTypeInt32},
    {"ncclUint32", kTypeUint32},
    {"ncclInt64", kTypeInt64},
    {"ncclUint64", kTypeUint64},
    {"ncclFloat16", kTypeFloat16},
    {"ncclFloat32", kTypeFloat32},
    {"ncclFloat64", kTypeFloat64},
    {"ncclBfloat16", kTypeBfloat16},
    {"ncclFloat8e4m3", kTypeFloat8e4m3},
    {"ncclFloat8e5m2", kTypeFloat8e5m2},
    // Aliases of nccl.h (same values); listed after the canonical names.
    {"ncclChar", kTypeInt8},
    {"ncclInt", kTypeInt32},
    {"ncclHalf", kTypeFloat16},
    {"ncclFloat", kTypeFloat32},
    {"ncclDouble", kTypeFloat64},
};

constexpr Name kAlgos[] = {
    {"RING", kAlgoRing},
    {"TREE", kAlgoTree},
    {"COLLNET_DIRECT", kAlgoCollnetDirect},
    {"COLLNET_CHAIN", kAlgoCollnetChain},
    {"NVLS", kAlgoNvls},
    {"NVLS_TREE", kAlgoNvlsTree},
    {"PAT", kAlgoPat},
};

constexpr Name kProtos[] = {
    {"LL", kProtoLL},
    {"LL128", kProtoLL128},
    {"SIMPLE", kProtoSimple},
};

// A few (pointer, table position) pairs per mapping. Entries are written with one CAS and never
// removed; a full cache just means a strcmp scan on a miss.
constexpr int kCacheEntries = 16;
struct Cache {
  std::atomic<const char*> ptr[kCacheEntries];
  std::atomic<uint8_t> pos[kCacheEntries];
};

Cache g_func_cache, g_type_cache, g_algo_cache, g_proto_cache;

// strcmp(a, b) == 0 for the short names here, inline (no library call on the hot path).
inline bool same(const char* a, const char* b) {
  for (;; ++a, ++b) {
    if (*a != *b) return false;
    if (*a == '\0') return true;
  }
}

template <size_t N>
uint8_t lookup(const char* s, const Name (&table)[N], Cache& cache, uint8_t unknown) {
  if (s == nullptr) return unknown;
  // A pointer seen before maps to the same name: NCCL's strings are static literals (docs/nccl-notes.md
  // §2.5). The first character is checked too, so a caller reusing one buffer for different
  // names is caught in most cases (then the scan below decides).
  for (int i = 0; i < kCacheEntries; ++i) {
    const char* p = cache.ptr[i].load(std::memory_order_acquire);
    if (p == nullptr) break;
    if (p == s) {
      uint8_t pos = cache.pos[i].load(std::memory_order_relaxed);
      if (pos < N && s[0] == table[pos].text[0]) return table[pos].id;
      break;
    }
  }
  for (size_t k = 0; k < N; ++k) {
    if (same(s, table[k].text)) {
      // Insert into the first free entry (pos first, then the pointer that publishes it).
      for (int i = 0; i < kCacheEntries; ++i) {
        const char* cur = cache.ptr[i].load(std::memory_order_acquire);
        if (cur == s) {
          cache.pos[i].store(uint8_t(k), std::memory_order_relaxed);  // the buffer was reused
          break;
        }
        if (cur != nullptr) continue;
        cache.pos[i].store(uint8_t(k), std::memory_order_relaxed);
        const char* expect = nullptr;
        if (cache.ptr[i].compare_exchange_strong(expect, s, std::memory_order_release)) break;
        if (expect == s) break;
      }
      return table[k].id;
    }
  }
  return unknown;
}

template <size_t N>
const char* name_of(uint8_t id, const Name (&table)[N]) {
  for (const Name& n : table) {
    if (n.id == id) return n.text;
  }
  return "Unknown";
}

}  // namespace

uint8_t func_id(const char* s) { return lookup(s, kFuncs, g_func_cache, kFuncUnknown); }
uint8_t datatype_id(const char* s) { return lookup(s, kTypes, g_type_cache, kTypeUnknown); }
uint8_t algo_id(const char* s) { return lookup(s, kAlgos, g_algo_cache, kAlgoUnknown); }
uint8_t proto_id(const char* s) { return lookup(s, kProtos, g_proto_cache, kProtoUnknown); }

uint32_t datatype_size(uint8_t dtype) {
  switch (dtype) {
    case kTypeInt8:
    case kTypeUint8:
    case kTypeFloat8e4m3:
    case kTypeFloat8e5m2: return 1;
    case kTypeFloat16:
    case kTypeBfloat16: return 2;
    case kTypeInt32:
    case kTypeUint32:
    case kTypeFloat32: return 4;
    case kTypeInt64:
    case kTypeUint64:
    case kTypeFloat64: return 8;
    default: return 0;
  }
}

const char* func_name(uint8_t func) { return name_of(func, kFuncs); }
const char* nccl_datatype_name(uint8_t dtype) { return name_of(dtype, kTypes); }

namespace {
constexpr const char* kShortTypes[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
                                       "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
// Each state in both spellings, index = enum value.
struct Spelled {
  const char* record;
  const char* display;
};
constexpr Spelled kOpStates[] = {{"empty", "empty"},
                                 {"enqueued", "enqueued"},
                                 {"running", "running"},
                                 {"complete", "complete"},
                                 {"api_only", "api-only"}};
constexpr Spelled kFpStatuses[] = {
    {"none", "none"},
    {"pending", "pending"},
    {"done", "done"},
    {"skipped_device", "skipped-device"},
    {"skipped_captured", "skipped-captured"},
    {"skipped_callback", "skipped-callback"},
    {"skipped_error", "skipped-error"},
    {"timed_out", "timed-out"},
};
constexpr const char* kKinds[] = {"none", "coll", "send", "recv", "unmatched", "ce_coll"};
constexpr const char* kCommStates[] = {"free", "init", "active", "finalized"};
static_assert(std::size(kOpStates) == kStateApiOnly + 1 && std::size(kFpStatuses) == kFpTimedOut + 1);
static_assert(std::size(kKinds) == kKindCeColl + 1 && std::size(kCommStates) == kCommFinalized + 1);

template <size_t N>
const char* spelled(const Spelled (&table)[N], unsigned i, Spelling s) {
  if (i >= N) return "unknown";
  return s == Spelling::kRecord ? table[i].record : table[i].display;
}
}  // namespace

const char* datatype_name(uint8_t dtype) { return dtype < std::size(kShortTypes) ? kShortTypes[dtype] : "unknown"; }
const char* kind_name(uint8_t kind) { return kind < std::size(kKinds) ? kKinds[kind] : "none"; }
const char* op_state_name(uint32_t state, Spelling s) { return spelled(kOpStates, state, s); }
const char* comm_state_name(uint32_t state) { return state < std::size(kCommStates) ? kCommStates[state] : "unknown"; }
const char* fp_status_name(uint8_t status, Spelling s) { return spelled(kFpStatuses, status, s); }
const char* algo_name(uint8_t algo) { return name_of(algo, kAlgos); }
const char* proto_name(uint8_t proto) { return name_of(proto, kProtos); }

}  // namespace scout::shm
