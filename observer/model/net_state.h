// The observer network's state (NetState, job.h) as JSON: the store keeps it in its meta table
// under "network" (docs/store.md, "meta"), `scout status --json` shows it as job.network.
#pragma once

#include <nlohmann/json.hpp>

#include "observer/model/job.h"

namespace scout::obs {

// {"connected", "peers", "epoch", "rounds", "formed", "reforms", "failures", "since_ns",
//  "last_round_ns", "rendezvous", "last_error"}: NetState's fields, times in CLOCK_REALTIME ns, and
// reforms = formed - 1 (0 before the first channel) for readers.
nlohmann::json to_json(const NetState& n);
// Inverse; fields that are missing or of the wrong type keep their defaults. `present` is true
// for any JSON object.
NetState net_state_from_json(const nlohmann::json& j);

}  // namespace scout::obs
