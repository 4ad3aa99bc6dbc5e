// How scout spells 64-bit values in findings, evidence, replay records and the CLI: "0x" and 16
// lowercase hex digits (docs/findings.md, "Shared shapes inside evidence"): fingerprints and
// commHashes alike.
#pragma once

#include <cstdint>
#include <string>

namespace scout::shm {

// "0x00000000000000ab".
std::string hex64(uint64_t v);
// A fingerprint, spelled as hex64 (docs/fingerprint.md).
inline std::string fp_hex(uint64_t fp) { return hex64(fp); }

}  // namespace scout::shm
