// End to end at the observer's default settings: a collective that stops because a link, a host's
// network or a GPU stopped is named within 10 s of the stop, with exact suspects
// (docs/observer.md, "Stuck collectives"). scout-sim runs the job through the real plugin; one
// scout-observer reads every emulated host's segments (--host '*').
//   - From the network steps every plugin counts at the defaults (SCOUT_PROXY_PROGRESS=1: ProxyOp
//     and ProxyStep stay in NCCL's activation mask, so the stuck collective's steps were counted
//     as it ran; docs/plugin.md, "Tracing a stuck collective"): a `linkdown` between two hosts is
//     named by the link's two ends, a `nicdown` of one host of four by every member on that host,
//     a `kernelstall` (a GPU whose kernel stopped at its start) by its rank: the data it received
//     was handed to its GPU and never consumed, and nothing it should send ever left its GPU.
//   - Inside one host there is no proxy: the stuck stall names nobody until replay's cycle for it
//     (trigger "stuck", docs/replay.md "Deadlines") times out where the hardware stopped: a
//     `linkdown` in a TP 4 group by the link's two ends (its link recipes time out in both
//     directions, every other pair delivers), a `kernelstall` in a TP 2 group by its rank (its
//     GPU's GEMM times out, the other GPU's finishes). With SCOUT_REPLAY=0 nobody is named.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/clock.h"
#include "observer/store/reader.h"
#include "test/support/observed_job.h"
#include "test/support/settle.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using scout::obs::Finding;
using scout::obs::FindingKind;
using scout::testing::build_path;
using scout::testing::Named;
using scout::testing::stored_findings;
using scout::testing::Subprocess;
using scout::testing::TempDir;

std::string show(const std::vector<Finding>& fs) {
  std::string s;
  for (const auto& f : fs)
    s += "\n  " + std::string(to_string(f.kind)) + (f.open ? " open: " : " closed: ") + f.summary + "\n    " +
         f.evidence.dump().substr(0, 1500);
  return s;
}

// scout-sim with `sim_args` under one scout-observer at the default settings reading every host's
// segments (test/support/observed_job.h); `extra` is added to both's environment.
struct Job : scout::testing::LiveJob {
  Job(const std::string& name, const std::vector<std::string>& sim_args, std::map<std::string, std::string> extra = {})
      : LiveJob(name, sim_args, {"--host", "*"}, extra) {}
  // The first finding that names someone (polled every 50 ms up to `seconds`) and when it was
  // seen; then the settle time.
  std::pair<std::optional<Finding>, int64_t> first_named(int seconds) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::pair<std::optional<Finding>, int64_t> out{std::nullopt, 0};
    while (!out.first && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (const auto& f : findings())
        if (!f.suspects.empty()) {
          out = {f, scout::shm::wall_ns()};
          break;
        }
    }
    std::this_thread::sleep_for(scout::testing::kSettle);
    return out;
  }
  // Stops the observer (final pass), then the job; returns the observer's stderr.
  std::string stop() {
    observer->signal(SIGTERM);
    auto r = observer->wait(200);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    sim->signal(SIGINT);
    sim->wait(30);
    return r.err;
  }
};

// The one finding the stuck collective gave: a stall (or the hang it became) of class stuck, naming
// exactly `want` within 10 s of the fault's ground-truth time; returns its evidence's trace.
nlohmann::json expect_named(Job& j, const std::set<int>& want, const char* what) {
  auto [f, seen_ns] = j.first_named(40);
  std::string err = j.stop();
  auto truth = j.truth_lines();
  auto all = j.findings();
  EXPECT_EQ(truth.size(), 1u);
  EXPECT_TRUE(f) << "nothing named within 40 s:" << show(all) << "\n" << err;
  if (!f || truth.empty()) return nullptr;
  EXPECT_EQ(scout::testing::named(all), (std::multiset<Named>{{"stall", want}})) << show(all) << "\n" << err;
  EXPECT_EQ(f->evidence["class"], "stuck") << f->evidence.dump();
  EXPECT_EQ(f->verdict, scout::obs::Verdict::kAttributed);
  const int64_t t0 = truth[0]["time_ns"].get<int64_t>();
  const double named_s = double(f->evidence["named_ns"].get<int64_t>() - t0) / 1e9;
  const double seen_s = double(seen_ns - t0) / 1e9;
  std::printf("%s: named %.2f s, in the store %.2f s after the stop (threshold %.0f ms): %s\n", what, named_s, seen_s,
              f->evidence["threshold_ms"].get<double>(), f->summary.c_str());
  EXPECT_LT(named_s, 10.0);
  EXPECT_LT(seen_s, 10.0);
  return f->evidence["trace"];
}

