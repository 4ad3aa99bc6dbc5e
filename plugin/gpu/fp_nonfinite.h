// NaN / Inf counting over 64-bit words, shared by the CPU reference and the GPU kernel
// (docs/fingerprint.md, "NaN and Inf counts"). Branch-free SWAR: each 8-byte word holds 4
// fp16/bf16, 2 fp32 or 1 fp64 elements (elements never straddle words because a buffer and each
// of its blocks start element-aligned). A short last word is zero-padded, and a zero-padded
// partial element has a zero exponent, so it is never counted.
#pragma once

#include <cstdint>

#include "plugin/gpu/fp_params.h"

namespace scout::fp {

// Floating-point layouts that have NaN and Inf.
enum FloatKind : uint8_t { kNotFloat = 0, kF16 = 1, kBF16 = 2, kF32 = 3, kF64 = 4 };

// FloatKind of a scout::shm::Datatype value (ncclDataType_t numbering: Float16 = 6,
// Float32 = 7, Float64 = 8, Bfloat16 = 9); every other type counts nothing.
SCOUT_HD constexpr FloatKind float_kind(uint8_t dtype) {
  return dtype == 6 ? kF16 : dtype == 7 ? kF32 : dtype == 8 ? kF64 : dtype == 9 ? kBF16 : kNotFloat;
}

// Sums the 16-bit lanes' indicator bits: m has only bits 15, 31, 47, 63 possibly set.
SCOUT_HD constexpr uint32_t count_top_bits16(uint64_t m) { return uint32_t(((m >> 15) * 0x0001000100010001ull) >> 48); }

// Adds the NaN and Inf elements of word `w` (little-endian element order) to *nan and *inf
// (C: a 32- or 64-bit unsigned counter).
template <class C>
SCOUT_HD void count_nonfinite_word(uint64_t w, FloatKind kind, C* nan, C* inf) {
  switch (kind) {
    case kF16: {  // exponent 0x7C00; |x| > 0x7C00 is NaN, == 0x7C00 is Inf
      const uint64_t abs = w & 0x7FFF7FFF7FFF7FFFull, top = 0x8000800080008000ull;
      uint32_t nonfinite = count_top_bits16((abs + 0x0400040004000400ull) & top);
      uint32_t n = count_top_bits16((abs + 0x03FF03FF03FF03FFull) & top);
      *nan += n;
      *inf += nonfinite - n;
      break;
    }
    case kBF16: {  // exponent 0x7F80
      const uint64_t abs = w & 0x7FFF7FFF7FFF7FFFull, top = 0x8000800080008000ull;
      uint32_t nonfinite = count_top_bits16((abs + 0x0080008000800080ull) & top);
      uint32_t n = count_top_bits16((abs + 0x007F007F007F007Full) & top);
      *nan += n;
      *inf += nonfinite - n;
      break;
    }
    case kF32: {  // exponent 0x7F800000
      const uint64_t abs = w & 0x7FFFFFFF7FFFFFFFull, top = 0x8000000080000000ull;
      uint64_t fin = (abs + 0x0080000000800000ull) & top;
      uint64_t nn = (abs + 0x007FFFFF007FFFFFull) & top;
      uint32_t nonfinite = uint32_t((fin >> 31) & 1) + uint32_t(fin >> 63);
      uint32_t n = uint32_t((nn >> 31) & 1) + uint32_t(nn >> 63);
      *nan += n;
      *inf += nonfinite - n;
      break;
    }
    case kF64: {  // exponent 0x7FF0000000000000
      const uint64_t abs = w & 0x7FFFFFFFFFFFFFFFull;
      *nan += C(abs > 0x7FF0000000000000ull ? 1 : 0);
      *inf += C(abs == 0x7FF0000000000000ull ? 1 : 0);
      break;
    }
    case kNotFloat: break;
  }
}

}  // namespace scout::fp
