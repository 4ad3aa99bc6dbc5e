// Each fault kind changes exactly what it should on exactly the injected rank, seen the way a
// fingerprinting plugin sees it (the recording plugin hashes send buffers at Coll/P2p start and
// receive buffers at KernelCh completion), with the ground-truth line naming that operation.
// Ranks run as threads of this process (InProcJob); hang and crash, which stop a process, are
// covered by sim_cli_test through the binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "test/sim/data.h"
#include "test/sim/inproc_job.h"
#include "test/sim/recording_plugin.h"
#include "test/support/tmpdir.h"
#include "test/support/truth.h"

namespace {

using namespace scout::sim;
using scout::testing::truth_lines;
namespace abi = scout::abi;
using scout::testing::TempDir;

SimOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "scout-sim");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  SimOptions o;
  std::string msg;
  EXPECT_EQ(parse_options(static_cast<int>(argv.size()), argv.data(), &o, &msg), ParseStatus::kOk) << msg;
  return o;
}

// One recorded task with the identity a record carries.
struct Op {
  int g = -1;        // global rank
  std::string comm;  // commName
  int comm_rank = -1;
  std::string func;
  uint64_t key = 0;  // seqNumber, or per-(comm, peer, direction) counter for Send/Recv
  int peer = -1;     // p2p peer comm rank
  uint64_t count = 0;
  RecordedTask t;
};

std::vector<Op> collect(const InProcJob& job) {
  auto calls = CallRecorder::calls();
  std::map<std::tuple<void*, int, std::string>, uint64_t> p2p_counter;
  std::vector<Op> ops;
  for (const RecordedTask& t : CallRecorder::tasks()) {
    const RecordedCall* init = CallRecorder::init_of(calls, t.context);
    if (!init) continue;
    Op op;
    op.comm = init->comm_name;
    op.comm_rank = init->rank;
    for (const CommSpec& s : job.layout().comms())
      if (s.name == op.comm) op.g = s.members[op.comm_rank];
    op.t = t;
    if (t.descr.type == abi::kEvColl) {
      op.func = t.descr.coll.func;
      op.key = t.descr.coll.seqNumber;
      op.count = t.descr.coll.count;
    } else {
      op.func = t.descr.p2p.func;
      op.peer = t.descr.p2p.peer;
      op.key = p2p_counter[{t.context, op.peer, op.func}]++;
      op.count = t.descr.p2p.count;
    }
    ops.push_back(op);
  }
  return ops;
}

using Key = std::tuple<std::string, std::string, uint64_t>;  // comm, func, seq

std::map<Key, std::vector<Op>> colls_by_key(const std::vector<Op>& ops) {
  std::map<Key, std::vector<Op>> m;
  for (const Op& o : ops)
    if (o.t.descr.type == abi::kEvColl) m[{o.comm, o.func, o.key}].push_back(o);
  return m;
}

bool output_compared(const std::string& func) {
  return func == "AllReduce" || func == "AllGather" || func == "Broadcast";
}

// XXH64 of the AllReduce of fill_input(seed, g, op) over `ranks` (in order), `count` floats.
uint64_t allreduce_hash(uint64_t seed, std::vector<int> ranks, uint64_t op, uint64_t count) {
  std::vector<float> sum(count, 0.0f), in(count);
  for (int g : ranks) {
    fill_input(in.data(), count, seed, g, op);
    for (uint64_t e = 0; e < count; ++e) sum[e] += in[e];
  }
  return XXH64(sum.data(), count * sizeof(float), 0);
}

class Faults : public ::testing::Test {
 protected:
  void SetUp() override { CallRecorder::reset(0xFFF); }
  // Runs the job's steps on threads with the recording plugin; returns its tasks.
  std::vector<Op> run(const SimOptions& o) {
    job_ = std::make_unique<InProcJob>(o, &prof_, truth_path());
    job_->run([](RankJob& r, int) { r.run_steps(); });
    return collect(*job_);
  }
  std::string truth_path() const { return dir_.path() + "/truth.jsonl"; }
  TempDir dir_;
  ProfilerDriver prof_{CallRecorder::table()};
  std::unique_ptr<InProcJob> job_;
};

