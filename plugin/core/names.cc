// String-to-enum mapping with a pointer cache (names.h).
#include "plugin/core/names.h"

#include <atomic>

namespace scout::core {
namespace {

struct Name {
  const char* text;
  uint8_t id;
};

constexpr Name kFuncs[] = {
    {"Broadcast", shm::kFuncBroadcast}, {"Reduce", shm::kFuncReduce},
    {"AllGather", shm::kFuncAllGather}, {"ReduceScatter", shm::kFuncReduceScatter},
    {"AllReduce", shm::kFuncAllReduce}, {"Send", shm::kFuncSend},
    {"Recv", shm::kFuncRecv},           {"AlltoAll", shm::kFuncAlltoAll},
    {"Gather", shm::kFuncGather},       {"Scatter", shm::kFuncScatter},
    {"SendRecv", shm::kFuncSendRecv},
};

constexpr Name kTypes[] = {
    {"ncclInt8", shm::kTypeInt8},          {"ncclUint8", shm::kTypeUint8},
    {"ncclInt32", shm::kTypeInt32},        {"ncclUint32", shm::kTypeUint32},
    {"ncclInt64", shm::kTypeInt64},        {"ncclUint64", shm::kTypeUint64},
    {"ncclFloat16", shm::kTypeFloat16},    {"ncclFloat32", shm::kTypeFloat32},
    {"ncclFloat64", shm::kTypeFloat64},    {"ncclBfloat16", shm::kTypeBfloat16},
    {"ncclFloat8e4m3", shm::kTypeFloat8e4m3}, {"ncclFloat8e5m2", shm::kTypeFloat8e5m2},
    // Aliases of nccl.h (same values); listed after the canonical names.
    {"ncclChar", shm::kTypeInt8},          {"ncclInt", shm::kTypeInt32},
    {"ncclHalf", shm::kTypeFloat16},       {"ncclFloat", shm::kTypeFloat32},
    {"ncclDouble", shm::kTypeFloat64},
};

constexpr Name kAlgos[] = {
    {"RING", shm::kAlgoRing},
    {"TREE", shm::kAlgoTree},
    {"COLLNET_DIRECT", shm::kAlgoCollnetDirect},
    {"COLLNET_CHAIN", shm::kAlgoCollnetChain},
    {"NVLS", shm::kAlgoNvls},
    {"NVLS_TREE", shm::kAlgoNvlsTree},
    {"PAT", shm::kAlgoPat},
};

constexpr Name kProtos[] = {
    {"LL", shm::kProtoLL},
    {"LL128", shm::kProtoLL128},
    {"SIMPLE", shm::kProtoSimple},
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
  // A pointer seen before maps to the same name: NCCL's strings are static literals (digest
  // 2.5). The first character is checked too, so a caller reusing one buffer for different
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

uint8_t func_id(const char* s) { return lookup(s, kFuncs, g_func_cache, shm::kFuncUnknown); }
uint8_t datatype_id(const char* s) { return lookup(s, kTypes, g_type_cache, shm::kTypeUnknown); }
uint8_t algo_id(const char* s) { return lookup(s, kAlgos, g_algo_cache, shm::kAlgoUnknown); }
uint8_t proto_id(const char* s) { return lookup(s, kProtos, g_proto_cache, shm::kProtoUnknown); }

uint32_t datatype_size(uint8_t dtype) {
  switch (dtype) {
    case shm::kTypeInt8:
    case shm::kTypeUint8:
    case shm::kTypeFloat8e4m3:
    case shm::kTypeFloat8e5m2: return 1;
    case shm::kTypeFloat16:
    case shm::kTypeBfloat16: return 2;
    case shm::kTypeInt32:
    case shm::kTypeUint32:
    case shm::kTypeFloat32: return 4;
    case shm::kTypeInt64:
    case shm::kTypeUint64:
    case shm::kTypeFloat64: return 8;
    default: return 0;
  }
}

const char* func_name(uint8_t func) { return name_of(func, kFuncs); }
const char* datatype_name(uint8_t dtype) { return name_of(dtype, kTypes); }
const char* algo_name(uint8_t algo) { return name_of(algo, kAlgos); }
const char* proto_name(uint8_t proto) { return name_of(proto, kProtos); }

}  // namespace scout::core
