// The network settings come from the SCOUT_NET_* registry, and the structs' defaults match it.
#include <gtest/gtest.h>

#include <map>

#include "observer/net/net_config.h"

namespace scout::net {
namespace {

TEST(NetConfig, StructDefaultsEqualTheRegistryDefaults) {
  const config::Config c = config::defaults();
  const DigestConfig d = digest_config(c, DigestConfig{}.stall_ns);
  const DigestConfig s;
  EXPECT_EQ(d.stream_slots, s.stream_slots);
  EXPECT_EQ(d.timing_slots, s.timing_slots);
  EXPECT_EQ(d.timing_ops, s.timing_ops);
  EXPECT_EQ(d.max_range_ops, s.max_range_ops);
  EXPECT_EQ(d.drill_repeat_rounds, s.drill_repeat_rounds);
  GlooOptions g, defaults;
  apply_config(c, &g);
  EXPECT_EQ(g.timeout, defaults.timeout);
  EXPECT_EQ(g.join_timeout, defaults.join_timeout);
  EXPECT_EQ(g.hostname, "");
  EXPECT_EQ(g.iface, "");
}

TEST(NetConfig, EnvironmentValuesReachTheStructs) {
  std::map<std::string, std::string> env = {{"SCOUT_NET_STREAM_SLOTS", "64"},
                                            {"SCOUT_NET_TIMEOUT_MS", "2500"},
                                            {"SCOUT_NET_IFACE", "eth1"},
                                            {"SCOUT_NET_DRILL_REPEAT", "3"}};
  const config::Config c = config::load([&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  const DigestConfig d = digest_config(c, 7000000000);
  EXPECT_EQ(d.stream_slots, 64);
  EXPECT_EQ(d.drill_repeat_rounds, 3);
  EXPECT_EQ(d.stall_ns, 7000000000);
  EXPECT_EQ(d.words(), 6u + 10 * 64 + 6 * 128);
  GlooOptions g;
  apply_config(c, &g);
  EXPECT_EQ(g.timeout.count(), 2500);
  EXPECT_EQ(g.iface, "eth1");
}

}  // namespace
}  // namespace scout::net