const std::vector<std::string> kBase = {"--ranks", "8", "--tp", "2", "--pp", "2", "--steps", "3", "--bytes", "16K"};

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> a = kBase;
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST_F(Faults, HealthyRunEveryRankRecordsTheSameKeysAndBytes) {
  SimOptions o = parse(kBase);
  std::vector<Op> ops = run(o);
  ASSERT_FALSE(ops.empty());
  for (const auto& [key, v] : colls_by_key(ops)) {
    const auto& [comm, func, seq] = key;
    SCOPED_TRACE(comm + " " + func + " " + std::to_string(seq));
    const CommSpec* spec = nullptr;
    for (const CommSpec& s : job_->layout().comms())
      if (s.name == comm) spec = &s;
    ASSERT_NE(spec, nullptr);
    ASSERT_EQ(v.size(), spec->members.size());  // every member recorded the key
    std::set<int> ranks;
    for (const Op& o : v) {
      ranks.insert(o.comm_rank);
      EXPECT_EQ(o.count, v[0].count);
      EXPECT_TRUE(o.t.complete());
      EXPECT_EQ(o.t.send_nan, 0u);
      if (output_compared(func)) { EXPECT_EQ(o.t.recv_hash, v[0].t.recv_hash); }
    }
    EXPECT_EQ(static_cast<int>(ranks.size()), spec->nranks());
  }
  // Point-to-point: send #k from a to b delivered exactly what recv #k of b from a received.
  std::map<std::tuple<std::string, int, int, uint64_t>, const Op*> sends;
  for (const Op& o : ops)
    if (o.func == "Send") sends[{o.comm, o.comm_rank, o.peer, o.key}] = &o;
  int matched = 0;
  for (const Op& o : ops) {
    if (o.func != "Recv") continue;
    auto it = sends.find({o.comm, o.peer, o.comm_rank, o.key});
    ASSERT_NE(it, sends.end());
    EXPECT_EQ(it->second->count, o.count);
    EXPECT_EQ(it->second->t.send_hash, o.t.recv_hash);
    ++matched;
  }
  // 4 pipeline pairs x 2 directions x 3 steps.
  EXPECT_EQ(matched, 24);
  // The per-rank totals follow the workload: rank 0 issues 10 ops a step plus the Broadcast of step 0.
  int rank0 = 0;
  for (const Op& o : ops) rank0 += o.g == 0;
  EXPECT_EQ(rank0, 31);
  EXPECT_TRUE(truth_lines(truth_path()).empty());
}

TEST_F(Faults, SdcFlipsOneBitOfTheInjectedRanksOutputOnly) {
  // Rank 3's operation 4 is a Recv (backward pipeline exchange of step 0); the first
  // AllReduce/AllGather/Broadcast at or after it is op 5, the backward TP AllReduce (tp1, seq 1).
  SimOptions o = parse(with({"--fault", "sdc:rank=3,op=4"}));
  ASSERT_EQ(o.faults[0].target_op, 5);
  std::vector<Op> ops = run(o);
  auto truth = truth_lines(truth_path());
  ASSERT_EQ(truth.size(), 1u);
  EXPECT_EQ(truth[0]["kind"], "sdc");
  EXPECT_EQ(truth[0]["global_rank"], 3);
  EXPECT_EQ(truth[0]["comm"]["name"], "tp1");
  EXPECT_EQ(truth[0]["key"]["func"], "AllReduce");
  EXPECT_EQ(truth[0]["key"]["seq"], 1);
  EXPECT_EQ(truth[0]["op"], 5);
  EXPECT_EQ(truth[0]["step"], 0);
  int keys_checked = 0;
  for (const auto& [key, v] : colls_by_key(ops)) {
    if (!output_compared(std::get<1>(key))) continue;
    ++keys_checked;
    const bool hit = key == Key{"tp1", "AllReduce", 1};
    // Ranks whose output differs from the majority of the communicator.
    std::map<uint64_t, int> votes;
    for (const Op& op : v) ++votes[op.t.recv_hash];
    uint64_t majority = 0;
    int best = 0;
    for (auto& [h, n] : votes)
      if (n > best) best = n, majority = h;
    std::vector<int> deviants;
    for (const Op& op : v)
      if (op.t.recv_hash != majority) deviants.push_back(op.g);
    if (hit) {
      // tp1 has two ranks: they disagree, and rank 3's output is the one with a flipped bit:
      // rank 2 holds exactly in2 + in3 of operation 5 (4096 floats, seed 1).
      ASSERT_EQ(votes.size(), 2u);
      uint64_t want = allreduce_hash(o.seed, {2, 3}, 5, 4096);
      for (const Op& op : v) { EXPECT_EQ(op.t.recv_hash == want, op.g == 2) << "rank " << op.g; }
    } else {
      EXPECT_TRUE(deviants.empty()) << std::get<0>(key) << " " << std::get<1>(key) << " " << std::get<2>(key);
    }
  }
  EXPECT_GT(keys_checked, 10);
}

