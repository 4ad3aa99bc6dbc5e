// NetAgent: the network side on its own thread. In process: rounds flow, a corruption on another
// node reaches the leader, node findings reach the leader, stop() is prompt. Over Gloo with real
// processes: an observer dies, the survivors re-form the channel in a new epoch, the restarted
// observer joins it and its finding reaches the leader; stop() aborts a rendezvous wait.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "observer/cluster/core_judge.h"
#include "observer/net/agent.h"
#include "observer/net/gloo_channel.h"
#include "observer/net/inproc_channel.h"
#include "test/net/proc_util.h"
#include "test/support/net_workload.h"
#include "test/support/tmpdir.h"

namespace scout::net {
namespace {

using scout::testing::NetWorkload;
constexpr int64_t kSecond = 1000000000;

// In-process "rendezvous": one network per epoch.
class InprocEpochs {
 public:
  explicit InprocEpochs(int size) : size_(size) {}
  std::unique_ptr<Channel> connect(uint64_t epoch, int rank) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& net = nets_[epoch];
    if (!net) net = std::make_unique<InprocNetwork>(size_);
    auto ch = net->connect(rank);
    ch->set_timeout(std::chrono::milliseconds(5000));
    return ch;
  }

 private:
  int size_;
  std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<InprocNetwork>> nets_;
};

AgentOptions fast_options() {
  AgentOptions o;
  o.interval = std::chrono::milliseconds(20);
  o.clock_sync_rounds = 5;
  o.clock_samples = 2;
  o.retry = std::chrono::milliseconds(50);
  return o;
}

TEST(NetAgent, RoundsFlowAndFindingsReachTheLeader) {
  const int n = 4;
  NetWorkload job(n, 4, 1);
  const int guilty = 2 * 4 + 3;
  job.corrupt_fp(guilty, 0);
  InprocEpochs epochs(n);
  obs::CoreJudge judge(obs::HangConfig{});
  MonotonicClock clock;
  std::vector<std::unique_ptr<NetWorkload::Node>> views;
  std::vector<std::unique_ptr<NetAgent>> agents;
  for (int r = 0; r < n; ++r) {
    views.push_back(std::make_unique<NetWorkload::Node>(&job, r, 0));
    agents.push_back(std::make_unique<NetAgent>(
        fast_options(), [&, r](uint64_t e, const std::atomic<bool>&) { return epochs.connect(e, r); },
        [] { return uint64_t(0); }, *views[r], judge, clock));
  }
  obs::Finding mine;
  mine.kind = obs::FindingKind::kNan;
  mine.summary = "from node 1";
  mine.dedup_key = "nan:1";
  agents[1]->submit({mine});
  for (auto& a : agents) a->start();
  std::vector<obs::Finding> at_leader;
  bool sdc = false, nan = false;
  // Simulated job time advances 1 s per 20 ms of real time (one round per simulated second).
  for (int i = 0; i < 2000 && !(sdc && nan); ++i) {
    for (auto& v : views) v->set_time((i / 2 + 1) * kSecond);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto h = agents[0]->take();
    for (auto& f : h.decided) {
      EXPECT_EQ(f.kind, obs::FindingKind::kSdc);
      ASSERT_EQ(f.suspects.size(), 1u);
      EXPECT_EQ(f.suspects[0].global_rank, guilty);
      sdc = true;
    }
    for (auto& f : h.findings) {
      EXPECT_EQ(f.kind, obs::FindingKind::kNan);
      EXPECT_EQ(f.summary, "from node 1");
      nan = true;
    }
    for (int r = 1; r < n; ++r) {
      auto o = agents[r]->take();
      EXPECT_TRUE(o.findings.empty());
      EXPECT_TRUE(o.decided.empty());
    }
  }
  EXPECT_TRUE(sdc);
  EXPECT_TRUE(nan);
  for (auto& a : agents) {
    const auto s = a->status();
    EXPECT_TRUE(s.connected);
    EXPECT_EQ(s.failures, 0u) << s.last_error;
    EXPECT_GE(s.rounds, 2u);
    EXPECT_GT(s.traffic.messages_sent, 0u);
  }
  for (auto& a : agents) a->stop();
}

TEST(NetAgent, StopIsPromptWhileWaitingForAPeer) {
  InprocEpochs epochs(2);
  NetWorkload job(2, 1);
  NetWorkload::Node view(&job, 0, 0);
  obs::CoreJudge judge(obs::HangConfig{});
  MonotonicClock clock;
  // Node 1 never runs: node 0 waits for it in its first collective (timeout 5 s).
  NetAgent a(
      fast_options(), [&](uint64_t e, const std::atomic<bool>&) { return epochs.connect(e, 0); },
      [] { return uint64_t(0); }, view, judge, clock);
  a.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(a.status().connected);
  EXPECT_EQ(a.status().rounds, 0u);
  const auto t0 = std::chrono::steady_clock::now();
  a.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));  // not the 5 s timeout
}

