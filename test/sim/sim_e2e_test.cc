// End to end: scout-sim's ranks load the real libnccl-profiler-scout.so; what the plugin wrote to
// shared memory is read back with SegmentReader. A healthy 8-rank TP=2 PP=2 DP=2 job records the
// same keys on every member of every communicator; each fault kind changes exactly what it
// should on exactly the injected rank.
//
// The plugin is the one scout-sim picks (NCCL_PROFILER_PLUGIN if set in this test's environment,
// else the one in the build; scripts/run-tests.sh removes the variable). A plugin that does not
// load, whose init crashes, or that activates nothing fails every test here, naming why; one that
// takes no fingerprint fails the fingerprint and NaN tests.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test/sim/comm_hash.h"
#include "test/sim/job_segments.h"
#include "test/sim/launcher.h"
#include "test/sim/nccl_plugin_loader.h"
#include "test/support/subprocess.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using namespace scout::sim;
using scout::testing::truth_lines;
namespace shm = scout::shm;
using scout::testing::build_path;
using scout::testing::ProcessResult;
using scout::testing::run_process;
using scout::testing::Subprocess;
using scout::testing::TempDir;

std::string plugin_path() {
  const char* p = std::getenv("NCCL_PROFILER_PLUGIN");
  return p && *p ? p : build_path("lib/libnccl-profiler-scout.so");
}

