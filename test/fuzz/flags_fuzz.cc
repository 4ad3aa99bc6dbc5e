// libFuzzer target: scout-observer's command line and the value parsers behind every SCOUT_*
// variable and numeric flag. The input is split at newlines into argv. Whatever it holds,
// parse_command_line must return kOk with a finite, in-range hang timeout, kHelp, or kError with
// one line; the value parsers must accept only finite numbers; encode_component must give a
// name of [A-Za-z0-9_-] of at most kMaxComponentChars; utf8_clean must give valid UTF-8.
// `make fuzz` runs it.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/paths.h"
#include "common/utf8.h"
#include "observer/pipeline/command_line.h"
#include "scout/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace scout;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args = {"scout-observer"};
  size_t i = 0;
  while (i <= text.size() && args.size() < 32) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    std::string a = text.substr(i, j - i);
    // --equiv names a file to read: never let the fuzzer open /dev/zero or a FIFO through it.
    if (a.find("--equ") != std::string::npos || a.find("-e") == 0) a = "--quiet";
    args.push_back(a);
    i = j + 1;
  }
  for (const std::string& a : args) {
    double d = 0;
    if (config::parse_double(a, -1e300, 1e300, &d, nullptr) && !std::isfinite(d)) std::abort();
    int64_t v = 0;
    if (config::parse_int(a, -1e18, 1e18, &v, nullptr) && (v < -1000000000000000000 || v > 1000000000000000000))
      std::abort();
    uint64_t b = 0;
    (void)config::parse_size(a, 0, 1e18, &b, nullptr);
    bool f = false;
    (void)config::parse_bool(a, &f, nullptr);
    std::string enc = shm::encode_component(a);
    if (enc.empty() || enc.size() > shm::kMaxComponentChars) std::abort();
    for (char c : enc) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      if (!ok) std::abort();
    }
    if (!utf8_valid(utf8_clean(a))) std::abort();
    size_t cut = utf8_prefix_len(a, 63);
    if (cut > 63 || (utf8_valid(a) && !utf8_valid(std::string_view(a).substr(0, cut)))) std::abort();
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  obs::CommandLine cl;
  std::string msg;
  static const config::Config cfg = config::defaults();
  auto no_env = [](const char*) -> const char* { return nullptr; };
  obs::ParseResult r = obs::parse_command_line(int(argv.size()), argv.data(), cfg, &cl, &msg, no_env, "fuzzhost");
  if (r == obs::ParseResult::kOk) {
    if (cl.opt.hang.timeout_ns < 100'000'000 || cl.opt.hang.timeout_ns > 86400'000'000'000) std::abort();
    if (cl.store.empty() || cl.opt.job.empty()) std::abort();
  } else if (r == obs::ParseResult::kError) {
    if (msg.empty() || msg.find('\n') != std::string::npos) std::abort();
  }
  return 0;
}
