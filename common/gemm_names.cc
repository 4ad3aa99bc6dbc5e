// Names of the GEMM shape table's enums (gemm_names.h).
#include "common/gemm_names.h"

namespace scout::shm {
namespace {

struct Name {
  std::string_view text;
  uint8_t id;
};

constexpr Name kTypes[] = {
    {"R_16F", kGemmR16F},        {"R_16BF", kGemmR16BF},      {"R_32F", kGemmR32F}, {"R_64F", kGemmR64F},
    {"R_8I", kGemmR8I},          {"R_8U", kGemmR8U},          {"R_32I", kGemmR32I}, {"R_8F_E4M3", kGemmR8FE4M3},
    {"R_8F_E5M2", kGemmR8FE5M2}, {"R_4F_E2M1", kGemmR4FE2M1}, {"C_32F", kGemmC32F}, {"C_64F", kGemmC64F},
    {"C_16F", kGemmC16F},
};
constexpr uint32_t kTypeSizes[kGemmTypeCount] = {0, 2, 2, 4, 8, 1, 1, 4, 1, 1, 1, 8, 16, 4};

constexpr Name kComputes[] = {
    {"COMPUTE_16F", kGemmCompute16F},
    {"COMPUTE_16F_PEDANTIC", kGemmCompute16FPedantic},
    {"COMPUTE_32F", kGemmCompute32F},
    {"COMPUTE_32F_PEDANTIC", kGemmCompute32FPedantic},
    {"COMPUTE_32F_FAST_16F", kGemmCompute32FFast16F},
    {"COMPUTE_32F_FAST_16BF", kGemmCompute32FFast16BF},
    {"COMPUTE_32F_FAST_TF32", kGemmCompute32FFastTF32},
    {"COMPUTE_64F", kGemmCompute64F},
    {"COMPUTE_64F_PEDANTIC", kGemmCompute64FPedantic},
    {"COMPUTE_32I", kGemmCompute32I},
    {"COMPUTE_32I_PEDANTIC", kGemmCompute32IPedantic},
};

template <size_t N>
uint8_t lookup(const Name (&names)[N], std::string_view s) {
  for (const Name& n : names) {
    if (n.text == s) return n.id;
  }
  return 0;
}

template <size_t N>
const char* name_of(const Name (&names)[N], uint8_t id) {
  for (const Name& n : names) {
    if (n.id == id) return n.text.data();  // literals: NUL-terminated
  }
  return "unknown";
}

}  // namespace

uint8_t gemm_type_id(std::string_view s) { return lookup(kTypes, s); }
const char* gemm_type_name(uint8_t t) { return name_of(kTypes, t); }
uint32_t gemm_type_size(uint8_t t) { return t < kGemmTypeCount ? kTypeSizes[t] : 0; }
uint8_t gemm_compute_id(std::string_view s) { return lookup(kComputes, s); }
const char* gemm_compute_name(uint8_t c) { return name_of(kComputes, c); }

const char* gemm_capture_state_name(uint32_t s) {
  switch (s) {
    case kGemmOff: return "off";
    case kGemmWaiting: return "waiting";
    case kGemmCapturing: return "capturing";
    case kGemmNoLibrary: return "no_library";
    case kGemmUserLogger: return "user_logger";
    case kGemmFailed: return "failed";
  }
  return "unknown";
}

void gemm_layout_ops(uint8_t layout, char out[3]) {
  out[0] = (layout & kGemmConjA) ? 'C' : (layout & kGemmTransA) ? 'T' : 'N';
  out[1] = (layout & kGemmConjB) ? 'C' : (layout & kGemmTransB) ? 'T' : 'N';
  out[2] = '\0';
}

}  // namespace scout::shm
