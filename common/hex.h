// How scout spells 64-bit values in findings, evidence, replay records and the CLI: "0x" and 16
// lowercase hex digits (docs/findings.md, "Shared shapes inside evidence"): fingerprints and
// commHashes alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace scout::shm {

// "0x00000000000000ab".
std::string hex64(uint64_t v);
// `n` bytes at `data` as 2n lowercase hex digits (a SHA-256 digest, a replay bootstrap id).
std::string bytes_hex(const void* data, size_t n);
// The inverse: false unless `hex` is exactly 2n hex digits (either case); `out` gets n bytes.
bool hex_bytes(const std::string& hex, void* out, size_t n);
// A fingerprint, spelled as hex64 (docs/fingerprint.md).
inline std::string fp_hex(uint64_t fp) { return hex64(fp); }

}  // namespace scout::shm
