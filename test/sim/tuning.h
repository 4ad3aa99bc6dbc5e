// What NCCL's tuner would pick for an emulated operation: algorithm, protocol, channels and
// warps (descriptor strings of docs/nccl-notes.md §2.5). Deterministic functions of the message, so every rank
// of a communicator reports the same choice, as NCCL's ranks do.
#pragma once

#include <cstdint>

#include "test/sim/nccl_types.h"

namespace scout::sim {

struct Tuning {
  const char* algo = "RING";  // static strings, as NCCL's
  const char* proto = "SIMPLE";
  uint8_t n_channels = 1;
  uint8_t n_warps = 16;
  uint8_t channel_base = 0;  // channel ids are channel_base .. channel_base + n_channels - 1
};

// Collectives: channels 0..n-1 (2 below 32 KiB, 3 below 512 KiB, else 4); LL up to 16 KiB,
// LL128 up to 256 KiB, else SIMPLE; TREE for AllReduce up to 64 KiB spanning hosts, else RING.
// `bytes` is the per-rank message size (AllReduce count * 4).
Tuning tune_coll(Func f, uint64_t bytes, int n_nodes);

// Point-to-point between comm ranks `from` -> `to` of `nranks`: 1 channel below 64 KiB, else 2,
// starting at channel 2 * ((to - from) mod nranks) mod 32, the same on both ends of a pair (as
// NCCL maps p2p rounds to channels); SIMPLE protocol.
Tuning tune_p2p(uint64_t bytes, int from, int to, int nranks);

}  // namespace scout::sim