TEST_F(Faults, NanAppearsInTheInjectedRanksSendBufferOnly) {
  // Rank 5's op 1 is its first TP AllReduce (tp2, seq 0).
  SimOptions o = parse(with({"--fault", "nan:rank=5,op=1"}));
  std::vector<Op> ops = run(o);
  auto truth = truth_lines(truth_path());
  ASSERT_EQ(truth.size(), 1u);
  EXPECT_EQ(truth[0]["kind"], "nan");
  EXPECT_EQ(truth[0]["global_rank"], 5);
  EXPECT_EQ(truth[0]["comm"]["name"], "tp2");
  EXPECT_EQ(truth[0]["key"]["func"], "AllReduce");
  EXPECT_EQ(truth[0]["key"]["seq"], 0);
  int with_nan = 0;
  for (const Op& op : ops) {
    bool hit = op.comm == "tp2" && op.func == "AllReduce" && op.key == 0;
    if (op.t.send_nan) ++with_nan;
    EXPECT_EQ(op.t.send_nan, hit && op.g == 5 ? 1u : 0u) << op.comm << " " << op.func << " " << op.key;
    if (hit) {
      EXPECT_EQ(op.t.recv_nan, 1u);  // the reduction spreads it to every rank's output
    }
  }
  EXPECT_EQ(with_nan, 1);
}

TEST_F(Faults, DesyncChangesTheCountOfTheInjectedRankOnly) {
  // Rank 2's op 2 is its forward TP AllGather (tp1, seq 0): sendcount 4096/2 = 2048 floats, which
  // the Coll task reports in bytes (8192); the desynchronized rank issues 2048 - 1024 = 1024.
  SimOptions o = parse(with({"--fault", "desync:rank=2,op=2"}));
  std::vector<Op> ops = run(o);
  auto truth = truth_lines(truth_path());
  ASSERT_EQ(truth.size(), 1u);
  EXPECT_EQ(truth[0]["kind"], "desync");
  EXPECT_EQ(truth[0]["key"]["func"], "AllGather");
  EXPECT_EQ(truth[0]["key"]["seq"], 0);
  EXPECT_EQ(truth[0]["detail"]["count"], 2048);
  EXPECT_EQ(truth[0]["detail"]["issued"], 1024);
  bool seen = false;
  for (const auto& [key, v] : colls_by_key(ops)) {
    if (key == Key{"tp1", "AllGather", 0}) {
      seen = true;
      for (const Op& op : v) EXPECT_EQ(op.count, op.g == 2 ? 4096u : 8192u) << "rank " << op.g;
    } else {
      for (const Op& op : v) EXPECT_EQ(op.count, v[0].count) << std::get<0>(key) << " " << std::get<1>(key);
    }
  }
  EXPECT_TRUE(seen);
}

// Lateness of rank g on one collective: its KernelCh start minus the earliest other start.
int64_t lateness_ms(const std::vector<Op>& v, int g) {
  uint64_t mine = 0, others = UINT64_MAX;
  for (const Op& o : v) {
    if (o.g == g)
      mine = o.t.gpu_start;
    else
      others = std::min(others, o.t.gpu_start);
  }
  return (static_cast<int64_t>(mine) - static_cast<int64_t>(others)) / 1000000;
}

// The scheduler's jitter on a loaded 2-core machine: lateness is M minus at most this.
constexpr int64_t kSchedulingSlackMs = 25;

TEST_F(Faults, StragglerArrivesLateOnEveryOperationFromItsStep) {
  const int64_t M = 100;
  SimOptions o = parse(with({"--fault", "straggler:rank=1,step=1,ms=100"}));
  std::vector<Op> ops = run(o);
  auto truth = truth_lines(truth_path());
  ASSERT_EQ(truth.size(), 1u);
  EXPECT_EQ(truth[0]["kind"], "straggler");
  EXPECT_EQ(truth[0]["global_rank"], 1);
  EXPECT_EQ(truth[0]["step"], 1);
  EXPECT_EQ(truth[0]["ms"], 100);
  // Which step each of rank 1's collectives belongs to: rank 1 issues 11 ops in step 0.
  std::map<Key, int> late_keys;
  for (const auto& [key, v] : colls_by_key(ops)) {
    bool has1 = std::any_of(v.begin(), v.end(), [](const Op& op) { return op.g == 1; });
    if (!has1) continue;  // elsewhere ranks wait for rank 1 indirectly: late, but not the cause
    for (const Op& op : v) {
      if (op.g == 1) continue;
      EXPECT_LT(lateness_ms(v, op.g), M / 2) << "rank " << op.g << " is not the straggler";
    }
    int64_t late = lateness_ms(v, 1);
    if (late >= M - kSchedulingSlackMs)
      late_keys[key] = 1;
    else
      EXPECT_LT(late, M / 2);
  }
  // Rank 1's collectives in steps 1 and 2: TP AllReduce x2, AllGather, ReduceScatter, 4 DP
  // AllReduce buckets per step = 16 (the step-0 ones are on time).
  EXPECT_EQ(late_keys.size(), 16u);
  EXPECT_TRUE(late_keys.count({"tp0", "AllReduce", 2}));   // first TP AllReduce of step 1
  EXPECT_FALSE(late_keys.count({"tp0", "AllReduce", 1}));  // last of step 0
}

