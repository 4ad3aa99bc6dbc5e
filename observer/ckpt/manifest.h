// What a checkpoint held when it was certified, so that a restart can check it still holds it
// (docs/certification.md, "Certificates" and "Restarting from a verified checkpoint"): every
// regular file and symlink under the checkpoint directory with its size and modification time,
// and the SHA-256 of the small ones (markers and metadata: at most kHashMaxBytes each). Taken when
// the watcher reports the checkpoint complete, kept in the store and written into its certificate;
// `scout ckpt latest` compares the directory against it at query time.
// The walk never follows a symlink and never opens anything but a regular file (O_NONBLOCK,
// O_NOFOLLOW, common/safe_file.h); it stops after kMaxFiles entries or depth kMaxDepth (recorded
// as `truncated`: the rest is then not checked).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::ckpt {

constexpr uint64_t kHashMaxBytes = 1u << 20;
constexpr size_t kMaxFiles = 65536;
constexpr int kMaxDepth = 8;

struct ManifestFile {
  std::string path;      // relative to the checkpoint directory
  bool link = false;     // a symlink (size and time are the link's own, lstat)
  uint64_t size = 0;     // bytes
  int64_t mtime_ns = 0;  // wall ns
  std::string sha256;    // hex, for regular files of at most kHashMaxBytes; "" otherwise
};

struct Manifest {
  bool present = false;    // false: none recorded (a store or certificate from before manifests)
  bool truncated = false;  // the walk stopped at kMaxFiles or kMaxDepth
  std::vector<ManifestFile> files;  // sorted by path
  uint64_t bytes = 0;               // total size of the regular files
};

// Walks the checkpoint directory `dir` now. A directory that cannot be read gives an empty
// manifest (present, no files); `exclude` names a file at its top level left out (the
// certificate scout writes beside the checkpoint).
Manifest take_manifest(const std::string& dir, const std::string& exclude = "scout-certificate.json");

// {"count", "bytes", "truncated", "files": [[path, size, mtime_ns, sha256, link], ...]}; paths are
// made valid UTF-8 (common/utf8.h) so the document always encodes.
nlohmann::json to_json(const Manifest& m);
// The inverse; a missing or malformed document gives a Manifest with present = false.
Manifest manifest_from_json(const nlohmann::json& j);

// Compares directory `dir` now against `recorded`. Returns "" when every recorded file is still
// there with the same kind, size, modification time and (where recorded) SHA-256, and no file was
// added; else the first difference in words, e.g. "the directory is missing",
// "model/shard_3.pt changed size (1048576 -> 0 bytes)". Names are printed escaped.
std::string compare_manifest(const std::string& dir, const Manifest& recorded,
                             const std::string& exclude = "scout-certificate.json");

}  // namespace scout::ckpt
