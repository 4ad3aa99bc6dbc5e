// NCCL's descriptor strings (func, datatype, algo, proto) to the record enums of
// include/scout/shm_format.h, and datatype sizes.
//
// NCCL passes pointers to static string literals inside libnccl (digest 2.5), so each mapping
// keeps a tiny lock-free cache of pointers already seen; a hit (same address and same first
// character) returns the cached id without comparing the text, a miss compares with every name
// and inserts. Callers other than NCCL must therefore not reuse one buffer for two names that
// start with the same character while the plugin is loaded. NULL, "Unknown" and any unlisted
// string map to the kUnknown value of the enum. Thread-safe, never allocates, never blocks.
#pragma once

#include <atomic>
#include <cstdint>

#include "scout/shm_format.h"

namespace scout::core {

// "AllReduce", "AllGather", "Broadcast", "Reduce", "ReduceScatter", "Send", "Recv", "AlltoAll",
// "Gather", "Scatter", "SendRecv" -> shm::Func; else kFuncUnknown.
uint8_t func_id(const char* s);

// "ncclInt8" ... "ncclFloat8e5m2" and the aliases ncclChar, ncclInt, ncclHalf, ncclFloat,
// ncclDouble -> shm::Datatype (= ncclDataType_t value); else kTypeUnknown. Note that NCCL prints
// ncclUint8 as "Unknown" (digest 2.5), so Uint8 operations record kTypeUnknown.
uint8_t datatype_id(const char* s);

// "RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT" -> shm::Algo.
uint8_t algo_id(const char* s);

// "LL", "LL128", "SIMPLE" -> shm::Proto.
uint8_t proto_id(const char* s);

// Bytes per element of a shm::Datatype; 0 for kTypeUnknown or out-of-range ids.
uint32_t datatype_size(uint8_t dtype);

// Canonical names of the enums (for scout-dump and messages): "AllReduce", "ncclFloat32",
// "RING", "SIMPLE"; "Unknown" for kUnknown or out-of-range values.
const char* func_name(uint8_t func);
const char* datatype_name(uint8_t dtype);
const char* algo_name(uint8_t algo);
const char* proto_name(uint8_t proto);

// A one-entry memo in front of a mapping, for the strings one communicator sees over and over:
// the last (address, first character, id) packed into one atomic word, so a hit costs one load
// and two compares and a concurrent update can never pair an address with another's id.
struct NameMemo {
  std::atomic<uint64_t> word{0};  // address << 16 | first character << 8 | id; 0 = empty

  uint8_t map(const char* s, uint8_t (*slow)(const char*)) {
    uint64_t w = word.load(std::memory_order_relaxed);
    uintptr_t a = reinterpret_cast<uintptr_t>(s);
    if (s != nullptr && (w >> 16) == a && uint8_t(w >> 8) == uint8_t(s[0])) return uint8_t(w);
    uint8_t id = slow(s);
    if (s != nullptr && (a >> 48) == 0) {
      word.store((uint64_t(a) << 16) | (uint64_t(uint8_t(s[0])) << 8) | id,
                 std::memory_order_relaxed);
    }
    return id;
  }
};

}  // namespace scout::core
