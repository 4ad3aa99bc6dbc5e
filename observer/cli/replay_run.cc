// `scout replay run`: asks the observer of a running job for one replay cycle now and prints it
// (docs/cli.md "scout replay run", docs/replay.md "On demand"). The request travels as a file
// beside the observer's store (observer/replay/request.h); the answer is the cycle the
// observer stores with that request's id.
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "common/clock.h"
#include "observer/cli/common.h"
#include "observer/replay/request.h"
#include "observer/store/sqlite.h"

namespace scout::cli {
namespace {

// "0-3,5" -> {0,1,2,3,5}. Throws UsageError naming the bad part.
std::vector<int> parse_rank_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int a = -1, b = -1;
    char dash = 0;
    std::istringstream ps(part);
    bool ok = bool(ps >> a) && a >= 0;
    if (ok && ps >> dash) ok = dash == '-' && bool(ps >> b) && b >= a && b - a < 65536;
    else b = a;
    ok = ok && ps.eof();
    if (!ok || part.empty() || !std::isdigit((unsigned char)part[0]))
      throw UsageError("--ranks: '" + part + "' is not a global rank or a range A-B with A <= B");
    for (int r = a; r <= b; ++r) out.push_back(r);
  }
  if (out.empty()) throw UsageError("--ranks: no rank given");
  return out;
}

std::vector<std::string> parse_kinds(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string k;
  while (std::getline(ss, k, ',')) {
    if (k != "gemm" && k != "coll" && k != "link")
      throw UsageError("--recipes: '" + k + "' is not one of gemm, coll, link");
    out.push_back(k);
  }
  if (out.empty()) throw UsageError("--recipes: no recipe kind given");
  return out;
}

// The stored cycle answering request `id`, if it is in the store yet. The reader is opened once
// and only refreshed at each poll (a new snapshot), so waiting costs next to no CPU: no reopening,
// no integrity check per poll.
std::optional<obs::ReplayCycleRecord> answered(const std::string& store, const std::string& id,
                                               std::unique_ptr<store::StoreReader>* rd) {
  try {
    if (*rd) {
      (*rd)->refresh();
    } else {
      *rd = store::StoreReader::open(store);
    }
    for (obs::ReplayCycleRecord& c : (*rd)->replay_cycles())
      if (c.detail.is_object() && c.detail.contains("request") && c.detail["request"] == id) return std::move(c);
  } catch (const store::Error&) {
    rd->reset();  // written right now, or not there yet: asked again at the next poll
  }
  return std::nullopt;
}

}  // namespace

int cmd_replay_run(const StoreOptions& where, const ReplayRunOptions& o, std::ostream& out) {
  obs::ReplayRequest rq;
  if (!o.ranks.empty()) rq.ranks = parse_rank_list(o.ranks);
  if (!o.recipes.empty()) rq.recipes = parse_kinds(o.recipes);
  const std::string store = store_path(where);
  if (::access(store.c_str(), F_OK) != 0)
    throw UsageError("no store at " + store + " (is scout-observer running for this job on this node?)");
  open_store(where);  // a scout store (schema checked), or a UsageError: no request beside anything else
  rq.id = fmt::format("{}-{}", ::getpid(), shm::wall_ns());
  const std::string prefix = obs::replay_request_prefix(store);
  std::string err;
  if (!obs::write_replay_request(prefix, rq, &err)) throw UsageError(err);
  const int64_t deadline = shm::wall_ns() + int64_t(o.wait_s * 1e9);
  std::unique_ptr<store::StoreReader> rd;
  for (;;) {
    if (std::optional<obs::ReplayCycleRecord> cycle = answered(store, rq.id, &rd)) {
      print_replay_cycle(*cycle, o.json, out);
      return cycle->outcome == "pass" ? kExitOk : 1;
    }
    if (shm::wall_ns() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (::unlink((prefix + rq.id + ".json").c_str()) == 0) {  // not taken: withdrawn
    std::cerr << fmt::format(
        "scout: no observer took the replay request within {} s (is scout-observer running for this job on this "
        "node with replay on, SCOUT_REPLAY=1? a cycle in flight is finished first: scout replay list)\n",
        o.wait_s);
  } else {
    std::cerr << fmt::format(
        "scout: the observer took the replay request but its cycle did not finish within {} s; it shows in scout "
        "replay list (trigger demand) when it does\n",
        o.wait_s);
  }
  return 1;
}

}  // namespace scout::cli
