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

// 2: the checkpoint's files ("files", observer/ckpt/manifest.h) are part of the certificate.
constexpr int kCertificateVersion = 2;

// The certificate of checkpoint `c`'s verdict (state verified or rejected), made of the cycles
// it used (`cycles`, in order). `seq` counts certificates of the job from 1; `prev_sha256` is the
// previous certificate's hash. Returns the document with its "sha256" set.
nlohmann::json make_certificate(const std::string& job, int64_t seq, const Checkpoint& c,
                                const std::vector<CycleVerdict>& cycles, const std::string& prev_sha256,
                                int64_t issued_ns);

// SHA-256 (lower-case hex) of `doc` without its "sha256" key, canonical dump (bytes that are
// not UTF-8 replaced, so no document can make it throw).
std::string certificate_hash(const nlohmann::json& doc);

// `doc` as text for a file: indented, invalid UTF-8 replaced by U+FFFD (never throws).
std::string certificate_text(const nlohmann::json& doc);

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
// Each file is read with O_NONBLOCK|O_NOFOLLOW and at most kMaxCertificateBytes.
ChainCheck verify_chain(const std::string& dir, const std::vector<std::string>& expected);

// Largest certificate read back (the files list of a checkpoint of kMaxFiles files fits).
constexpr size_t kMaxCertificateBytes = 64u << 20;

// Reads the certificate file `path` (a regular file of at most kMaxCertificateBytes, not a
// symlink); a discarded json value with *error when it cannot or does not parse.
nlohmann::json read_certificate(const std::string& path, std::string* error);

// Checks certificate `doc` issued for checkpoint `c` as `latest` trusts it: its own sha256 matches
// its content and equals `chain_sha256` (what the intact chain recorded for it), it names c's
// path and verdict, and, when c's directory holds scout-certificate.json, that copy is the same
// document. Returns "" when it holds; else the reason in words.
std::string check_certificate_of(const Checkpoint& c, const nlohmann::json& doc, const std::string& chain_sha256);

}  // namespace scout::ckpt
