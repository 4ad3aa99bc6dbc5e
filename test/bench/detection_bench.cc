// Detection latency (`make bench`): scout-sim runs an 8-rank job with one fault while
// scout-observer (default 250 ms interval) watches it; this program polls the observer's store
// every 10 ms and prints when the finding appeared, against the targets:
//   stall      at the default settings (no --hang-timeout: 60 s), the stopped rank named by a stall
//              within 5 s, in a communicator with a learned rhythm (warm) and in one too young to
//              have one (cold: its threshold from its first operations); docs/observer.md, "Stalls"
//   stall across 2 nodes  the same with the job on two emulated hosts (4 ranks, data parallel
//              across both) and two observers forming the observer network: the rank that stops is
//              on node 1 and the leader names it (docs/observer-network.md, "Hangs across nodes")
//   hang       root named within --hang-timeout + 2 s of the rank stopping
//   sdc        named within 1 s of the corrupted operation's completion
//   crash      named within the crash grace (1 s) + 1 s of the death
//   straggler  named within the straggler window (collectives of its communicator)
// A target is met only when the first finding of the kind names exactly the injected rank (the
// truth file's global_rank) within the time; the exit status is 1 when any is MISSED or not
// detected. Times are wall-clock on a shared machine: the figures come with the observer's
// interval (the same-run baseline every latency is a multiple of).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "observer/store/reader.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"

namespace {

using scout::testing::build_path;
using scout::testing::Subprocess;
using scout::testing::TempDir;

constexpr double kHangTimeout = 2.0;
constexpr double kInterval = 0.25;

struct Result {
  bool found = false;
  double latency_s = 0;  // finding seen - fault injected
  int64_t truth_ns = 0;
  int injected = -1;    // the truth's global_rank
  std::set<int> named;  // the finding's suspects (global ranks)
  scout::obs::Finding finding;
  uint64_t ops_between = 0;  // collectives of the finding's communicator between fault and detection
};

// The first finding of `kind` in `store` (r->found false if none yet); `truth` gives the fault's time.
void poll(const std::string& store, const std::string& truth, const std::string& kind, Result* r) {
  if (!std::filesystem::exists(store)) return;
  try {
    auto rd = scout::store::StoreReader::open(store);
    for (const auto& f : rd->findings()) {
      if (to_string(f.kind) != kind) continue;
      int64_t seen = scout::shm::wall_ns();
      std::ifstream t(truth);
      std::string line;
      if (std::getline(t, line)) {
        const auto j = nlohmann::json::parse(line);
        r->truth_ns = j["time_ns"].get<int64_t>();
        r->injected = j["global_rank"].get<int>();
      }
      r->found = true;
      r->finding = f;
      for (const auto& s : f.suspects) r->named.insert(s.global_rank);
      r->latency_s = double(seen - r->truth_ns) / 1e9;
      for (const auto& op : rd->ops()) {
        if (op.op.comm_hash == f.comm_hash && op.op.first_arrival_ns >= r->truth_ns && op.op.first_arrival_ns <= seen) {
          r->ops_between++;
        }
      }
      return;
    }
  } catch (const std::exception&) {}
}

// Two observers at the default settings (node-ranks 0 and 1, hosts node0 and node1, file
// rendezvous) and scout-sim on both hosts; polls the leader's store.
Result measure_two_nodes(const std::string& job, const std::string& kind, const std::vector<std::string>& sim_args) {
  TempDir dir;
  std::map<std::string, std::string> env = {{"SCOUT_SHM_DIR", dir.path()},
                                            {"SCOUT_STATE_DIR", dir.path() + "/state"},
                                            {"SCOUT_FP_BUDGET", "0"},
                                            {"SCOUT_NET_HOST", "127.0.0.1"},
                                            {"SCOUT_NET_JOIN_TIMEOUT_MS", "30000"}};
  std::string store = dir.path() + "/node-0.db";
  std::string truth = dir.path() + "/truth.jsonl";
  std::vector<std::unique_ptr<Subprocess>> observers;
  for (int k = 0; k < 2; ++k) {
    observers.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{build_path("bin/scout-observer"), "--job", job, "--quiet", "--nodes", "2",
                                 "--node-rank", std::to_string(k), "--rdzv", "file:" + dir.path() + "/rdzv", "--host",
                                 "node" + std::to_string(k), "--store",
                                 dir.path() + "/node-" + std::to_string(k) + ".db"},
        env));
  }
  std::vector<std::string> argv = {build_path("bin/scout-sim"), "--job", job, "--truth", truth, "--nodes", "2"};
  argv.insert(argv.end(), sim_args.begin(), sim_args.end());
  Subprocess sim(argv, env);
  Result r;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (!r.found && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    poll(store, truth, kind, &r);
  }
  sim.signal(SIGINT);
  sim.wait(20);
  for (auto& o : observers) o->signal(SIGTERM);
  for (auto& o : observers) o->wait(40);
  return r;
}

