// `scout hash FILE`: the fingerprint of a file's bytes (docs/fingerprint.md), as 16 lowercase
// hex digits — the value a rank would report for a buffer holding the same bytes.
#include "observer/cli/common.h"
#include "scout/fingerprint.h"

namespace scout::cli {

int cmd_hash(const std::string& path, std::ostream& out) {
  std::string error;
  std::string hex = fp::hash_file(path, &error);
  if (hex.empty()) throw UsageError(error.empty() ? "cannot hash " + path : error);
  out << hex << "\n";
  return kExitOk;
}

}  // namespace scout::cli
