// End to end, network links (docs/net-plugin.md; docs/observer.md, "Network links"): scout-sim
// runs a job over two emulated hosts with libnccl-profiler-scout.so as both its profiler and its
// net plugin (NCCL_NET_PLUGIN), wrapping the test delegate (TCP between the rank processes);
// scout-observer watches; the findings in its store are compared with the ground truth, which
// the sim and the plugin's drills append to the same file.
//
// The last two tests run NCCL's own transport's timing instead: scout-sim emits the ProxyOp and
// ProxyStep events of its collectives' inter-host transfers while the plugin's ProxyStep windows
// are open (docs/net-plugin.md, "ProxyStep timing"; docs/scout-sim.md, "Network steps").
//
// Thresholds for this machine: the delayed transfers take 20 ms more than the others, whose
// loopback TCP transfers take tens to hundreds of microseconds; the floor stays at its default.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>

#include "common/link_reader.h"
#include "observer/model/evidence.h"
#include "observer/store/reader.h"
#include "test/support/settle.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using scout::testing::build_path;
using scout::testing::Named;
using scout::testing::ProcessResult;
using scout::testing::read_truth;
using scout::testing::show;
using scout::testing::Subprocess;
using scout::testing::TempDir;

struct Outcome {
  std::multiset<Named> truth, found;
  std::vector<scout::obs::Finding> findings;
  ProcessResult sim;
  std::string observer_err;
  // From the segments' link tables (send entries): transfers of net plugin connections and
  // ProxyStep steps timed.
  uint64_t net_transfers = 0, proxy_steps = 0;
};

void count_links(const std::string& dir, Outcome* o) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("scout.", 0) != 0) continue;
    std::string err;
    auto rd = scout::shm::SegmentReader::open(e.path().string(), &err);
    if (!rd) continue;
    uint32_t cap = 0;
    const scout::shm::LinkTableHeader* t = scout::shm::link_table(*rd, &cap);
    if (t == nullptr) continue;
    std::vector<scout::shm::LinkSnapshot> ls;
    scout::shm::read_links(t, cap, &ls);
    for (const auto& l : ls) {
      if (l.dir != scout::shm::kLinkSend) continue;
      (l.source == scout::shm::kLinkSourceNet ? o->net_transfers : o->proxy_steps) += l.transfers;
    }
  }
}

