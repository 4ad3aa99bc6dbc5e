// The scout-replay side of the protocol with its observer (docs/replay.md, "Processes"): one JSON
// object per line on stdin, one answer per line on stdout, one request at a time.
//   {"op":"prepare","contract":{...},"participants":[{global_rank,gpu,cuda_dev}],"recipes":[...]}
//       -> {"op":"ready","cycle":N,"answers":[{"gpu":{GpuInfo},"digest":"0x..."}]}
//   {"op":"run","cycle":N,"admitted":["recipe id",...],"deadline_ms":D}
//       -> {"op":"result","cycle":N,"samples":[{Sample}...]}
//   {"op":"link_id","cycle":N,"recipe":"link:A->B","role":"send"}
//       -> {"op":"link_id","cycle":N,"recipe":...,"uid":"<256 hex digits>"}   (sender's node)
//   {"op":"link_end","cycle":N,"recipe":"link:A->B","role":"send"|"recv","peer":{Participant},
//    "uid":"...","deadline_ms":D} -> {"op":"result","cycle":N,"samples":[...]}
//       one end of a link whose other end is on another node (Backend::run_link_end); the
//       recipe and this end's rank must be of the prepared cycle
//   {"op":"quit"} -> {"op":"bye"}
// A request that does not parse, or a run for another cycle than the prepared one, gets
// {"op":"error","error":"..."}; nothing is launched for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replay/backend.h"
#include "replay/contract.h"
#include "replay/recipe.h"

namespace scout::replay {

nlohmann::json to_json(const Participant& p);
bool from_json(const nlohmann::json& j, Participant* out, std::string* error);

// Runs the admitted recipes, round by round: GEMMs on every participant, links one directed pair
// at a time, collectives over their members. A recipe not started by `deadline_ns`
// (CLOCK_MONOTONIC) gets "skipped" samples with reason "deadline"; a member that is not a
// participant makes its recipe's samples "skipped".
std::vector<Sample> run_recipes(Backend& backend, const std::vector<Participant>& participants,
                                const std::vector<Recipe>& recipes, const std::vector<std::string>& admitted,
                                int64_t deadline_ns);

class ReplayServer {
 public:
  explicit ReplayServer(Backend* backend) : backend_(backend) {}
  // One request line -> one answer line (no newline). *quit becomes true on "quit".
  std::string handle(const std::string& line, bool* quit);

 private:
  std::string handle_link(const nlohmann::json& req);  // link_id, link_end
  Backend* backend_;
  bool prepared_ = false;
  Contract contract_;
  std::vector<Participant> participants_;
  std::vector<Recipe> recipes_;
};

}  // namespace scout::replay
