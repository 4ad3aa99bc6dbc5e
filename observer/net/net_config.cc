#include "observer/net/net_config.h"

namespace scout::net {

DigestConfig digest_config(const config::Config& c, int64_t hang_timeout_ns) {
  DigestConfig d;
  d.stream_slots = static_cast<int>(c.net_stream_slots);
  d.timing_slots = static_cast<int>(c.net_timing_slots);
  d.timing_ops = static_cast<int>(c.net_timing_ops);
  d.max_range_ops = static_cast<uint64_t>(c.net_max_range_ops);
  d.drill_repeat_rounds = static_cast<int>(c.net_drill_repeat);
  d.stall_ns = hang_timeout_ns;
  return d;
}

void apply_config(const config::Config& c, GlooOptions* o) {
  o->timeout = std::chrono::milliseconds(c.net_timeout_ms);
  o->join_timeout = std::chrono::milliseconds(c.net_join_timeout_ms);
  o->hostname = c.net_host;
  o->iface = c.net_iface;
}

}  // namespace scout::net
