// NCCL-logger based messages, each problem once (log.h).
#include "plugin/core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace scout::core::log {
namespace {

std::atomic<abi::Logger> g_logger{nullptr};
std::atomic<bool> g_once[static_cast<int>(Problem::kCount)];

constexpr unsigned long kSubsysNet = 0x10;  // NCCL_DEBUG_SUBSYS=NET (docs/nccl-notes.md §2.1)

void emit_to(int level, unsigned long subsys, const char* prefix, const char* fmt, va_list ap) {
  abi::Logger l = g_logger.load(std::memory_order_acquire);
  if (l == nullptr) return;
  char buf[768];
  int n = std::snprintf(buf, sizeof(buf), "%s", prefix);
  std::vsnprintf(buf + n, sizeof(buf) - size_t(n), fmt, ap);
  l(level, subsys, "scout", __LINE__, "%s", buf);
}

void emit(int level, const char* fmt, va_list ap) { emit_to(level, abi::kSubsysProfile, "scout: ", fmt, ap); }
void emit_net(int level, const char* fmt, va_list ap) { emit_to(level, kSubsysNet, "scout net: ", fmt, ap); }

}  // namespace

void set_logger(abi::Logger logger) {
  if (logger != nullptr) g_logger.store(logger, std::memory_order_release);
}

abi::Logger logger() { return g_logger.load(std::memory_order_acquire); }

void reset_once() {
  for (auto& f : g_once) f.store(false, std::memory_order_relaxed);
}

bool first_time(Problem p) {
  auto& f = g_once[static_cast<int>(p)];
  if (f.load(std::memory_order_relaxed)) return false;
  return !f.exchange(true, std::memory_order_relaxed);
}

void warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(abi::kLogWarn, fmt, ap);
  va_end(ap);
}

void info(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(abi::kLogInfo, fmt, ap);
  va_end(ap);
}

void net_warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_net(abi::kLogWarn, fmt, ap);
  va_end(ap);
}

void net_info(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_net(abi::kLogInfo, fmt, ap);
  va_end(ap);
}

void net_warn_once(Problem p, const char* fmt, ...) {
  if (!first_time(p)) return;
  va_list ap;
  va_start(ap, fmt);
  emit_net(abi::kLogWarn, fmt, ap);
  va_end(ap);
}

void warn_once(Problem p, const char* fmt, ...) {
  if (!first_time(p)) return;
  va_list ap;
  va_start(ap, fmt);
  emit(abi::kLogWarn, fmt, ap);
  va_end(ap);
}

void info_once(Problem p, const char* fmt, ...) {
  if (!first_time(p)) return;
  va_list ap;
  va_start(ap, fmt);
  emit(abi::kLogInfo, fmt, ap);
  va_end(ap);
}

}  // namespace scout::core::log