// `hang_timeout` 0: the observer's default (no --hang-timeout).
Result measure(const std::string& job, const std::string& kind, const std::vector<std::string>& sim_args,
               const std::map<std::string, std::string>& extra_env = {}, double hang_timeout = kHangTimeout) {
  TempDir dir;
  std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", dir.path()}, {"SCOUT_STATE_DIR", dir.path() + "/state"}, {"SCOUT_FP_BUDGET", "0"}};
  env.insert(extra_env.begin(), extra_env.end());
  std::string store = dir.path() + "/state/" + job + "/node-0.db";
  std::string truth = dir.path() + "/truth.jsonl";
  std::vector<std::string> obs_argv = {build_path("bin/scout-observer"), "--job", job, "--quiet"};
  if (hang_timeout > 0) {
    obs_argv.push_back("--hang-timeout");
    obs_argv.push_back(std::to_string(hang_timeout));
  }
  Subprocess observer(obs_argv, env);
  std::vector<std::string> argv = {build_path("bin/scout-sim"), "--job", job, "--truth", truth};
  argv.insert(argv.end(), sim_args.begin(), sim_args.end());
  Subprocess sim(argv, env);
  Result r;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!r.found && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    poll(store, truth, kind, &r);
  }
  sim.signal(SIGINT);
  sim.wait(20);
  observer.signal(SIGTERM);
  observer.wait(20);
  return r;
}

// "{5}" for a set of ranks.
std::string ranks(const std::set<int>& v) {
  std::string s = "{";
  for (int r : v) s += (s.size() > 1 ? "," : "") + std::to_string(r);
  return s + "}";
}

// Whether the finding named exactly the injected rank; prints why not.
bool right_rank(const Result& r) {
  if (r.named == std::set<int>{r.injected}) return true;
  std::printf("  (named %s, injected rank %d)\n", ranks(r.named).c_str(), r.injected);
  return false;
}

bool line(const char* what, const Result& r, double target_s, const char* target_words) {
  if (!r.found) {
    std::printf("  %-10s NOT DETECTED within 30 s: MISSED\n", what);
    return false;
  }
  const bool ok = r.latency_s <= target_s && r.named == std::set<int>{r.injected};
  std::printf("  %-10s ranks %s named %6.2f s after the fault on rank %d (%4.1f intervals); target %s = %.2f s: %s\n",
              what, ranks(r.named).c_str(), r.latency_s, r.injected, r.latency_s / kInterval, target_words, target_s,
              ok ? "met" : "MISSED");
  return right_rank(r) && ok;
}

