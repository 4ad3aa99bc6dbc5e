// Buffer contents and reductions of the emulated kernels: real float32 data, deterministic from
// (seed, rank, operation), reduced in a fixed rank order so every rank receives identical bytes
// (as NCCL guarantees for a given algorithm).
#pragma once

#include <cstdint>

namespace scout::sim {

// Fills dst[0..n) with values in [-0.5, 0.5) that depend only on (seed, global rank, op, index).
void fill_input(float* dst, uint64_t n, uint64_t seed, int global_rank, uint64_t op);

// out[e] = sum over j = 0..n-1 (in this order) of in[j][chunk * counts[j] + e], taking only the
// ranks with e < counts[j], for e < out_n. chunk = 0 is an AllReduce, chunk = i the
// ReduceScatter output of comm rank i. Elements no rank provides are 0.
void reduce_sum(float* out, uint64_t out_n, const float* const* in, const uint64_t* counts, int n, uint64_t chunk);

// Copies min(n_dst, n_src) floats and zeroes the rest of dst[0..n_dst) (a short or desynchronized
// peer contribution).
void copy_or_zero(float* dst, uint64_t n_dst, const float* src, uint64_t n_src);

}  // namespace scout::sim
