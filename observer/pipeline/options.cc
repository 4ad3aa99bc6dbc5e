#include "observer/pipeline/options.h"

#include <cmath>

namespace scout::obs {

bool options_from_config(const config::Config& cfg, ObserverOptions* out, std::string* error) {
  ObserverOptions& o = *out;
  o.job = cfg.job_id;
  o.host = cfg.host;
  o.shm_dir = cfg.shm_dir;
  o.interval_ns = cfg.observer_interval_ms * 1'000'000;
  o.reclaim_after_ns = cfg.observer_reclaim_s < 0 ? -1 : cfg.observer_reclaim_s * 1'000'000'000;
  o.judge.settle_timeout_ns = int64_t(std::llround(cfg.observer_fp_timeout_s * 1e9));
  o.hang.timeout_ns = int64_t(std::llround(cfg.observer_hang_timeout_s * 1e9));
  o.hang.crash_grace_ns = cfg.observer_crash_grace_ms * 1'000'000;
  o.straggler.window = int(cfg.observer_straggler_window);
  o.straggler.min_ns = int64_t(std::llround(cfg.observer_straggler_min_ms * 1e6));
  o.straggler.rel = cfg.observer_straggler_rel;
  o.straggler.persist = cfg.observer_straggler_persist;
  o.straggler.min_late = int(cfg.observer_straggler_min_late);
  o.straggler.noise_k = cfg.observer_straggler_noise_k;
  o.straggler.z = cfg.observer_straggler_z;
  o.slowlink.window = int(cfg.observer_slow_window);
  o.slowlink.min_samples = std::max(2, o.slowlink.window / 4);
  o.slowlink.confirm = std::max(1, o.slowlink.window / 2);
  o.slowlink.factor = cfg.observer_slow_factor;
  o.slowlink.min_ns = int64_t(std::llround(cfg.observer_slow_min_ms * 1e6));
  o.slowlink.noise_k = cfg.observer_slow_noise_k;
  o.netlink.factor = cfg.observer_net_factor;
  o.netlink.min_ns = int64_t(std::llround(cfg.observer_net_min_us * 1e3));
  o.netlink.min_transfers = uint64_t(cfg.observer_net_min_transfers);
  o.netlink.window_ns = int64_t(std::llround(cfg.observer_net_window_s * 1e9));
  o.netlink.confirm = int(cfg.observer_net_confirm);
  if (!cfg.equiv.empty() && !parse_equiv(cfg.equiv, ';', &o.equiv, error)) {
    if (error) *error = "SCOUT_EQUIV: " + *error;
    return false;
  }
  return true;
}

}  // namespace scout::obs