// A stall at the default settings: when it named the root (evidence named_ns) after the rank
// stopped, against 5 s.
bool stall_line(const char* what, const Result& r) {
  if (!r.found) {
    std::printf("  %-10s NOT DETECTED: MISSED\n", what);
    return false;
  }
  double named_s = double(r.finding.evidence.value("named_ns", int64_t(0)) - r.truth_ns) / 1e9;
  const bool ok = named_s <= 5.0 && r.named == std::set<int>{r.injected};
  std::printf(
      "  %-10s ranks %s named %6.2f s after rank %d stopped (%4.1f intervals; threshold %.1f s, %d gaps, basis %s), "
      "in the store %6.2f s; target 5 s at the default settings: %s\n",
      what, ranks(r.named).c_str(), named_s, r.injected, named_s / kInterval,
      r.finding.evidence.value("threshold_ms", 0.0) / 1e3, r.finding.evidence["rule"].value("gaps", 0),
      r.finding.evidence["rule"].value("basis", std::string("?")).c_str(), r.latency_s, ok ? "met" : "MISSED");
  return right_rank(r) && ok;
}

}  // namespace

int main() {
  std::printf("detection latency: 8 emulated ranks, observer interval %.2f s (baseline), hang timeout %.1f s\n",
              kInterval, kHangTimeout);
  // Stalls at the default hang timeout (60 s): a rank that stops early in the job (its
  // communicators have too few progress gaps: the cold threshold from their first operations) and
  // after 200 steps of 20 ms.
  Result cold = measure(
      "bench-stall-cold", "stall",
      {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "40", "--timeout", "25", "--fault", "hang:rank=5,step=4"},
      {}, 0);
  bool ok = stall_line("stall cold", cold);
  Result warm = measure("bench-stall-warm", "stall",
                        {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "400", "--step-ms", "20", "--timeout",
                         "28", "--fault", "hang:rank=5,step=200"},
                        {}, 0);
  ok &= stall_line("stall warm", warm);
  // Across two nodes (4 ranks, data parallel over both hosts): rank 3 (node 1) stops early (cold)
  // and after 200 steps of 20 ms (warm); the leader names it.
  Result xcold = measure_two_nodes(
      "bench-xstall-cold", "stall",
      {"--ranks", "4", "--tp", "1", "--steps", "40", "--timeout", "30", "--fault", "hang:rank=3,step=4"});
  ok &= stall_line("stall cold 2 nodes", xcold);
  Result xwarm = measure_two_nodes("bench-xstall-warm", "stall",
                                   {"--ranks", "4", "--tp", "1", "--steps", "400", "--step-ms", "20", "--timeout", "30",
                                    "--fault", "hang:rank=3,step=200"});
  ok &= stall_line("stall warm 2 nodes", xwarm);
  Result hang = measure(
      "bench-hang", "hang",
      {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "40", "--timeout", "10", "--fault", "hang:rank=5,step=4"});
  ok &= line("hang", hang, kHangTimeout + 2, "timeout + 2 s");
  Result sdc =
      measure("bench-sdc", "sdc", {"--ranks", "8", "--tp", "4", "--steps", "40", "--fault", "sdc:rank=5,step=4"});
  ok &= line("sdc", sdc, 1.0, "1 s");
  Result crash = measure(
      "bench-crash", "crash",
      {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "40", "--timeout", "10", "--fault", "crash:rank=2,step=4"});
  ok &= line("crash", crash, 2.0, "grace + 1 s");
  Result strag =
      measure("bench-straggler", "straggler",
              {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "40", "--fault", "straggler:rank=3,ms=60,step=2"});
  if (strag.found) {
    const bool met = strag.ops_between <= 64 && strag.named == std::set<int>{strag.injected};
    std::printf(
        "  %-10s ranks %s named %6.2f s after onset on rank %d, after %llu collectives of its communicator; target: "
        "within the window (64): %s\n",
        "straggler", ranks(strag.named).c_str(), strag.latency_s, strag.injected,
        (unsigned long long)strag.ops_between, met ? "met" : "MISSED");
    ok &= right_rank(strag) && met;
  } else {
    std::printf("  straggler  NOT DETECTED within 30 s: MISSED\n");
    ok = false;
  }
  return ok ? 0 : 1;
}