// Runs scout-sim with `sim_args` under `nodes` scout-observers: one per emulated host
// (--host node<k>, node-rank k, a file rendezvous; node 0 is the leader whose store is read), or
// with `nodes` = 0 one observer reading every emulated host's segments (--host '*').
// `wanted(finding)` says when the leader's store has what the test waits for (up to 10 s after the
// job ended, then the settle time of test/support/settle.h).
template <class Wanted>
Outcome run(const std::string& job, int nodes, const std::vector<std::string>& sim_args,
            const std::map<std::string, std::string>& extra_env, Wanted wanted) {
  TempDir dir;
  std::map<std::string, std::string> env = {
      {"SCOUT_SHM_DIR", dir.path()},
      {"SCOUT_STATE_DIR", dir.path() + "/state"},
      {"SCOUT_FP_BUDGET", "0"},
      {"SCOUT_TRUTH", dir.path() + "/truth.jsonl"},
      {"SCOUT_OBSERVER_NET_WINDOW_S", "3"},
      {"SCOUT_OBSERVER_NET_MIN_TRANSFERS", "8"},
      {"SCOUT_NET_HOST", "127.0.0.1"},
      {"SCOUT_NET_INTERVAL_MS", "100"},
      {"SCOUT_NET_TIMEOUT_MS", "10000"},
      {"SCOUT_NET_JOIN_TIMEOUT_MS", "30000"},
  };
  for (const auto& [k, v] : extra_env) env[k] = v;
  auto store = [&](int k) { return dir.path() + "/node-" + std::to_string(k) + ".db"; };
  std::vector<std::unique_ptr<Subprocess>> observers;
  for (int k = 0; k < std::max(1, nodes); ++k) {
    std::vector<std::string> argv = {build_path("bin/scout-observer"),
                                     "--job",
                                     job,
                                     "--hang-timeout",
                                     "5",
                                     "--interval",
                                     "100",
                                     "--store",
                                     store(k)};
    if (nodes == 0) {
      argv.insert(argv.end(), {"--host", "*"});
    } else {
      argv.insert(argv.end(), {"--host", "node" + std::to_string(k), "--nodes", std::to_string(nodes), "--node-rank",
                               std::to_string(k), "--rdzv", "file:" + dir.path() + "/rdzv"});
    }
    observers.push_back(std::make_unique<Subprocess>(argv, env));
  }
  std::vector<std::string> argv = {build_path("bin/scout-sim"), "--job", job, "--truth", dir.path() + "/truth.jsonl"};
  argv.insert(argv.end(), sim_args.begin(), sim_args.end());
  Outcome o;
  o.sim = scout::testing::run_process(argv, env, 240);
  scout::testing::wait_then_settle(
      [&] {
        for (const auto& f : scout::testing::stored_findings(store(0)))
          if (wanted(f)) return true;
        return false;
      },
      std::chrono::seconds(10));
  for (auto& ob : observers) ob->signal(SIGTERM);
  for (size_t k = 0; k < observers.size(); ++k) {
    ProcessResult r = observers[k]->wait_from_now(60);
    o.observer_err += "--- observer " + std::to_string(k) + "\n" + r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  o.findings = scout::store::StoreReader::open(store(0))->findings();
  o.found = scout::testing::named(o.findings);
  o.truth = read_truth(dir.path() + "/truth.jsonl");
  count_links(dir.path(), &o);
  return o;
}

std::string evidence_class(const scout::obs::Finding& f) { return f.evidence.value("class", std::string()); }

// delay:peer=3 on every link touching rank 3: ranks 0..3 on two hosts (node0: 0, 1; node1: 2, 3),
// one observer per host; pipeline pairs {0, 2} and {1, 3} exchange their activations and
// gradients across the hosts through the net plugin. Each node's observer judges the pairs its
// ranks send on (node0: 0 -> 2 and 1 -> 3; node1: 2 -> 0 and 3 -> 1); the leader's store names the
// link {1, 3} (class net_link from the link tables), nothing else.
TEST(NetLinkEndToEnd, DelayDrillIsNamedAsASlowLinkTouchingR) {
  const std::string plugin = build_path("lib/libnccl-profiler-scout.so");
  Outcome o = run("netdelay", 2, {"--ranks", "4", "--pp", "2", "--nodes", "2", "--steps", "60", "--step-ms", "5"},
                  {{"NCCL_NET_PLUGIN", plugin},
                   {"SCOUT_NET_DELEGATE", build_path("lib/libnccl-net-scouttest.so")},
                   {"SCOUT_NET_FAULT", "delay:peer=3,ms=20"},
                   {"SCOUT_PROXY_TIMING", "0"}},
                  [](const scout::obs::Finding& f) { return evidence_class(f) == "net_link"; });
  ASSERT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"slowlink", {1, 3}}})) << show(o.truth);
  EXPECT_EQ(o.found, o.truth) << "found:" << show(o.found) << "\n" << o.observer_err;
  bool net = false;
  for (const auto& f : o.findings) {
    if (evidence_class(f) != "net_link") continue;
    net = true;
    EXPECT_EQ(f.verdict, scout::obs::Verdict::kAttributed);
    scout::obs::SlowLinkEvidence ev;
    std::string err;
    ASSERT_TRUE(scout::obs::read_evidence(f.evidence, &ev, &err)) << err;
    ASSERT_FALSE(ev.slow.empty());
    for (const auto& c : ev.slow) {
      EXPECT_EQ(c.source, std::optional<std::string>("net"));
      EXPECT_EQ(std::set<int>({*c.src, *c.dst}), std::set<int>({1, 3}));
      // Every delayed transfer took at least the drill's 20 ms; the median is the middle of its
      // quarter-octave histogram bucket, [16.8, 21.0) ms (docs/record-format.md, "Link table").
      EXPECT_GE(c.median_ms, 16.7);
      EXPECT_LT(c.peer_median_ms, 16.7);
      EXPECT_EQ(c.peers, 1);  // compared on the sender's node with the one other pair sent from there
      EXPECT_GE(c.ratio, 2.0);
    }
    // The normal pairs, 0 -> 2 and 2 -> 0, share no rank with the link: none is listed.
    EXPECT_TRUE(ev.normal.empty());
  }
  EXPECT_TRUE(net) << o.observer_err;
}

// The same job with no drill: the net plugin carries the pipeline traffic, no finding.
TEST(NetLinkEndToEnd, HealthyJobOverTheNetPluginGivesNoFinding) {
  const std::string plugin = build_path("lib/libnccl-profiler-scout.so");
  Outcome o = run("nethealthy", 2, {"--ranks", "4", "--pp", "2", "--nodes", "2", "--steps", "60", "--step-ms", "5"},
                  {{"NCCL_NET_PLUGIN", plugin},
                   {"SCOUT_NET_DELEGATE", build_path("lib/libnccl-net-scouttest.so")},
                   {"SCOUT_PROXY_TIMING", "0"}},
                  [](const scout::obs::Finding&) { return false; });
  ASSERT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_TRUE(o.truth.empty());
  EXPECT_GT(o.net_transfers, 200u);  // 60 steps, two directions of two pairs, 2 transfers each
  EXPECT_TRUE(o.found.empty()) << "found:" << show(o.found) << "\n" << o.observer_err;
}

