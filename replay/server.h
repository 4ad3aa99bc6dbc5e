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
//   {"op":"coll_id","cycle":N,"recipe":"coll:..."}
//       -> {"op":"coll_id","cycle":N,"recipe":...,"uid":"<256 hex digits>"}   (lowest member's node)
//   {"op":"coll_end","cycle":N,"recipe":"coll:...","members":[{Participant}...],"uid":"...",
//    "deadline_ms":D} -> {"op":"result","cycle":N,"samples":[...]}
//       this node's members of a collective whose other members are on other nodes
//       (Backend::run_coll_end): `members` every member in the recipe's order (the other nodes'
//       GPUs too); the members that are participants of the prepared cycle run, one sample each
//       per round
//   {"op":"quit"} -> {"op":"bye"}
// A request that does not parse, or a run for another cycle than the prepared one, gets
// {"op":"error","error":"..."}; nothing is launched for it.
//
// Every request is checked against a schema before anything runs (ServerLimits): each value of
// its type and range (cycle a non-negative integer, role "send" or "recv", uid 256 hex digits,
// ranks 0..2^24, cuda_dev -1..1023), every recipe by check_recipe (GEMM dimensions up to 65,536,
// bytes up to SCOUT_REPLAY_MAX_MEM, in 128-bit arithmetic), at most kMaxParticipants participants
// and kMaxRecipes recipes, at most kMaxSamples samples in one answer (rounds x GPUs per recipe,
// summed), deadlines clamped to 0..kMaxDeadlineMs. The answer to anything else is one error line;
// no input makes the server throw or abort. Lines are capped by the program (scout-replay.cc).
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

constexpr size_t kMaxParticipants = 1024;
constexpr size_t kMaxRecipes = 4096;
constexpr uint64_t kMaxSamples = 16384;
constexpr int64_t kMaxDeadlineMs = 600'000;
constexpr size_t kMaxLineBytes = size_t(1) << 20;  // one request line (scout-replay.cc)

class ReplayServer {
 public:
  // `max_bytes`: the most device bytes one recipe may need (SCOUT_REPLAY_MAX_MEM).
  explicit ReplayServer(Backend* backend, uint64_t max_bytes = uint64_t(2) << 30)
      : backend_(backend), max_bytes_(max_bytes) {}
  // One request line -> one answer line (no newline). *quit becomes true on "quit".
  std::string handle(const std::string& line, bool* quit);

 private:
  std::string handle_request(const std::string& line, bool* quit);
  std::string handle_prepare(const nlohmann::json& req);
  std::string handle_run(const nlohmann::json& req);
  std::string handle_link(const nlohmann::json& req);  // link_id, link_end
  std::string handle_coll(const nlohmann::json& req);  // coll_id, coll_end
  Backend* backend_;
  uint64_t max_bytes_;
  bool prepared_ = false;
  Contract contract_;
  std::vector<Participant> participants_;
  std::vector<Recipe> recipes_;
};

}  // namespace scout::replay
