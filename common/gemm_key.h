// One GEMM shape class as scout identifies it everywhere (plugin capture, segment table, observer
// model, store, replay schedule): dimensions, element types, layouts, compute type and the
// algorithm cuBLASLt logged. Plain value type; the segment form is shm::GemmShapeEntry
// (include/scout/shm_format.h), whose fields these mirror one to one.
#pragma once

#include <cstdint>
#include <tuple>

namespace scout::shm {

struct GemmKey {
  uint64_t m = 0, n = 0, k = 0;                            // D is m x n; op(A) is m x k; op(B) is k x n
  uint32_t batch = 1;                                      // batchCount (1 if not logged)
  uint8_t a_type = 0, b_type = 0, c_type = 0, d_type = 0;  // GemmType
  uint8_t compute = 0;                                     // GemmCompute
  uint8_t scale_type = 0;                                  // GemmType
  uint8_t layout = 0;                                      // GemmLayoutBits
  int32_t algo = -1;                                       // algoId, -1 if not logged
  uint16_t tile_m = 0, tile_n = 0;                         // MATMUL_TILE_<m>x<n>, 0 if not logged

  auto tie() const {
    return std::tie(m, n, k, batch, a_type, b_type, c_type, d_type, compute, scale_type, layout, algo, tile_m, tile_n);
  }
  bool operator==(const GemmKey& o) const { return tie() == o.tie(); }
  bool operator<(const GemmKey& o) const { return tie() < o.tie(); }
  // Floating-point operations of one call: 2*m*n*k*batch (as a double: no overflow).
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }
};

}  // namespace scout::shm