TEST_F(Faults, SlowlinkDelaysOperationsWithBothEndsOnly) {
  const int64_t M = 100;
  // Ranks 0 and 1 share tp0 (and world); from step 1 every tp0 operation takes >= M.
  SimOptions o = parse(with({"--fault", "slowlink:rank=0,peer=1,step=1,ms=100"}));
  std::vector<Op> ops = run(o);
  auto truth = truth_lines(truth_path());
  ASSERT_EQ(truth.size(), 1u);
  EXPECT_EQ(truth[0]["kind"], "slowlink");
  EXPECT_EQ(truth[0]["global_rank"], 0);
  EXPECT_EQ(truth[0]["peer"], 1);
  EXPECT_EQ(truth[0]["comm"]["name"], "tp0");
  EXPECT_EQ(truth[0]["key"]["seq"], 2);  // first tp0 AllReduce of step 1
  int slow = 0;
  for (const Op& op : ops) {
    if (op.comm != "tp0") continue;
    int64_t dur_ms = static_cast<int64_t>(op.t.gpu_end - op.t.gpu_start) / 1000000;
    // tp0 runs 4 collectives per step; keys >= 4 of AllReduce (2 per step) etc. are from step 1 on.
    int per_step = op.func == "AllReduce" ? 2 : 1;
    bool from_step1 = op.key >= static_cast<uint64_t>(per_step);
    if (from_step1) {
      EXPECT_GE(dur_ms, M) << op.func << " " << op.key << " rank " << op.g;
      ++slow;
    }
  }
  EXPECT_EQ(slow, 2 * 2 * 4);  // 2 ranks x 2 steps x 4 collectives
  // Step 0 of the same communicator was fast.
  for (const Op& op : ops) {
    int per_step = op.func == "AllReduce" ? 2 : 1;
    if (op.comm == "tp0" && op.key < static_cast<uint64_t>(per_step)) {
      EXPECT_LT(static_cast<int64_t>(op.t.gpu_end - op.t.gpu_start) / 1000000, M / 2);
    }
  }
}

TEST_F(Faults, SlowlinkBetweenPipelineStagesDelaysTheirMessages) {
  const int64_t M = 100;
  SimOptions o = parse(with({"--fault", "slowlink:rank=0,peer=4,step=1,ms=100"}));  // pp0 = {0, 4}
  std::vector<Op> ops = run(o);
  auto truth = truth_lines(truth_path());
  ASSERT_EQ(truth.size(), 1u);
  EXPECT_EQ(truth[0]["comm"]["name"], "pp0");
  int slow = 0;
  for (const Op& op : ops) {
    if (op.comm != "pp0") continue;
    int64_t dur_ms = static_cast<int64_t>(op.t.gpu_end - op.t.gpu_start) / 1000000;
    if (op.key >= 1) {  // one message per direction per step: key k is step k
      EXPECT_GE(dur_ms, M) << op.func << " " << op.key << " rank " << op.g;
      ++slow;
    }
  }
  EXPECT_EQ(slow, 2 * 2 * 2);  // 2 ranks x (send + recv) x 2 steps
  // Before step 1 the same messages were fast.
  for (const Op& op : ops) {
    if (op.comm == "pp0" && op.key == 0) {
      EXPECT_LT(static_cast<int64_t>(op.t.gpu_end - op.t.gpu_start) / 1000000, M / 2);
    }
  }
}

TEST_F(Faults, SeveralFaultsAtOnceEachWriteTheirLine) {
  SimOptions o = parse(
      with({"--fault", "sdc:rank=3,op=4", "--fault", "nan:rank=5,op=1", "--fault", "straggler:rank=6,step=2,ms=10"}));
  std::vector<Op> ops = run(o);
  auto truth = truth_lines(truth_path());
  std::set<std::pair<std::string, int>> got;
  for (auto& t : truth) got.insert({t["kind"].get<std::string>(), t["global_rank"].get<int>()});
  EXPECT_EQ(got, (std::set<std::pair<std::string, int>>{{"sdc", 3}, {"nan", 5}, {"straggler", 6}}));
}

}  // namespace
