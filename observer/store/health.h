// The health file beside a store, `<store>-health` (docs/store.md, "When writes fail"): a small
// JSON document (obs::StoreHealth) the writer keeps current while its store cannot be written (a
// full disk, a lock held by another process, a read-only file system), so `scout status` and
// `scout export --format prometheus` can say so while the store itself is stale.
// Its 4 KiB are allocated when the writer opens (posix_fallocate) and rewritten in place
// (pwrite), so writing it needs no new block on a full disk (tmpfs, ext4, xfs).
#pragma once

#include <optional>
#include <string>

#include "observer/model/job.h"

namespace scout::store {

constexpr size_t kHealthFileBytes = 4096;

// "<store_path>-health".
std::string health_path(const std::string& store_path);

class HealthFile {
 public:
  // Creates or opens the file for `store_path` and allocates its bytes; a file that cannot be
  // (a full disk already) leaves the writer without one: write() then does nothing.
  explicit HealthFile(const std::string& store_path);
  ~HealthFile();
  HealthFile(const HealthFile&) = delete;
  HealthFile& operator=(const HealthFile&) = delete;
  // Rewrites the document in place; false when there is no file or the write failed.
  bool write(const obs::StoreHealth& h);
  bool present() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// The health file of `store_path` (a regular file of at most kHealthFileBytes, read without
// blocking); nullopt when there is none or it does not parse.
std::optional<obs::StoreHealth> read_health(const std::string& store_path);

}  // namespace scout::store
