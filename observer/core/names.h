// Names of the record format's enums as the observer, the store and people see them. Function,
// algorithm and protocol names are NCCL's ("AllReduce", "RING", "SIMPLE"; the plugin's table in
// plugin/core/names.h); datatypes use the short lower-case form of the store ("float32").
#pragma once

#include <cstdint>

#include "plugin/core/names.h"

namespace scout::obs {

inline const char* func_name(uint8_t func) { return core::func_name(func); }
inline const char* algo_name(uint8_t algo) { return core::algo_name(algo); }
inline const char* proto_name(uint8_t proto) { return core::proto_name(proto); }
// shm::Datatype -> "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
// "float64", "bfloat16", "float8e4m3", "float8e5m2"; "unknown" otherwise.
const char* datatype_name(uint8_t datatype);
// shm::FpStatus -> "none", "pending", "done", "skipped-device", "skipped-captured",
// "skipped-callback", "skipped-error", "timed-out".
const char* fp_status_name(uint8_t status);
// shm::OpState -> "empty", "enqueued", "running", "complete", "api-only".
const char* op_state_name(uint32_t state);

}  // namespace scout::obs