// Job time shared by the processes: simulated seconds since a common start, 10x real time.
int64_t job_time(int64_t start_ns) {
  RealtimeClock c;
  return std::max<int64_t>(0, (c.now_ns() - start_ns) * 10);
}

struct ObserverRun {
  int64_t start_ns;
  std::string rdzv;
  int nodes;
};

// One observer process: runs an agent for `seconds`, reports status and the leader's findings.
std::string run_observer(const ObserverRun& run, int rank, double seconds, const std::string& submit) {
  NetWorkload job(run.nodes, 2, 1, 20000000);
  NetWorkload::Node view(&job, rank, 0);
  obs::CoreJudge judge(obs::HangConfig{});
  RealtimeClock clock;
  AgentOptions opts;
  opts.interval = std::chrono::milliseconds(100);
  opts.retry = std::chrono::milliseconds(100);
  opts.clock_samples = 4;
  GlooOptions base;
  base.rdzv = run.rdzv;
  base.job = "agent";
  base.rank = rank;
  base.size = run.nodes;
  base.hostname = "127.0.0.1";
  base.join_timeout = std::chrono::milliseconds(20000);
  base.timeout = std::chrono::milliseconds(3000);
  NetAgent agent(
      opts,
      [&](uint64_t e, const std::atomic<bool>& stop) -> std::unique_ptr<Channel> {
        GlooOptions o = base;
        o.epoch = e;
        o.cancel = &stop;
        return GlooChannel::connect(o);
      },
      [&] { return GlooChannel::latest_epoch(run.rdzv, "agent"); }, view, judge, clock);
  if (!submit.empty()) {
    obs::Finding f;
    f.kind = obs::FindingKind::kCrash;
    f.summary = submit;
    f.dedup_key = submit;
    agent.submit({f});
  }
  agent.start();
  std::vector<std::string> got;
  uint64_t max_epoch = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
  while (std::chrono::steady_clock::now() < end) {
    view.set_time(job_time(run.start_ns));
    for (auto& f : agent.take().findings) got.push_back(f.summary);
    max_epoch = std::max(max_epoch, agent.status().epoch);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto t0 = std::chrono::steady_clock::now();
  agent.stop();
  const auto stop_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  const auto s = agent.status();
  std::ostringstream out;
  out << "rounds=" << s.rounds << " failures=" << s.failures << " formed=" << s.formed << " epoch=" << max_epoch
      << " stop_ms=" << stop_ms << " last_error=" << s.last_error << " findings=";
  for (auto& g : got) out << g << ";";
  return out.str();
}

uint64_t field(const std::string& report, const std::string& name) {
  const size_t p = report.find(name + "=");
  return p == std::string::npos ? ~0ull : std::stoull(report.substr(p + name.size() + 1));
}

// Node `rank`'s observer dies 1.5 s after it starts, without any goodbye (a forked first
// incarnation that _exits); 0.5 s later a restarted observer runs for `restarted_s` seconds and
// reports the finding "node 2 restarted". Returns the restarted observer's report.
std::string die_and_restart(const ObserverRun& run, int rank, double restarted_s) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::thread killer([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      ::_exit(0);
    });
    run_observer(run, rank, 60.0, "");
    ::_exit(1);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return run_observer(run, rank, restarted_s, "node 2 restarted");
}

