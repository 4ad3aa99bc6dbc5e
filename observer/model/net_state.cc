#include "observer/model/net_state.h"

#include <string>
#include <type_traits>

namespace scout::obs {

nlohmann::json to_json(const NetState& n) {
  return {{"connected", n.connected},   {"peers", n.peers},          {"epoch", n.epoch},
          {"rounds", n.rounds},         {"formed", n.formed},        {"reforms", n.formed > 0 ? n.formed - 1 : 0},
          {"failures", n.failures},     {"since_ns", n.since_ns},    {"last_round_ns", n.last_round_ns},
          {"rendezvous", n.rendezvous}, {"last_error", n.last_error}};
}

NetState net_state_from_json(const nlohmann::json& j) {
  NetState n;
  if (!j.is_object()) return n;
  n.present = true;
  auto get = [&](const char* key, auto* out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    using T = std::remove_pointer_t<decltype(out)>;
    if constexpr (std::is_same_v<T, bool>) {
      if (it->is_boolean()) *out = it->get<bool>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (it->is_string()) *out = it->get<std::string>();
    } else if constexpr (std::is_unsigned_v<T>) {
      if (it->is_number_unsigned()) *out = it->get<T>();
    } else {
      if (it->is_number_integer()) *out = it->get<T>();
    }
  };
  get("connected", &n.connected);
  get("peers", &n.peers);
  get("epoch", &n.epoch);
  get("rounds", &n.rounds);
  get("formed", &n.formed);
  get("failures", &n.failures);
  get("since_ns", &n.since_ns);
  get("last_round_ns", &n.last_round_ns);
  get("rendezvous", &n.rendezvous);
  get("last_error", &n.last_error);
  return n;
}

}  // namespace scout::obs
