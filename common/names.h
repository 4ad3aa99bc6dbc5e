// Names of the record format's enums (include/scout/shm_format.h), in one place for every part:
// NCCL's descriptor strings (func, datatype, algo, proto) to the enums (the plugin's hot path),
// datatype sizes, and the enums back to text for the dump, the store, the CLI and messages.
//
// NCCL passes pointers to static string literals inside libnccl (docs/nccl-notes.md §2.5), so each mapping
// keeps a tiny lock-free cache of pointers already seen; a hit (same address and same first
// character) returns the cached id without comparing the text, a miss compares with every name
// and inserts. Callers other than NCCL must therefore not reuse one buffer for two names that
// start with the same character while the plugin is loaded. NULL, "Unknown" and any unlisted
// string map to the kUnknown value of the enum. Thread-safe, never allocates, never blocks.
#pragma once

#include <atomic>
#include <cstdint>

#include "scout/shm_format.h"

namespace scout::shm {

// "AllReduce", "AllGather", "Broadcast", "Reduce", "ReduceScatter", "Send", "Recv", "AlltoAll",
// "Gather", "Scatter", "SendRecv" -> shm::Func; else kFuncUnknown.
uint8_t func_id(const char* s);

// "ncclInt8" ... "ncclFloat8e5m2" and the aliases ncclChar, ncclInt, ncclHalf, ncclFloat,
// ncclDouble -> shm::Datatype (= ncclDataType_t value); else kTypeUnknown. Note that NCCL prints
// ncclUint8 as "Unknown" (docs/nccl-notes.md §2.5), so Uint8 operations record kTypeUnknown.
uint8_t datatype_id(const char* s);

// "RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT" -> shm::Algo.
uint8_t algo_id(const char* s);

// "LL", "LL128", "SIMPLE" -> shm::Proto.
uint8_t proto_id(const char* s);

// Bytes per element of a shm::Datatype; 0 for kTypeUnknown or out-of-range ids.
uint32_t datatype_size(uint8_t dtype);

// NCCL's names of the enums (scout-dump, the store, messages): "AllReduce", "ncclFloat32",
// "RING", "SIMPLE"; "Unknown" for kUnknown or out-of-range values.
const char* func_name(uint8_t func);
const char* nccl_datatype_name(uint8_t dtype);
const char* algo_name(uint8_t algo);
const char* proto_name(uint8_t proto);

// Datatype in the short lower-case form of the store, the CLI and findings: "int8", "uint8",
// "int32", "uint32", "int64", "uint64", "float16", "float32", "float64", "bfloat16",
// "float8e4m3", "float8e5m2"; "unknown" otherwise.
const char* datatype_name(uint8_t dtype);

// Two spellings of the state enums: kRecord is the field-value spelling of the record format
// and scout-dump ("api_only", "skipped_device"); kDisplay is the store's and the CLI's
// ("api-only", "skipped-device"). Out-of-range values: "unknown".
enum class Spelling { kRecord, kDisplay };
// shm::OpKind -> "coll", "send", "recv", "unmatched", "ce_coll"; "none" otherwise.
const char* kind_name(uint8_t kind);
// shm::OpState -> "empty", "enqueued", "running", "complete", "api_only".
const char* op_state_name(uint32_t state, Spelling s = Spelling::kDisplay);
// shm::CommState -> "free", "init", "active", "finalized".
const char* comm_state_name(uint32_t state);
// shm::FpStatus -> "none", "pending", "done", "skipped_device", "skipped_captured",
// "skipped_callback", "skipped_error", "timed_out".
const char* fp_status_name(uint8_t status, Spelling s = Spelling::kDisplay);

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
      word.store((uint64_t(a) << 16) | (uint64_t(uint8_t(s[0])) << 8) | id, std::memory_order_relaxed);
    }
    return id;
  }
};

}  // namespace scout::shm
