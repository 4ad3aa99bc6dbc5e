#include "observer/store/health.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/safe_file.h"
#include "common/utf8.h"

namespace scout::store {

std::string health_path(const std::string& store_path) { return store_path + "-health"; }

HealthFile::HealthFile(const std::string& store_path) {
  const std::string p = health_path(store_path);
  fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd_ < 0) return;
  struct stat st;
  // Only a regular file of ours (not a FIFO or device planted there), with its bytes allocated.
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      ::posix_fallocate(fd_, 0, kHealthFileBytes) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

HealthFile::~HealthFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool HealthFile::write(const obs::StoreHealth& h) {
  if (fd_ < 0) return false;
  nlohmann::json j = {{"failed_batches", h.failed_batches},
                      {"unstored_findings", h.unstored_findings},
                      {"ops_unstored", h.ops_unstored},
                      {"failing_since_ns", h.failing_since_ns},
                      {"last_error", utf8_clean(h.last_error.substr(0, 1024))},
                      {"updated_ns", h.updated_ns},
                      {"pid", int64_t(::getpid())}};
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() >= kHealthFileBytes) return false;
  text.resize(kHealthFileBytes - 1, ' ');
  text += '\n';
  return ::pwrite(fd_, text.data(), text.size(), 0) == ssize_t(text.size());
}

std::optional<obs::StoreHealth> read_health(const std::string& store_path) {
  std::string text, err;
  if (!safe::read_regular(health_path(store_path), 2 * kHealthFileBytes, &text, &err)) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto u64 = [&](const char* k) { return j.contains(k) && j[k].is_number_unsigned() ? j[k].get<uint64_t>() : 0; };
  auto i64 = [&](const char* k) { return j.contains(k) && j[k].is_number_integer() ? j[k].get<int64_t>() : 0; };
  obs::StoreHealth h;
  h.failed_batches = u64("failed_batches");
  h.unstored_findings = u64("unstored_findings");
  h.ops_unstored = u64("ops_unstored");
  h.failing_since_ns = i64("failing_since_ns");
  h.updated_ns = i64("updated_ns");
  if (j.contains("last_error") && j["last_error"].is_string()) h.last_error = j["last_error"].get<std::string>();
  return h;
}

}  // namespace scout::store