TEST(NetAgent, SurvivorsReformAndARestartedObserverRejoins) {
  scout::testing::TempDir tmp;
  ObserverRun run{RealtimeClock().now_ns(), "file:" + tmp.path() + "/rdzv", 3};
  auto res = testing::run_processes(
      3,
      [&](int rank) -> std::string {
        if (rank != 2) return run_observer(run, rank, 7.0, "");
        // Node 2: the first incarnation dies after 1.5 s without any goodbye; a restarted observer
        // joins and reports a finding.
        return die_and_restart(run, rank, 3.0);
      },
      std::chrono::seconds(60));
  for (int r = 0; r < 3; ++r) ASSERT_EQ(res[r].status, 0) << "observer " << r << ": " << res[r].report;
  for (int r = 0; r < 2; ++r) {
    EXPECT_GE(field(res[r].report, "failures"), 1u) << res[r].report;
    EXPECT_GE(field(res[r].report, "epoch"), 1u) << res[r].report;
    // The end of node 2 at 4 s leaves the survivors waiting at the rendezvous: stop() cancels it.
    EXPECT_LT(field(res[r].report, "stop_ms"), 2000u) << res[r].report;
  }
  EXPECT_GE(field(res[2].report, "epoch"), 1u) << res[2].report;
  EXPECT_GT(field(res[2].report, "rounds"), 2u) << res[2].report;
  EXPECT_NE(res[0].report.find("node 2 restarted;"), std::string::npos) << res[0].report;
  for (int r = 0; r < 3; ++r) std::printf("observer %d: %s\n", r, res[r].report.c_str());
}

TEST(NetAgent, ChannelReformsAfterRedisRestartedEmptyWhileAnObserverRestarted) {
  // Redis rendezvous: the channel of 3 observers is formed; redis is killed (its keys are gone);
  // node 2 dies and restarts while redis is away, so the survivors' channel fails and nobody can
  // re-form; redis comes back empty on the same port. The observers must meet again in one epoch
  // (the survivors do not scatter over epochs while the store is away, the markers the store
  // lost are written again, a waiting observer moves to a later epoch that started) and the
  // restarted observer's finding must reach the leader.
  scout::testing::TempDir tmp;
  testing::RedisServer redis(tmp.path());
  if (!redis.ok()) GTEST_SKIP() << "redis rendezvous not tested: " << redis.why();
  const int port = redis.port();
  const pid_t first_redis = redis.pid();
  ObserverRun run{RealtimeClock().now_ns(), "redis:127.0.0.1:" + std::to_string(port), 3};
  auto res = testing::run_processes(
      4,
      [&](int rank) -> std::string {
        if (rank == 3) {
          // The rendezvous store: killed at 1 s, back (empty) at 4 s, until the end.
          std::this_thread::sleep_for(std::chrono::milliseconds(1000));
          ::kill(first_redis, SIGKILL);
          std::this_thread::sleep_for(std::chrono::milliseconds(3000));
          testing::RedisServer again(tmp.path(), port);
          if (!again.ok()) return "redis did not restart: " + again.why();
          std::this_thread::sleep_for(std::chrono::milliseconds(12000));
          return "redis restarted";
        }
        if (rank != 2) return run_observer(run, rank, 15.0, "");
        // Node 2: the first incarnation dies at 1.5 s (redis is down) and restarts at 2 s, while
        // redis is still down.
        return die_and_restart(run, rank, 12.0);
      },
      std::chrono::seconds(60));
  ASSERT_EQ(res[3].report, "redis restarted");
  for (int r = 0; r < 3; ++r) ASSERT_EQ(res[r].status, 0) << "observer " << r << ": " << res[r].report;
  for (int r = 0; r < 3; ++r) std::printf("observer %d: %s\n", r, res[r].report.c_str());
  for (int r = 0; r < 2; ++r) {
    EXPECT_GE(field(res[r].report, "formed"), 2u) << res[r].report;  // re-formed at least once
    EXPECT_GE(field(res[r].report, "failures"), 1u) << res[r].report;
  }
  EXPECT_GE(field(res[2].report, "formed"), 1u) << res[2].report;
  EXPECT_GT(field(res[2].report, "rounds"), 2u) << res[2].report;
  EXPECT_NE(res[0].report.find("node 2 restarted;"), std::string::npos) << res[0].report;
}

}  // namespace
}  // namespace scout::net
