// SHA-256 as the certification spells it: 64 lowercase hex digits (docs/certification.md,
// "Certificates": a certificate's own hash and the manifest's small-file hashes).
#pragma once

#include <string>
#include <string_view>

namespace scout::ckpt {

// SHA-256 of `data` (OpenSSL's EVP digest) as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace scout::ckpt