// The stall of a stuck collective inside one host, named by replay: exactly `want` with replay
// verdict `verdict`, within 10 s of the fault's ground-truth time (when replay decided, and when
// the store showed it); returns the finding's evidence.
nlohmann::json expect_replay_named(Job& j, const std::set<int>& want, const char* verdict, const char* what) {
  auto [f, seen_ns] = j.first_named(40);
  std::string err = j.stop();
  auto truth = j.truth_lines();
  auto all = j.findings();
  EXPECT_EQ(truth.size(), 1u);
  EXPECT_TRUE(f) << "nothing named within 40 s:" << show(all) << "\n" << err;
  if (!f || truth.empty()) return nullptr;
  EXPECT_EQ(scout::testing::named(all), (std::multiset<Named>{{"stall", want}})) << show(all) << "\n" << err;
  EXPECT_EQ(f->evidence["class"], "stuck") << f->evidence.dump();
  EXPECT_EQ(f->verdict, scout::obs::Verdict::kAttributed);
  const nlohmann::json& rp = f->evidence["replay"];
  EXPECT_EQ(rp["verdict"], verdict) << f->evidence.dump();
  EXPECT_EQ(rp["ranks"], nlohmann::json(std::vector<int>(want.begin(), want.end()))) << rp.dump();
  EXPECT_EQ(rp["deadline_ms"], 1000.0) << rp.dump();
  EXPECT_EQ(f->evidence["trace"]["source"], "replay") << f->evidence.dump();
  EXPECT_EQ(f->evidence["trace"]["verdict"], verdict) << f->evidence.dump();
  EXPECT_NE(f->summary.find(rp["words"].get<std::string>()), std::string::npos) << f->summary;
  if (!rp.is_object() || !rp.contains("named_ns")) return f->evidence;
  const int64_t t0 = truth[0]["time_ns"].get<int64_t>();
  const double stall_s = double(f->evidence["named_ns"].get<int64_t>() - t0) / 1e9;
  const double named_s = double(rp["named_ns"].get<int64_t>() - t0) / 1e9;
  const double seen_s = double(seen_ns - t0) / 1e9;
  std::printf("%s: stall %.2f s, named by replay %.2f s, in the store %.2f s after the stop: %s\n", what, stall_s,
              named_s, seen_s, f->summary.c_str());
  EXPECT_LT(named_s, 10.0);
  EXPECT_LT(seen_s, 10.0);
  return f->evidence;
}

// TP 4 on one host (ranks 0-3): the link 1<->2 stops delivering at step 30. Every channel's ring
// inside the host crosses it: the collective is stuck with no proxy to trace. Replay's cycle for
// the stall runs all 12 directed pairs and a GEMM on each GPU: 1->2 and 2->1 time out, every other
// pair delivers and every GEMM finishes.
TEST(StuckEndToEnd, LinkdownInsideOneHostIsNamedByReplay) {
  Job j("ldtp4", {"--ranks", "4", "--tp", "4", "--steps", "2000", "--step-ms", "20", "--timeout", "60", "--fault",
                  "linkdown:rank=1,peer=2,step=30"});
  nlohmann::json ev = expect_replay_named(j, {1, 2}, "link", "linkdown 1<->2 inside one host (TP 4)");
  ASSERT_TRUE(ev.is_object());
  EXPECT_EQ(ev["replay"]["timed_out"], nlohmann::json::array({"link:1->2", "link:2->1"})) << ev["replay"].dump();
  EXPECT_EQ(ev["replay"]["recipes"], 13) << ev["replay"].dump();  // one GEMM and 12 directed pairs
}

// TP 2 inside one host (ranks 0-3, TP groups {0,1} and {2,3}): rank 1's kernel of its TP
// AllReduce at step 30 starts and never completes (its GPU hung). Replay's GEMM times out on
// rank 1's GPU while rank 0's finishes; the links touching rank 1 are not launched.
TEST(StuckEndToEnd, KernelstallInsideOneHostIsNamedByReplay) {
  Job j("kstp2", {"--ranks", "4", "--tp", "2", "--steps", "2000", "--step-ms", "20", "--timeout", "60", "--fault",
                  "kernelstall:rank=1,step=30"});
  nlohmann::json ev = expect_replay_named(j, {1}, "gpu", "kernelstall of rank 1 inside one host (TP 2)");
  ASSERT_TRUE(ev.is_object());
  const nlohmann::json& to = ev["replay"]["timed_out"];
  EXPECT_EQ(to.size(), 3u) << to.dump();  // the GEMM, and the two links not launched
  EXPECT_EQ(to[0].get<std::string>().rfind("gemm:", 0), 0u) << to.dump();
}

