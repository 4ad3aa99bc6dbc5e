// Names of the record format's enums as people and the store see them ("AllReduce", "float32",
// "RING", "SIMPLE", "done"), and sizes of datatypes. One table for the observer and the CLI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace scout::obs {

// shm::Func -> "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "Send", "Recv",
// "AlltoAll", "Gather", "Scatter", "SendRecv"; "Unknown" otherwise.
const char* func_name(uint8_t func);
// Inverse of func_name (exact, case-insensitive); nullopt for an unknown name.
std::optional<uint8_t> func_from_name(const std::string& name);
// shm::Datatype -> "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
// "float64", "bfloat16", "float8e4m3", "float8e5m2"; "unknown" otherwise.
const char* datatype_name(uint8_t datatype);
// Bytes per element of a datatype; 0 when unknown.
int datatype_bytes(uint8_t datatype);
// shm::Algo -> "RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT".
const char* algo_name(uint8_t algo);
// shm::Proto -> "LL", "LL128", "SIMPLE".
const char* proto_name(uint8_t proto);
// shm::FpStatus -> "none", "pending", "done", "skipped-device", "skipped-captured",
// "skipped-callback", "skipped-error", "timed-out".
const char* fp_status_name(uint8_t status);
// shm::OpState -> "empty", "enqueued", "running", "complete", "api-only".
const char* op_state_name(uint32_t state);

}  // namespace scout::obs
