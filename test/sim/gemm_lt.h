// scout-sim's stand-in for cuBLASLt (docs/scout-sim.md, "Mixture of experts"): the logger entry
// points cuBLASLt exports (cublasLtLoggerSetCallback, cublasLtLoggerSetLevel,
// cublasLtLoggerSetFile; declared as in
// cuBLASLt's header, exported from the scout-sim executable), and the matmul trace lines it
// would log at level 2, so the plugin's GEMM capture (plugin/gemm/capture.h) finds and drives it
// through the same code path as on a GPU. No GEMM is computed.
#pragma once

#include <cstdint>

#include "test/sim/layout.h"
#include "test/sim/options.h"

namespace scout::sim {

// One BF16 matmul D(m x n) = op(A)(m x k) op(B)(k x n) with COMPUTE_32F: logs its trace line to
// the installed callback if the level is at least 2 (as cuBLASLt does); nothing otherwise.
// trans_a / trans_b: op is a transpose. algo: algoId written in the line.
void lt_matmul(uint64_t m, uint64_t n, uint64_t k, bool trans_a, bool trans_b, int algo);

// Rows routed to each local expert of global rank g in `step`: tokens of the step routed with a
// seeded skewed (Zipf-like, exponent 1.2 over a per-step permutation of the experts)
// distribution, so every expert's row count changes from step to step. TP peers (same DP
// coordinate) get the same rows. Empty if --moe-experts is 0.
std::vector<uint64_t> expert_rows(const Layout& layout, const SimOptions& o, int g, int64_t step);

// The GEMMs of one step of rank g: the dense layers' fixed shapes and, per local expert,
// forward (rows x ffn/T x hidden), data gradient (rows x hidden x ffn/T) and weight gradient
// (hidden x ffn/T x rows).
void run_step_gemms(const Layout& layout, const SimOptions& o, int g, int64_t step);

}  // namespace scout::sim
