// NCCL's descriptor strings (func, datatype, algo, proto) to the record enums of
// include/scout/shm_format.h, and datatype sizes.
//
// NCCL passes pointers to static string literals inside libnccl (digest 2.5), so each mapping
// keeps a tiny lock-free cache of pointers already seen; a cache hit is confirmed with one
// strcmp against the canonical name (a test or another caller may reuse a buffer), a miss scans
// the table with strcmp and inserts. NULL, "Unknown" and any unlisted string map to the
// kUnknown value of the enum. Thread-safe, never allocates, never blocks.
#pragma once

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

}  // namespace scout::core
