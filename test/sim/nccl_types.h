// Names and numbers NCCL 2.28.9 uses for functions and datatypes, as scout-sim reports them to
// the profiler plugin. The strings are the static strings NCCL passes in descriptors (docs/nccl-notes.md
// §2.5); the function numbering follows NCCL's seqNumber index (docs/nccl-notes.md §3.6).
#pragma once

#include <cstddef>
#include <cstdint>

namespace scout::sim {

// Operation functions. The first five are NCCL's numbered collectives (seqNumber index).
enum class Func : uint8_t {
  kBroadcast = 0,
  kReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kAllReduce = 4,
  kSend = 5,
  kRecv = 6,
  kAlltoAll = 7,
};
constexpr int kNumSeqFuncs = 5;  // NCCL_NUM_FUNCTIONS: funcs with a seqNumber

// "AllReduce", "Send"... (docs/nccl-notes.md §2.5). Static storage; never null.
const char* func_name(Func f);

// True for Broadcast..AllReduce (the functions NCCL numbers with seqNumber).
constexpr bool is_collective(Func f) { return static_cast<int>(f) < kNumSeqFuncs; }

// Datatype string of every buffer the sim moves (float32), and of the Coll task of AllGather and
// Broadcast, which NCCL re-expresses in bytes (docs/nccl-notes.md §2.5, "Count and datatype differ").
constexpr const char* kFloat32Name = "ncclFloat32";
constexpr const char* kInt8Name = "ncclInt8";
constexpr const char* kInt32Name = "ncclInt32";  // what a dtype fault reports (same size as float32)
constexpr size_t kFloatBytes = 4;

}  // namespace scout::sim
