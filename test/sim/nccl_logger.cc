#include "test/sim/nccl_logger.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "scout/nccl_profiler_abi.h"

namespace scout::sim {
namespace {

struct Settings {
  int level = abi::kLogNone;
  unsigned long subsys = 0;
  std::string host;
  int cuda_dev = 0;
};

std::mutex g_mu;
Settings* g_settings = nullptr;

Settings& settings() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_settings) {
    g_settings = new Settings();  // lives for the process (the logger may run at exit)
    const char* lvl = std::getenv("NCCL_DEBUG");
    if (lvl) {
      if (!strcasecmp(lvl, "VERSION"))
        g_settings->level = abi::kLogVersion;
      else if (!strcasecmp(lvl, "WARN"))
        g_settings->level = abi::kLogWarn;
      else if (!strcasecmp(lvl, "INFO"))
        g_settings->level = abi::kLogInfo;
      else if (!strcasecmp(lvl, "ABORT"))
        g_settings->level = abi::kLogAbort;
      else if (!strcasecmp(lvl, "TRACE"))
        g_settings->level = abi::kLogTrace;
    }
    g_settings->subsys = parse_debug_subsys(std::getenv("NCCL_DEBUG_SUBSYS"));
    char h[256] = {0};
    ::gethostname(h, sizeof(h) - 1);
    g_settings->host = h;
  }
  return *g_settings;
}

}  // namespace

unsigned long parse_debug_subsys(const char* value) {
  static const struct {
    const char* name;
    unsigned long flag;
  } kSubsys[] = {{"INIT", 0x1},    {"COLL", 0x2},    {"P2P", 0x4},          {"SHM", 0x8},     {"NET", 0x10},
                 {"GRAPH", 0x20},  {"TUNING", 0x40}, {"ENV", 0x80},         {"ALLOC", 0x100}, {"CALL", 0x200},
                 {"PROXY", 0x400}, {"NVLS", 0x800},  {"BOOTSTRAP", 0x1000}, {"REG", 0x2000},  {"PROFILE", 0x4000},
                 {"RAS", 0x8000},  {"ALL", ~0ul}};
  if (!value || !*value) return 0x1 | 0x1000 | 0x80;  // INIT, BOOTSTRAP, ENV
  bool invert = value[0] == '^';
  unsigned long mask = 0;
  std::stringstream ss(value + (invert ? 1 : 0));
  std::string tok;
  while (std::getline(ss, tok, ','))
    for (const auto& s : kSubsys)
      if (!strcasecmp(tok.c_str(), s.name)) mask |= s.flag;
  return invert ? ~mask : mask;
}

void set_log_identity(const std::string& host, int cuda_dev) {
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(g_mu);
  s.host = host;
  s.cuda_dev = cuda_dev;
}

void nccl_debug_log(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  Settings& s = settings();
  if (level > s.level || level <= abi::kLogNone) return;
  if (level == abi::kLogInfo && (flags & s.subsys) == 0) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt ? fmt : "", ap);
  va_end(ap);
  long tid = ::syscall(SYS_gettid);
  char out[1400];
  int n;
  if (level == abi::kLogWarn)
    n = std::snprintf(out, sizeof(out), "%s:%d:%ld [%d] %s:%d NCCL WARN %s\n", s.host.c_str(), int(::getpid()), tid,
                      s.cuda_dev, file ? file : "?", line, msg);
  else
    n = std::snprintf(out, sizeof(out), "%s:%d:%ld [%d] NCCL INFO %s\n", s.host.c_str(), int(::getpid()), tid,
                      s.cuda_dev, msg);
  if (n > 0) {
    ssize_t w = ::write(2, out, std::min<size_t>(size_t(n), sizeof(out) - 1));
    (void)w;
  }
}

}  // namespace scout::sim
