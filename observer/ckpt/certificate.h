// Certificates: one JSON document per verdict (docs/certification.md, "Certificates"), chained
// by SHA-256 so that an edited or removed certificate is detected. Each certificate carries
//   "prev_sha256": the sha256 of the previous certificate of the job ("" for the first),
//   "sha256":      the SHA-256 (hex) of the document's canonical form without the "sha256" key
//                  (nlohmann::json dump(), keys sorted, no spaces).
// Files are <dir>/<seq, 6 digits>.json, written atomically (temporary file, fsync, rename,
// directory fsync).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "observer/ckpt/cycle.h"
#include "observer/ckpt/states.h"

namespace scout::ckpt {

constexpr int kCertificateVersion = 1;

// The certificate of checkpoint `c`'s verdict (state verified or rejected), made of the cycles
// it used (`cycles`, in order). `seq` counts certificates of the job from 1; `prev_sha256` is the
// previous certificate's hash. Returns the document with its "sha256" set.
nlohmann::json make_certificate(const std::string& job, int64_t seq, const Checkpoint& c,
                                const std::vector<CycleVerdict>& cycles, const std::string& prev_sha256,
                                int64_t issued_ns);

// SHA-256 (lower-case hex) of `doc` without its "sha256" key, canonical dump.
std::string certificate_hash(const nlohmann::json& doc);

// "<dir>/000042.json".
std::string certificate_file(const std::string& dir, int64_t seq);

// Writes `text` to `path` atomically (path.tmp, fsync, rename, fsync of the directory, which is
// created with mode 0700 when missing). False with *error on failure.
bool write_atomic(const std::string& path, const std::string& text, std::string* error);

// One link of the chain as checked by verify_chain.
struct ChainCheck {
  bool intact = true;
  int64_t certificates = 0;  // files checked
  int64_t broken_seq = 0;    // first certificate that breaks the chain (0 when intact)
  std::string problem;       // in words, for the first break
};

// Checks every certificate file in `dir` in seq order: each parses, its sha256 matches its
// content, its prev_sha256 matches the previous one's sha256, seqs have no gap, and, when
// `expected` is not empty, its sha256 equals expected[seq-1] (the hashes the store recorded).
ChainCheck verify_chain(const std::string& dir, const std::vector<std::string>& expected);

}  // namespace scout::ckpt