// The same linkdown with replay off: the stall is found and names nobody (what scout did before
// replay's stuck trigger).
TEST(StuckEndToEnd, LinkdownInsideOneHostNamesNobodyWithoutReplay) {
  Job j("ldtp4off",
        {"--ranks", "4", "--tp", "4", "--steps", "2000", "--step-ms", "20", "--timeout", "60", "--fault",
         "linkdown:rank=1,peer=2,step=30"},
        {{"SCOUT_REPLAY", "0"}});
  std::optional<Finding> stall;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (!stall && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& f : j.findings())
      if (f.kind == FindingKind::kStall) stall = f;
  }
  ASSERT_TRUE(stall) << "no stall within 40 s";
  std::this_thread::sleep_for(std::chrono::seconds(8));  // as long as replay would have needed
  std::string err = j.stop();
  auto all = j.findings();
  EXPECT_EQ(scout::testing::named(all), (std::multiset<Named>{{"stall", {}}})) << show(all) << "\n" << err;
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].verdict, scout::obs::Verdict::kInconclusive);
  EXPECT_FALSE(all[0].evidence.contains("replay")) << all[0].evidence.dump();
}

// DP over two hosts (ranks 0, 1 on node0; 2, 3 on node1): the link 1<->2 stops delivering at step
// 30. Every channel of the DP ring crosses between 1 and 2 in one direction or the other: their
// sends sit in the network, every other crossing starves.
TEST(StuckEndToEnd, LinkdownBetweenTwoHostsIsNamedByItsStoppedSends) {
  Job j("ldproxy",
        {"--ranks", "4", "--nodes", "2", "--steps", "2000", "--step-ms", "20", "--timeout", "60", "--fault",
         "linkdown:rank=1,peer=2,step=30"},
        {});
  nlohmann::json tr = expect_named(j, {1, 2}, "linkdown 1<->2 across hosts");
  ASSERT_TRUE(tr.is_object());
  EXPECT_EQ(tr["source"], "proxy");
  EXPECT_EQ(tr["verdict"], "link");
  int stopped = 0;
  for (const auto& p : tr["paths"]) {
    if (p["state"] != "stopped") continue;
    ++stopped;
    EXPECT_EQ(p["dir"], "send");
    EXPECT_EQ((std::set<int>{p["global_rank"].get<int>(), p["peer"].get<int>()}), (std::set<int>{1, 2})) << p.dump();
  }
  EXPECT_GE(stopped, 2) << tr.dump();  // both directions: 1->2 and 2->1 on different channels
  EXPECT_FALSE(tr["channels_stuck"].empty()) << tr.dump();
}

// DP over four hosts (two ranks each): host 2's network stops at step 30. The ring's crossings into
// and out of host 2 stop, from host 1 and to host 3: the host is named, by both its ranks.
TEST(StuckEndToEnd, NicdownOfOneHostOfFourIsNamedByTheHost) {
  Job j("ndproxy",
        {"--ranks", "8", "--nodes", "4", "--steps", "2000", "--step-ms", "20", "--timeout", "60", "--fault",
         "nicdown:node=2,step=30"},
        {});
  nlohmann::json tr = expect_named(j, {4, 5}, "nicdown of node2");
  ASSERT_TRUE(tr.is_object());
  EXPECT_EQ(tr["source"], "proxy");
  EXPECT_EQ(tr["verdict"], "host");
  EXPECT_EQ(tr["host"], "node2");
}

// DP over two hosts (ranks 0, 1 on node0; 2, 3 on node1): rank 2's kernel of its collective at
// step 30 starts and never makes progress (its GPU hung). The steps rank 1 and rank 3 send it
// arrive and wait in its GPU's buffers, never consumed; its own sends wait for its GPU's data;
// the other crossings starve behind it. Only rank 2 is named.
TEST(StuckEndToEnd, KernelstallAcrossHostsIsNamedByItsUnconsumedReceives) {
  Job j("ksproxy", {"--ranks", "4", "--nodes", "2", "--steps", "2000", "--step-ms", "20", "--timeout", "60",
                    "--fault", "kernelstall:rank=2,step=30"});
  nlohmann::json tr = expect_named(j, {2}, "kernelstall of rank 2");
  ASSERT_TRUE(tr.is_object());
  EXPECT_EQ(tr["source"], "proxy");
  EXPECT_EQ(tr["verdict"], "gpu");
  int gpu = 0;
  for (const auto& p : tr["paths"]) {
    EXPECT_NE(p["state"], "stopped") << p.dump();  // no link stopped
    if (p["state"] != "gpu") continue;
    ++gpu;
    EXPECT_EQ(p["global_rank"], 2) << p.dump();
    EXPECT_EQ(p["dir"], "recv");
    EXPECT_EQ(p["consumed"], 0);
  }
  EXPECT_GE(gpu, 1) << tr.dump();
  EXPECT_TRUE(tr["channels_done"].empty()) << tr.dump();  // a hung kernel stops no channel
}

}  // namespace
