// The observer network's settings from the SCOUT_NET_* registry entries (include/scout/
// config_vars.def; docs/configuration.md). The registry holds the defaults; the structs'
// member defaults equal them (test/net/net_config_test.cc checks it).
#pragma once

#include <cstdint>

#include "observer/net/digest.h"
#include "observer/net/gloo_channel.h"
#include "scout/config.h"

namespace scout::net {

// Digest settings; `hang_timeout_ns` (the observer's --hang-timeout) is the stall time.
DigestConfig digest_config(const config::Config& c, int64_t hang_timeout_ns);

// Sets the timeouts, address and interface of `o` (rendezvous, job and ranks are the caller's).
void apply_config(const config::Config& c, GlooOptions* o);

}  // namespace scout::net
