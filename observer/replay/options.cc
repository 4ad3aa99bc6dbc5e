#include "observer/replay/options.h"

#include <limits.h>
#include <unistd.h>

#include <cmath>

#include "observer/replay/request.h"
#include "replay/recipe.h"

namespace scout::obs {

bool replay_options(const config::Config& cfg, const CommandLine& cl, ReplayOptions* out, std::string* error) {
  ReplayOptions o;
  o.enabled = cfg.replay;
  o.budget = cfg.replay_budget;
  o.max_mem = int64_t(cfg.replay_max_mem);
  o.gemms = cfg.replay_gemms;
  o.deadline_ns = int64_t(std::llround(cfg.replay_deadline_s * 1e9));
  if (!cfg.replay_gemms.empty()) {
    std::vector<replay::GemmShape> shapes;
    if (!replay::parse_gemms(cfg.replay_gemms, &shapes, error)) return false;
  }
  o.request_prefix = replay_request_prefix(cl.store);  // `scout replay run` (docs/replay.md, "On demand")
  o.nodes = cl.opt.nodes;
  if (cl.opt.nodes > 1) o.rdzv = cl.rdzv;  // links across nodes (docs/replay.md, "Across nodes")
  *out = std::move(o);
  return true;
}

std::string default_replay_program() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "scout-replay";
  std::string exe(buf, size_t(n));
  return exe.substr(0, exe.rfind('/') + 1) + "scout-replay";
}

}  // namespace scout::obs