// slowlink:rank=1,peer=6 with 8 ranks on two hosts (node0: 0..3, node1: 4..7), tp = pp = 1: the
// only communicators, world and dp0, hold all eight ranks, so collective timing alone cannot say
// which link is slow (every member's collective ends 4 ms late). The emulated ring crosses the
// hosts on channel c from the last to the first member of each host rotated by c: 3 -> 4 and
// 7 -> 0 on channel 0, 0 -> 5 and 4 -> 1 on 1, 1 -> 6 and 5 -> 2 on 2 (the 256 KiB AllReduces and
// the 32 KiB Broadcasts use channels 0..2). From step 10 the pair 1 -> 6 takes the 4 ms in its
// steps (4/3 ms each for an AllReduce's 3 steps); the other pairs' steps take microseconds.
// ProxyStep windows of 200 ms are open half the time (SCOUT_PROXY_BUDGET=0.5).
const std::vector<std::string> kProxyJob = {"--ranks", "8", "--tp",    "1",   "--pp",      "1",
                                            "--nodes", "2", "--steps", "120", "--step-ms", "5"};
const std::map<std::string, std::string> kProxyEnv = {{"SCOUT_PROXY_WINDOW_MS", "200"}, {"SCOUT_PROXY_BUDGET", "0.5"}};

// The net_link findings of `o`: each names the pair 1 -> 6 (the receiving end `dst`: its global
// rank, or -1 where the observer knows it by its comm rank only) from ProxyStep entries, compared
// with at most `peers` other pairs.
int check_proxy_findings(const Outcome& o, int dst, int peers) {
  int n = 0;
  for (const auto& f : o.findings) {
    if (evidence_class(f) != "net_link") continue;
    ++n;
    EXPECT_EQ(f.verdict, scout::obs::Verdict::kAttributed);
    scout::obs::SlowLinkEvidence ev;
    std::string err;
    EXPECT_TRUE(scout::obs::read_evidence(f.evidence, &ev, &err)) << err;
    EXPECT_FALSE(ev.slow.empty());
    for (const auto& c : ev.slow) {
      EXPECT_EQ(c.source, std::optional<std::string>("proxy"));
      EXPECT_EQ(*c.src, 1);
      EXPECT_EQ(*c.dst, dst);
      // Most delayed steps took at least 4/3 ms (quarter-octave bucket from 1.31 ms); the other
      // pairs' median is far below.
      EXPECT_GE(c.median_ms, 1.3);
      EXPECT_LT(c.peer_median_ms, 0.5);
      // At most `peers` other pairs and at least one (a class needs two pairs, docs/observer.md
      // "Network links"). Which of the other pairs are compared depends on what the ProxyStep
      // windows timed in the detector's 10 s window: a pair with fewer than
      // SCOUT_OBSERVER_NET_MIN_TRANSFERS timed steps there, or whose mix of 256 KiB AllReduce and
      // 32 KiB Broadcast steps puts its mean bytes per transfer in another power-of-two class, is
      // not compared. On a loaded machine (CI beside a benchmark) one of the two other pairs
      // dropped out this way in some full-suite runs; the pair named, its ratio and
      // the compared median are what the finding must get right.
      EXPECT_LE(c.peers, peers) << f.evidence.dump();
      EXPECT_GE(c.peers, 1) << f.evidence.dump();
      EXPECT_GE(c.ratio, 2.0);
    }
  }
  return n;
}

// One observer reading both emulated hosts' segments knows every process: the finding names
// global ranks 1 and 6 (compared with the five other pairs), and nothing else is found.
TEST(NetLinkEndToEnd, ProxyStepTimingNamesASlowLinkInsideOneCommunicator) {
  std::vector<std::string> args = kProxyJob;
  args[9] = "200";  // --steps: more passes with new transfers on a busy machine
  args.insert(args.end(), {"--fault", "slowlink:rank=1,peer=6,step=10,ms=4"});
  Outcome o = run("proxyslow", 0, args, kProxyEnv,
                  [](const scout::obs::Finding& f) { return evidence_class(f) == "net_link"; });
  ASSERT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"slowlink", {1, 6}}})) << show(o.truth);
  EXPECT_EQ(o.found, o.truth) << "found:" << show(o.found) << "\n" << o.observer_err;
  EXPECT_EQ(o.net_transfers, 0u);
  EXPECT_GT(o.proxy_steps, 0u);
  EXPECT_EQ(check_proxy_findings(o, 6, 5), 1) << o.observer_err;
}

