// Names of the GEMM shape table's enums (include/scout/shm_format.h, "GEMM shape table"): the
// spellings cuBLASLt's logger uses (cudaDataType names such as "R_16BF", cublasComputeType_t
// names such as "COMPUTE_32F_FAST_TF32"), from text to id (the plugin's log parser) and back (the
// store, the CLI, the replay schedule). Never allocates.
#pragma once

#include <cstdint>
#include <string_view>

#include "scout/shm_format.h"

namespace scout::shm {

// "R_16F", "R_16BF", "R_32F", "R_64F", "R_8I", "R_8U", "R_32I", "R_8F_E4M3", "R_8F_E5M2",
// "R_4F_E2M1", "C_32F", "C_64F", "C_16F" -> GemmType; anything else kGemmTypeUnknown.
uint8_t gemm_type_id(std::string_view s);
// The logger's spelling of a GemmType; "unknown" for kGemmTypeUnknown or out of range.
const char* gemm_type_name(uint8_t t);
// Bytes per element of a GemmType (R_4F_E2M1: 1, rounded up); 0 if unknown.
uint32_t gemm_type_size(uint8_t t);

// "COMPUTE_16F", "COMPUTE_16F_PEDANTIC", "COMPUTE_32F", "COMPUTE_32F_PEDANTIC",
// "COMPUTE_32F_FAST_16F", "COMPUTE_32F_FAST_16BF", "COMPUTE_32F_FAST_TF32", "COMPUTE_64F",
// "COMPUTE_64F_PEDANTIC", "COMPUTE_32I", "COMPUTE_32I_PEDANTIC" -> GemmCompute; else unknown.
uint8_t gemm_compute_id(std::string_view s);
const char* gemm_compute_name(uint8_t c);

// GemmCaptureState (GemmTableHeader::state) as a word: "off", "waiting", "capturing",
// "no_library", "user_logger", "failed"; "unknown" out of range.
const char* gemm_capture_state_name(uint32_t s);

// Layout bits as the two-letter operation code of BLAS ("NN", "TN", "NT", "TT"; C for
// conjugate-transpose), op(A) first. Writes 3 bytes (NUL-terminated) into out.
void gemm_layout_ops(uint8_t layout, char out[3]);

}  // namespace scout::shm
