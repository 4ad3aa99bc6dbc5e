// Parser of cuBLASLt's logger lines for matmuls (the lines its logger hands to a callback set
// with cublasLtLoggerSetCallback at level 2, "Trace: API calls that launch CUDA kernels will log
// their parameters"; cuBLAS documentation, section "cuBLASLt logging"). A matmul line names a
// function ending in "Matmul" (cublasLtMatmul, cublasLtSSSMatmul, cublasLtTSTMatmul, ...) and
// carries, in any order:
//   Adesc=[type=R_16BF rows=R cols=C ld=L (order=ORDER_ROW) (batchCount=B ...)]  (also B, C, D)
//   computeDesc=[computeType=COMPUTE_32F scaleType=R_32F (transa=OP_T) (transb=OP_T) ...]
//   algo=[algoId=66 tile=MATMUL_TILE_128x128 ...]                                  (optional)
// A transpose is logged only when it is not OP_N. D (else C) is m x n, op(A) is m x k, op(B) is
// k x n; a line whose A and B disagree with D on these is malformed. The "[time][cublasLt][pid]
// [Trace][function]" prefix of a log file line is accepted and ignored.
// Never allocates, never throws: safe inside the logger callback.
#pragma once

#include <string_view>

#include "common/gemm_key.h"

namespace scout::gemm {

enum class ParseResult {
  kOk,         // *out holds the matmul's shape class
  kNotMatmul,  // a line of another function: ignored
  kMalformed,  // a matmul line without the fields above, or inconsistent ones: counted, skipped
};

// True if `function` (the logger's functionName) is a matmul entry point: ends with "Matmul".
bool is_matmul_function(std::string_view function);

// Parses one logger message of `function`. *out is written only on kOk.
ParseResult parse_matmul(std::string_view function, std::string_view message, shm::GemmKey* out);

}  // namespace scout::gemm