// Whether the plugin records anything: its init, called in a child process (so its segment lands
// in a scratch directory and nothing stays loaded here), sets a non-zero activation mask. Returns
// that mask, or -1 with `why` set when the plugin did not load or the child did not exit cleanly.
int probe_mask(std::string* why) {
  TempDir scratch;
  int fds[2];
  if (::pipe(fds) != 0) {
    *why = "pipe failed";
    return -1;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::setenv("SCOUT_SHM_DIR", scratch.path().c_str(), 1);
    ::setenv("SCOUT_JOB_ID", "probe", 1);
    int mask = 0;
    LoadedPlugin p = load_profiler_plugin(plugin_path().c_str());
    if (!p.v5) {
      std::string e = "no ncclProfiler_v5 table: " + (p.ok() ? "loaded version " + std::to_string(p.version) : p.error);
      mask = -1;
      ssize_t w = ::write(fds[1], &mask, sizeof(mask));
      w += ::write(fds[1], e.data(), e.size());
      ::_exit(w > 0 ? 0 : 1);
    }
    void* ctx = nullptr;
    p.v5->init(&ctx, 1, &mask, "probe", 1, 2, 0, nullptr);
    if (ctx) p.v5->finalize(ctx);
    ssize_t w = ::write(fds[1], &mask, sizeof(mask));
    ::_exit(w == sizeof(mask) ? 0 : 1);
  }
  ::close(fds[1]);
  int mask = -1;
  if (::read(fds[0], &mask, sizeof(mask)) != sizeof(mask)) mask = -1;
  char buf[512];
  ssize_t n = ::read(fds[0], buf, sizeof(buf));
  if (n > 0) *why = std::string(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (WIFSIGNALED(st)) {
    *why = "the probe died of signal " + std::to_string(WTERMSIG(st)) + " in the plugin's init";
    return -1;
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    if (why->empty()) *why = "the probe exited with status " + std::to_string(WEXITSTATUS(st));
    return -1;
  }
  return mask;
}

using CollKey = std::tuple<uint64_t, uint8_t, uint64_t>;  // commHash, func, seqNumber

struct JobView {
  std::vector<RankSegment> segs;
  std::map<uint64_t, std::string> comm_name;
  // (commHash, func, key) -> (global rank -> record)
  std::map<CollKey, std::map<int, shm::RecordSnapshot>> colls;
  // (commHash, from comm rank, to comm rank, key) -> send / recv record
  std::map<std::tuple<uint64_t, int, int, uint64_t>, shm::RecordSnapshot> sends, recvs;
  std::map<int, std::map<uint64_t, int>> comm_rank;  // global rank -> commHash -> comm rank

  explicit JobView(std::vector<RankSegment> s) : segs(std::move(s)) {
    for (const RankSegment& seg : segs)
      for (const RingRecords& rr : seg.rings) {
        comm_name[rr.comm.comm_hash] = rr.comm.name;
        comm_rank[seg.info.global_rank][rr.comm.comm_hash] = rr.comm.rank;
        for (const shm::RecordSnapshot& r : rr.records) {
          if (r.kind == shm::kKindColl) colls[{rr.comm.comm_hash, r.func, r.key}][seg.info.global_rank] = r;
          if (r.kind == shm::kKindSend) sends[{rr.comm.comm_hash, rr.comm.rank, r.peer, r.key}] = r;
          if (r.kind == shm::kKindRecv) recvs[{rr.comm.comm_hash, r.peer, rr.comm.rank, r.key}] = r;
        }
      }
  }
  uint64_t hash_of(const std::string& name) const {
    for (auto& [h, n] : comm_name)
      if (n == name) return h;
    return 0;
  }
  bool any_fp_done() const {
    for (auto& [k, m] : colls)
      for (auto& [g, r] : m)
        if (r.fp_recv_status == shm::kFpDone) return true;
    return false;
  }
};

bool output_compared(uint8_t func) {
  return func == shm::kFuncAllReduce || func == shm::kFuncAllGather || func == shm::kFuncBroadcast;
}

class SimE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { mask_ = probe_mask(&probe_why_); }
  void SetUp() override {
    ASSERT_GT(mask_, 0) << "the profiler plugin " << plugin_path()
                        << (mask_ < 0 ? " could not be probed: " + probe_why_
                                      : std::string(" records nothing: its init left the activation mask at 0"));
  }
  std::map<std::string, std::string> env() const {
    return {{"SCOUT_SHM_DIR", dir_.path()},
            {"SCOUT_MAX_COMMS", "8"},
            {"NCCL_DEBUG", ""},
            {"NCCL_PROFILER_PLUGIN", plugin_path()}};
  }
  std::vector<std::string> argv(const std::string& job, std::vector<std::string> extra) const {
    std::vector<std::string> a = {build_path("bin/scout-sim"),
                                  "--ranks",
                                  "8",
                                  "--tp",
                                  "2",
                                  "--pp",
                                  "2",
                                  "--bytes",
                                  "16K",
                                  "--job",
                                  job,
                                  "--truth",
                                  truth(job)};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  // Runs a job to completion; expects exit 0.
  JobView run(const std::string& job, std::vector<std::string> extra) {
    ProcessResult r = run_process(argv(job, extra), env(), 120);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return JobView(read_job_segments(dir_.path(), job));
  }
  std::string truth(const std::string& job) const { return dir_.path() + "/" + job + ".truth.jsonl"; }

  static int mask_;
  static std::string probe_why_;
  TempDir dir_;
};
int SimE2E::mask_ = 0;
std::string SimE2E::probe_why_;

TEST_F(SimE2E, HealthyJobEveryMemberRecordsTheSameKeys) {
  JobView v = run("healthy", {"--steps", "20"});
  ASSERT_EQ(v.segs.size(), 8u);
  for (int g = 0; g < 8; ++g) {
    const RankSegment& s = v.segs[g];
    EXPECT_EQ(s.info.global_rank, g);
    EXPECT_EQ(s.info.world_size, 8);
    EXPECT_EQ(s.info.local_rank, g);
    EXPECT_EQ(s.info.job, "healthy");
    EXPECT_EQ(s.rings.size(), 4u);  // world, tp, dp, pp
  }
  // commHash values as scout-sim derives them (docs/nccl-notes.md §3.7): world from the unique id of seed 1,
  // the others split from world with counter tp=0, dp=1, pp=2 and color = group index.
  uint64_t world = root_comm_hash(make_unique_id(1));
  EXPECT_EQ(v.hash_of("world"), world);
  EXPECT_EQ(v.hash_of("tp3"), split_comm_hash(world, 0, 3));
  EXPECT_EQ(v.hash_of("dp1"), split_comm_hash(world, 1, 1));
  EXPECT_EQ(v.hash_of("pp0"), split_comm_hash(world, 2, 0));
  EXPECT_EQ(v.comm_name.size(), 1u + 4 + 4 + 4);

  std::map<std::string, int> keys_per_kind;
  for (const auto& [key, by_rank] : v.colls) {
    const auto& [hash, func, seq] = key;
    const std::string& name = v.comm_name[hash];
    SCOPED_TRACE(name + " func " + std::to_string(func) + " seq " + std::to_string(seq));
    EXPECT_EQ(by_rank.size(), name == "world" ? 8u : 2u);  // every member recorded the key
    for (const auto& [g, r] : by_rank) {
      EXPECT_EQ(r.count, by_rank.begin()->second.count);
      EXPECT_EQ(r.state, shm::kStateComplete);
      EXPECT_EQ(r.ch_stopped, r.n_channels);
    }
    keys_per_kind[name.substr(0, 2)]++;
  }
  // tp: 4 collectives x 20 steps per group; dp: 4 buckets x 20; world: Broadcast at steps 0, 10.
  EXPECT_EQ(keys_per_kind["tp"], 4 * 80);
  EXPECT_EQ(keys_per_kind["dp"], 4 * 80);
  EXPECT_EQ(keys_per_kind["wo"], 2);
  // Every send #k from a to b pairs with recv #k of b from a, with the same count.
  EXPECT_EQ(v.sends.size(), 4u * 2 * 20);
  EXPECT_EQ(v.recvs.size(), v.sends.size());
  for (const auto& [k, s] : v.sends) {
    auto it = v.recvs.find(k);
    ASSERT_NE(it, v.recvs.end());
    EXPECT_EQ(it->second.count, s.count);
    EXPECT_EQ(it->second.state, shm::kStateComplete);
  }
}

TEST_F(SimE2E, ReceivedFingerprintsOfAllReduceAgreeWithinEachCommunicator) {
  JobView v = run("fpagree", {"--steps", "5"});
  ASSERT_TRUE(v.any_fp_done()) << "no record has fp_recv_status == kFpDone: the plugin took no fingerprint";
  int compared = 0;
  for (const auto& [key, by_rank] : v.colls) {
    if (!output_compared(std::get<1>(key))) continue;
    const shm::RecordSnapshot& first = by_rank.begin()->second;
    for (const auto& [g, r] : by_rank) {
      ASSERT_EQ(r.fp_recv_status, shm::kFpDone) << v.comm_name[std::get<0>(key)] << " rank " << g;
      EXPECT_EQ(r.fp_recv, first.fp_recv) << v.comm_name[std::get<0>(key)] << " rank " << g;
      ++compared;
    }
  }
  EXPECT_GT(compared, 100);
}

TEST_F(SimE2E, SdcChangesTheInjectedRanksReceivedFingerprintForThatKeyOnly) {
  JobView v = run("sdc", {"--steps", "3", "--fault", "sdc:rank=3,op=4"});
  ASSERT_TRUE(v.any_fp_done()) << "no record has fp_recv_status == kFpDone: the plugin took no fingerprint";
  auto t = truth_lines(truth("sdc"));
  ASSERT_EQ(t.size(), 1u);
  const CollKey hit{v.hash_of(t[0]["comm"]["name"]), shm::kFuncAllReduce, t[0]["key"]["seq"].get<uint64_t>()};
  EXPECT_EQ(t[0]["comm"]["name"], "tp1");
  for (const auto& [key, by_rank] : v.colls) {
    if (!output_compared(std::get<1>(key))) continue;
    std::map<uint64_t, int> votes;
    for (const auto& [g, r] : by_rank) ++votes[r.fp_recv];
    if (key == hit) {
      EXPECT_EQ(votes.size(), 2u);
      EXPECT_NE(by_rank.at(3).fp_recv, by_rank.at(2).fp_recv);
    } else {
      EXPECT_EQ(votes.size(), 1u) << v.comm_name[std::get<0>(key)] << " seq " << std::get<2>(key);
    }
  }
}

TEST_F(SimE2E, NanShowsInTheInjectedRanksSendCountsOnly) {
  JobView v = run("nan", {"--steps", "3", "--fault", "nan:rank=5,op=1"});
  auto t = truth_lines(truth("nan"));
  ASSERT_EQ(t.size(), 1u);
  const CollKey hit{v.hash_of("tp2"), shm::kFuncAllReduce, 0};
  bool checked = false;
  for (const auto& [key, by_rank] : v.colls)
    for (const auto& [g, r] : by_rank) {
      if (r.fp_send_status != shm::kFpDone) continue;
      checked = true;
      EXPECT_EQ(r.send_nan, key == hit && g == 5 ? 1u : 0u) << v.comm_name[std::get<0>(key)] << " rank " << g;
    }
  ASSERT_TRUE(checked) << "no record has fp_send_status == kFpDone: the plugin took no send fingerprint";
  ASSERT_TRUE(v.colls.count(hit));
  EXPECT_EQ(v.colls[hit].at(5).fp_send_status, shm::kFpDone);
}

TEST_F(SimE2E, DesyncChangesTheInjectedRanksCountForThatKeyOnly) {
  JobView v = run("desync", {"--steps", "3", "--fault", "desync:rank=2,op=2"});
  const CollKey hit{v.hash_of("tp1"), shm::kFuncAllGather, 0};
  ASSERT_TRUE(v.colls.count(hit));
  for (const auto& [key, by_rank] : v.colls)
    for (const auto& [g, r] : by_rank) {
      uint64_t others = 0;
      for (const auto& [g2, r2] : by_rank)
        if (g2 != g) others = r2.count;
      EXPECT_EQ(r.count != others, key == hit) << v.comm_name[std::get<0>(key)] << " rank " << g;
    }
  EXPECT_EQ(v.colls[hit].at(2).count, 4096u);  // 1024 floats as ncclInt8 bytes
  EXPECT_EQ(v.colls[hit].at(3).count, 8192u);
}

// The scheduler's jitter on a loaded 2-core machine: lateness is M minus at most this.
constexpr int64_t kSchedulingSlackMs = 25;

TEST_F(SimE2E, StragglerStartsLateOnEveryOperationFromItsStep) {
  const int64_t M = 100;
  JobView v = run("straggler", {"--steps", "3", "--fault", "straggler:rank=1,step=1,ms=100"});
  int late = 0, on_time = 0;
  for (const auto& [key, by_rank] : v.colls) {
    if (!by_rank.count(1)) continue;
    int64_t mine = by_rank.at(1).gpu_start_ns, others = INT64_MAX;
    for (const auto& [g, r] : by_rank)
      if (g != 1) others = std::min<int64_t>(others, r.gpu_start_ns);
    int64_t lateness = (mine - others) / 1000000;
    if (lateness >= M - kSchedulingSlackMs)
      ++late;
    else
      ++on_time;
  }
  // Rank 1's collectives of steps 1-2: 2 TP AllReduce, AllGather, ReduceScatter, 4 DP buckets.
  EXPECT_EQ(late, 16);
  EXPECT_EQ(on_time, 8 + 1);  // step 0's 8 and its Broadcast
}

TEST_F(SimE2E, SlowlinkMakesOperationsWithBothRanksLonger) {
  const int64_t M = 100;
  JobView v = run("slowlink", {"--steps", "3", "--fault", "slowlink:rank=0,peer=1,step=1,ms=100"});
  uint64_t tp0 = v.hash_of("tp0");
  int slow = 0;
  for (const auto& [key, by_rank] : v.colls) {
    if (std::get<0>(key) != tp0) continue;
    uint64_t per_step = std::get<1>(key) == shm::kFuncAllReduce ? 2 : 1;
    for (const auto& [g, r] : by_rank) {
      int64_t dur = (r.gpu_end_ns - r.gpu_start_ns) / 1000000;
      if (std::get<2>(key) >= per_step) {
        EXPECT_GE(dur, M) << "rank " << g;
        ++slow;
      } else {
        EXPECT_LT(dur, M / 2) << "rank " << g;
      }
    }
  }
  EXPECT_EQ(slow, 2 * 2 * 4);
}

// Polls the job's segments until `ready` holds (or 30 s pass).
template <class F>
JobView wait_for_view(const std::string& dir, const std::string& job, F ready) {
  for (int i = 0; i < 300; ++i) {
    JobView v(read_job_segments(dir, job));
    if (ready(v)) return v;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return JobView(read_job_segments(dir, job));
}

TEST_F(SimE2E, HangLeavesNoRecordOnTheHungRankWhileItsPeerRuns) {
  // Rank 1's op 5 is its backward TP AllReduce of step 0: tp0, AllReduce seq 1.
  Subprocess p(argv("hang", {"--steps", "50", "--fault", "hang:rank=1,op=5", "--timeout", "60"}), env());
  CollKey key;
  JobView v = wait_for_view(dir_.path(), "hang", [&](const JobView& v) {
    key = CollKey{v.hash_of("tp0"), shm::kFuncAllReduce, 1};
    auto it = v.colls.find(key);
    return it != v.colls.end() && it->second.count(0) && it->second.at(0).state == shm::kStateRunning;
  });
  ASSERT_TRUE(v.colls.count(key));
  EXPECT_EQ(v.colls[key].count(1), 0u);  // the hung rank never issued it
  EXPECT_EQ(v.colls[key].at(0).state, shm::kStateRunning);
  EXPECT_EQ(v.colls[key].size(), 1u);
  // The hung rank's earlier operation was recorded and completed.
  const CollKey before{v.hash_of("tp0"), shm::kFuncAllReduce, 0};
  EXPECT_EQ(v.colls[before].at(1).state, shm::kStateComplete);
  auto t = truth_lines(truth("hang"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["key"]["seq"], 1);
  p.signal(SIGTERM);
  ProcessResult r = p.wait(20);
  EXPECT_EQ(r.exit_code, kExitInterrupted) << r.out;
  // The segments stay for the observer.
  EXPECT_EQ(read_job_segments(dir_.path(), "hang").size(), 8u);
}

TEST_F(SimE2E, CrashLeavesTheRanksSegmentWithADeadOwner) {
  // Rank 2's op 1 is its first TP AllReduce (op 0 is the forward pipeline send): tp1, seq 0.
  Subprocess p(argv("crash", {"--steps", "50", "--fault", "crash:rank=2,op=1", "--timeout", "60"}), env());
  JobView v = wait_for_view(dir_.path(), "crash", [&](const JobView& v) {
    if (v.segs.size() != 8 || v.segs[2].owner_alive) return false;
    auto it = v.colls.find(CollKey{v.hash_of("tp1"), shm::kFuncAllReduce, 0});
    return it != v.colls.end() && it->second.count(3) && it->second.at(3).state == shm::kStateRunning;
  });
  ASSERT_EQ(v.segs.size(), 8u);
  for (int g = 0; g < 8; ++g) EXPECT_EQ(v.segs[g].owner_alive, g != 2) << "rank " << g;
  const CollKey key{v.hash_of("tp1"), shm::kFuncAllReduce, 0};
  ASSERT_TRUE(v.colls.count(key));
  ASSERT_TRUE(v.colls[key].count(2));
  auto t = truth_lines(truth("crash"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]["key"]["func"], "AllReduce");
  EXPECT_EQ(t[0]["key"]["seq"], 0);
  EXPECT_EQ(v.colls[key].at(2).state, shm::kStateRunning);  // died with the kernel running
  EXPECT_EQ(v.colls[key].at(3).state, shm::kStateRunning);  // its peer waits inside it
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(20).exit_code, kExitInterrupted);
}

}  // namespace