// One observer per host: node0's observer compares rank 1's pair with the two other pairs sent
// from its host, 3 -> 4 and 0 -> 5; rank 6 runs on node1, so the leader names the far end by its
// comm rank in dp0 (6), and nothing else. Replay is off: its first sweep across the hosts starts
// as soon as the observers meet and names the pair (by both ends' hosts and pids) before the
// detector's window fills, and the detector then leaves the pair to that finding
// (replay_cross_e2e_test); this test is about what the live detector names.
TEST(NetLinkEndToEnd, ProxyStepTimingPerHostObserversNameTheFarEndByCommRank) {
  std::vector<std::string> args = kProxyJob;
  args[9] = "200";  // --steps: more passes with new transfers on a busy machine
  args.insert(args.end(), {"--fault", "slowlink:rank=1,peer=6,step=10,ms=4"});
  std::map<std::string, std::string> env = kProxyEnv;
  env["SCOUT_REPLAY"] = "0";
  Outcome o = run("proxyslow2", 2, args, env,
                  [](const scout::obs::Finding& f) { return evidence_class(f) == "net_link"; });
  ASSERT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"slowlink", {1, 6}}})) << show(o.truth);
  ASSERT_EQ(check_proxy_findings(o, -1, 2), 1) << o.observer_err;
  EXPECT_EQ(o.findings.size(), 1u) << "found:" << show(o.found) << "\n" << o.observer_err;
  std::set<std::pair<int, int>> ends;  // (global rank, comm rank)
  for (const auto& s : o.findings[0].suspects) ends.insert({s.global_rank, s.comm_rank});
  if (o.findings[0].peer) ends.insert({o.findings[0].peer->global_rank, o.findings[0].peer->comm_rank});
  EXPECT_TRUE(ends.count({-1, 6})) << o.findings[0].summary;
  EXPECT_NE(o.findings[0].summary.find("rank 1 and comm rank 6 of dp0"), std::string::npos) << o.findings[0].summary;
}

// The same job with no fault: ProxyStep entries on every crossing, no finding.
TEST(NetLinkEndToEnd, HealthyJobTimedByProxyStepsGivesNoFinding) {
  Outcome o = run("proxyhealthy", 2, kProxyJob, kProxyEnv, [](const scout::obs::Finding&) { return false; });
  ASSERT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_TRUE(o.truth.empty());
  EXPECT_GT(o.proxy_steps, 1000u);
  EXPECT_TRUE(o.found.empty()) << "found:" << show(o.found) << "\n" << o.observer_err;
}

// slownic:node=2 with 16 ranks on 4 hosts (TP 2, PP 2; node2 holds ranks 8-11) and the pipeline
// messages through the net plugin, one observer reading every host: node2's pipeline pairs to
// node0 are slow in the link tables too (their sends from node2 take the 5 ms), but they are the
// slow host's finding (docs/observer.md, "Slow links"): one finding, the host, no net_link. The
// network window and transfer minimum are the defaults (10 s, 16): with this file's short ones the
// pairs are confirmed before the operation times have named the host, and are reported as links
// first.
TEST(NetLinkEndToEnd, SlowNicThroughTheNetPluginIsOneHostFinding) {
  const std::string plugin = build_path("lib/libnccl-profiler-scout.so");
  Outcome o = run("netslownic", 0,
                  {"--ranks", "16", "--tp", "2", "--pp", "2", "--nodes", "4", "--steps", "200", "--step-ms", "20",
                   "--fault", "slownic:node=2,ms=5,step=10"},
                  {{"NCCL_NET_PLUGIN", plugin},
                   {"SCOUT_NET_DELEGATE", build_path("lib/libnccl-net-scouttest.so")},
                   {"SCOUT_PROXY_TIMING", "0"},
                   {"SCOUT_OBSERVER_NET_WINDOW_S", "10"},
                   {"SCOUT_OBSERVER_NET_MIN_TRANSFERS", "16"}},
                  [](const scout::obs::Finding& f) { return f.evidence.contains("host"); });
  ASSERT_EQ(o.sim.exit_code, 0) << o.sim.err;
  EXPECT_EQ(o.truth, (std::multiset<Named>{{"slownic", {8}}})) << show(o.truth);
  EXPECT_GT(o.net_transfers, 0u);
  std::string summaries;
  for (const auto& f : o.findings) {
    summaries += std::to_string((f.first_seen_ns - o.findings[0].first_seen_ns) / 1000000) + " ms .. " +
                 std::to_string((f.last_seen_ns - o.findings[0].first_seen_ns) / 1000000) + " ms " +
                 (f.open ? "open: " : "closed: ") + f.summary + "\n";
  }
  EXPECT_EQ(o.found, (std::multiset<Named>{{"slowlink", {8, 9, 10, 11}}}))
      << "found:" << show(o.found) << "\n"
      << summaries;
  ASSERT_EQ(o.findings.size(), 1u);
  EXPECT_EQ(o.findings[0].evidence["class"], "endpoint");
  EXPECT_EQ(o.findings[0].evidence["host"], "node2");
}

}  // namespace
