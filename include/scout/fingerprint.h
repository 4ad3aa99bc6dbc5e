// scout fingerprints: the CPU-side API (definition in docs/fingerprint.md).
//
// A fingerprint is a 64-bit, position-sensitive, length-aware tree hash of a byte buffer whose
// leaves are XXH64 of fixed-size blocks. The GPU kernel (plugin/gpu) and these functions give
// the same bits for the same bytes. Everything here is pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace scout::fp {

// Format version mixed into every fingerprint and stored in OpRecord::fp_version.
constexpr uint32_t kFormatVersion = 1;

// NaN and +-Inf element counts of a floating-point buffer (zero for other datatypes).
struct Counts {
  uint64_t nan = 0;
  uint64_t inf = 0;
};

// Fingerprint of the `len` bytes at `data` (docs/fingerprint.md, "Definition"). `dtype` is a
// scout::shm::Datatype; for Float16, Bfloat16, Float32 and Float64 the NaN/Inf elements are
// stored into *counts when counts != nullptr (zeros for other types; a trailing partial element
// is not counted). data may be null only when len == 0.
uint64_t fingerprint(const void* data, uint64_t len, uint8_t dtype, Counts* counts);

// Fingerprint with a byte cap (docs/fingerprint.md, "Capped fingerprints"): when len >
// max_bytes, only a deterministic subset of blocks chosen from `selector` is hashed (each
// included block's index is mixed in), so every rank that passes the same selector, length and
// cap hashes the same blocks. *bytes_hashed receives the bytes covered. With len <= max_bytes
// it equals fingerprint().
uint64_t fingerprint_capped(const void* data, uint64_t len, uint64_t max_bytes, uint64_t selector, uint8_t dtype,
                            Counts* counts, uint64_t* bytes_hashed);

// The selector every rank derives for one operation: a hash of (comm_hash, func, key).
uint64_t op_selector(uint64_t comm_hash, uint8_t func, uint64_t key);

// Sampling decision, identical on every rank (docs/fingerprint.md, "Sampling"): operation
// (comm_hash, func, key) is sampled at budget level `level` with base period 2^period_log2 iff
// the low (period_log2 + level) bits of op_selector(...) are zero. Nested: an operation sampled
// at level L+1 is also sampled at level L, so ranks at different levels still agree on every
// operation the highest level samples.
bool sampled(uint64_t comm_hash, uint8_t func, uint64_t key, uint32_t period_log2, uint32_t level);

// Adaptive budget (docs/fingerprint.md, "Budget"): fed with the time spent fingerprinting and
// the NCCL kernel time of every completed operation, raises the level when the ratio exceeds
// `budget` and lowers it when it falls well under. budget <= 0 turns adaptation off (level 0).
// Not thread-safe; one per communicator, used by one thread.
class Budget {
 public:
  // Operations per evaluation window, and the kernel time after which a window closes early.
  static constexpr uint32_t kWindowOps = 64;
  static constexpr uint64_t kWindowKernelNs = 50'000'000;
  explicit Budget(double budget, uint32_t max_level = 20) : budget_(budget), max_level_(max_level) {}
  // Adds one completed operation: `fingerprint_ns` = time spent fingerprinting it (0 when it
  // was not sampled), `kernel_ns` = its NCCL kernel time. Returns the level to use from now on.
  uint32_t add(uint64_t fingerprint_ns, uint64_t kernel_ns);
  uint32_t level() const { return level_; }

 private:
  double budget_;
  uint32_t max_level_;
  uint32_t level_ = 0;
  uint64_t fp_ns_ = 0;
  uint64_t kernel_ns_ = 0;
  uint32_t samples_ = 0;
};

// Fingerprint of the whole content of the file at `path` (what `scout hash FILE` prints): 16
// lowercase hex digits of fingerprint(bytes, size, kTypeUint8, nullptr). On error returns ""
// and sets *error (when non-null) to a message naming the path and the reason.
std::string hash_file(const std::string& path, std::string* error);

// 16 lowercase hex digits of a fingerprint (zero-padded).
std::string to_hex(uint64_t fingerprint);

}  // namespace scout::fp
