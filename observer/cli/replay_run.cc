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
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "common/clock.h"
#include "observer/cli/common.h"
#include "observer/cli/format.h"
#include "observer/replay/request.h"
#include "observer/store/sqlite.h"

namespace scout::cli {
namespace {

// An observer that runs writes its store at every pass (every 250 ms by default): one that neither
// took the request nor wrote the store within this long is not running.
constexpr int64_t kLiveWindowNs = 1'500'000'000;

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
    if (ok && ps >> dash)
      ok = dash == '-' && bool(ps >> b) && b >= a && b - a < 65536;
    else
      b = a;
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

// The stored cycle answering request `id`, if it is in the store yet; *updated_ns: the job header's
// last update (the observer writes it at every pass), unchanged when the store cannot be read.
std::optional<obs::ReplayCycleRecord> answered(const std::string& store, const std::string& id, int64_t* updated_ns) {
  try {
    auto rd = store::StoreReader::open(store);
    if (std::optional<obs::JobInfo> j = rd->job()) *updated_ns = j->updated_ns;
    for (obs::ReplayCycleRecord& c : rd->replay_cycles())
      if (c.detail.is_object() && c.detail.contains("request") && c.detail["request"] == id) return std::move(c);
  } catch (const store::Error&) {
    // written right now, or not there yet: asked again at the next poll
  }
  return std::nullopt;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

int cmd_replay_run(const StoreOptions& where, const ReplayRunOptions& o, std::ostream& out) {
  obs::ReplayRequest rq;
  if (!o.ranks.empty()) rq.ranks = parse_rank_list(o.ranks);
  if (!o.recipes.empty()) rq.recipes = parse_kinds(o.recipes);
  const std::string store = store_path(where);
  if (!exists(store))
    throw UsageError("no store at " + store + " (is scout-observer running for this job on this node?)");
  int64_t updated0 = 0;
  {
    auto rd = open_store(where);  // a scout store (schema checked), or a UsageError: no request beside anything else
    if (std::optional<obs::JobInfo> j = rd->job()) updated0 = j->updated_ns;
  }
  rq.id = fmt::format("{}-{}", ::getpid(), shm::wall_ns());
  const std::string prefix = obs::replay_request_prefix(store);
  const std::string file = prefix + rq.id + ".json";
  std::string err;
  if (!obs::write_replay_request(prefix, rq, &err)) throw UsageError(err);
  const int64_t start = shm::wall_ns();
  const int64_t deadline = start + int64_t(o.wait_s * 1e9);
  const int64_t live_by = start + kLiveWindowNs;
  bool live = false;
  int64_t updated = updated0;
  for (;;) {
    if (std::optional<obs::ReplayCycleRecord> cycle = answered(store, rq.id, &updated)) {
      print_replay_cycle(*cycle, o.json, o.samples, store_selector(where), out);
      return cycle->outcome == "pass" ? kExitOk : cycle->outcome == "fail" ? kExitReplayFailed : kExitNoVerdict;
    }
    const int64_t now = shm::wall_ns();
    // Alive: it took the request, or it finished a pass since the request was written.
    live = live || !exists(file) || updated > updated0;
    if (!live && now >= live_by) {
      if (::unlink(file.c_str()) == 0) {
        std::cerr << "scout: no observer answered: " << store << " was last written "
                  << (updated0 > 0 ? "at " + fmt_utc(updated0) : std::string("never"))
                  << " and nothing took the request within " << fmt_duration(kLiveWindowNs)
                  << " (scout-observer of this job is not running on this node); request withdrawn\n";
        return kExitNoObserver;
      }
      live = true;  // taken just now
    }
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (::unlink(file.c_str()) == 0) {  // not taken: withdrawn
    std::cerr << fmt::format(
        "scout: the observer is running but did not take the replay request within {} s (is replay on, "
        "SCOUT_REPLAY=1? a cycle in flight is finished first: scout replay list); request withdrawn\n",
        o.wait_s);
    return kExitNoObserver;
  }
  std::cerr << fmt::format(
      "scout: the observer took the replay request but its cycle did not finish within {} s; it shows in scout "
      "replay list (trigger demand) when it does\n",
      o.wait_s);
  return kExitNoVerdict;
}

}  // namespace scout::cli
