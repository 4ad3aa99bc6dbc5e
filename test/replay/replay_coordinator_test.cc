// Replay cycles under the observer's coordinator (observer/replay/coordinator.h) with
// the real scout-replay on emulated GPUs: a periodic cycle, a wrong GPU turned into an sdc
// finding, and a scout-replay killed in the middle of a cycle (the cycle ends inconclusive
// within its deadline, the coordinator goes on, the next cycle runs on a fresh process).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "observer/model/finding_board.h"
#include "observer/model/model.h"
#include "observer/replay/coordinator.h"
#include "replay/emu_device.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::obs;
using scout::testing::build_path;
using scout::testing::TempDir;

Model model_of(int n) {
  Model m;
  for (int g = 0; g < n; ++g) {
    Proc p;
    p.global_rank = g;
    p.local_rank = g;
    p.host = "node0";
    p.pid = 1000 + g;
    p.gpu = "GPU-sim-node0-" + std::to_string(g);
    p.cuda_dev = g;
    m.upsert_proc(p, 1);
  }
  return m;
}

ReplayOptions options(const std::vector<std::string>& program) {
  ReplayOptions o;
  o.enabled = true;
  o.gemms = "512x512x512:fp32";
  o.min_period_ns = 0;
  o.budget = 1.0;  // the next periodic cycle right after the last one
  o.deadline_ns = 10'000'000'000;
  o.program = program;
  return o;
}

// Steps the coordinator from `now` until `cycles` cycles have finished (at most 20 s); returns the records.
std::vector<ReplayCycleRecord> run_cycles(ReplayCoordinator& rc, const Model& m, FindingBoard& board, uint64_t cycles,
                                          int64_t now = 1'000'000'000) {
  std::vector<ReplayCycleRecord> out;
  for (int i = 0; i < 2000 && out.size() < cycles; ++i) {
    rc.step(m, board, now += 10'000'000);
    for (auto& r : rc.take_records()) out.push_back(r);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return out;
}

TEST(ReplayCoordinator, PeriodicCyclePassesOnHealthyGpus) {
  TempDir dir;
  Model m = model_of(4);
  FindingBoard board;
  ReplayCoordinator rc(options({build_path("bin/scout-replay"), "--job", "j", "--shm-dir", dir.path()}), "j",
                       dir.path(), 0, nullptr);
  auto recs = run_cycles(rc, m, board, 1);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].trigger, "periodic");
  EXPECT_EQ(recs[0].outcome, "pass") << recs[0].detail.dump();
  EXPECT_EQ(recs[0].backend, "auto");
  EXPECT_EQ(recs[0].detail["recipes"], nlohmann::json({"gemm:fp32:512x512x512"}));
  EXPECT_EQ(recs[0].detail["samples"].size(), 8u);  // 4 GPUs x 2 rounds
  EXPECT_EQ(board.size(), 0u);
}

// A job with more collective classes than a cycle replays: periodic cycles take them
// round-robin (8 per cycle), so every class is replayed within two cycles.
TEST(ReplayCoordinator, PeriodicCyclesRotateThroughTheCollectiveClasses) {
  TempDir dir;
  Model m = model_of(2);
  Comm& c = m.upsert_comm(CommKey{0xab, 2}, "tp0", 1);
  m.set_member(c, 0, 0, 1, false);
  m.set_member(c, 1, 1, 1, false);
  FindingBoard board;
  ReplayOptions o = options({build_path("bin/scout-replay"), "--job", "j", "--shm-dir", dir.path()});
  o.gemms = "";
  ReplayCoordinator rc(o, "j", dir.path(), 0, nullptr);
  for (uint64_t k = 0; k < 10; ++k) {  // ten classes: AllReduce of 1024 + k float32 elements
    JudgedOp j;
    j.comm = CommKey{0xab, 2};
    j.id = OpId{OpClass::kColl, scout::shm::kFuncAllReduce, k, -1, -1};
    j.datatype = scout::shm::kTypeFloat32;
    j.count = 1024 + k;
    j.n = 2;
    j.complete = true;
    rc.observe(m, j);
  }
  auto recs = run_cycles(rc, m, board, 2);
  ASSERT_EQ(recs.size(), 2u);
  auto counts = [](const ReplayCycleRecord& r) {
    std::vector<int> out;
    for (const auto& id : r.detail["recipes"]) {
      const std::string s = id.get<std::string>();
      if (s.rfind("coll:", 0) != 0) continue;
      const size_t a = s.find(":float32:") + 9;
      out.push_back(std::stoi(s.substr(a, s.find(':', a) - a)) - 1024);
    }
    return out;
  };
  EXPECT_EQ(counts(recs[0]), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(counts(recs[1]), (std::vector<int>{8, 9, 0, 1, 2, 3, 4, 5}));
}

TEST(ReplayCoordinator, WrongGpuBecomesAnAttributedSdcFinding) {
  TempDir dir;
  Model m = model_of(4);
  FindingBoard board;
  scout::replay::EmuDeviceState bad;
  bad.gemm_flip = true;
  std::string err;
  ASSERT_TRUE(
      scout::replay::write_emu_device(scout::replay::emu_device_path(dir.path(), "j", "GPU-sim-node0-2"), bad, &err));
  ReplayCoordinator rc(options({build_path("bin/scout-replay"), "--job", "j", "--shm-dir", dir.path()}), "j",
                       dir.path(), 0, nullptr);
  auto recs = run_cycles(rc, m, board, 1);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].outcome, "fail");
  rc.step(m, board, 9'000'000'000);  // the verdict was applied when the record was taken
  ASSERT_EQ(board.size(), 1u);
  const Finding* f = board.all()[0];
  EXPECT_EQ(f->kind, FindingKind::kSdc);
  EXPECT_EQ(f->verdict, Verdict::kAttributed);
  ASSERT_EQ(f->suspects.size(), 1u);
  EXPECT_EQ(f->suspects[0].global_rank, 2);
  EXPECT_EQ(f->suspects[0].gpu, "GPU-sim-node0-2");
  EXPECT_EQ(f->evidence["source"], "replay");
  EXPECT_EQ(f->evidence["check"], "gemm-vote");
  EXPECT_EQ(f->evidence["recipe"], "gemm:fp32:512x512x512");
  EXPECT_EQ(f->evidence["votes"]["groups"][0]["voters"], nlohmann::json({0, 1, 3}));
  EXPECT_EQ(f->dedup_key, "sdc:replay:node0:1002");
  // A later cycle names rank 2 again: the finding keeps the first cycle's evidence (what `scout
  // replay show` of it prints) and notes the latest cycle.
  const nlohmann::json first = f->evidence;
  const std::string summary = f->summary;
  auto more = run_cycles(rc, m, board, 1, 10'000'000'000);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].outcome, "fail");
  rc.step(m, board, 40'000'000'000);
  ASSERT_EQ(board.size(), 1u);
  f = board.all()[0];
  nlohmann::json expected = first;
  expected["last_cycle"] = more[0].cycle;
  EXPECT_EQ(f->evidence, expected);
  EXPECT_EQ(f->summary, summary);
  EXPECT_EQ(first["cycle"], recs[0].cycle);
}

TEST(ReplayCoordinator, ParticipantKilledMidCycleEndsItInconclusiveAndTheNextCycleRuns) {
  TempDir dir;
  Model m = model_of(4);
  FindingBoard board;
  // First start: answer the readiness contract through the real scout-replay, then die by
  // SIGKILL when the run request arrives. Later starts: the real scout-replay.
  const std::string replay = build_path("bin/scout-replay") + " --job j --shm-dir " + dir.path();
  const std::string script = dir.path() + "/replay.sh";
  {
    std::ofstream s(script);
    s << "#!/bin/sh\n"
      << "if [ ! -f " << dir.path() << "/once ]; then\n"
      << "  touch " << dir.path() << "/once\n"
      << "  read -r prepare\n"
      << "  printf '%s\\n' \"$prepare\" | " << replay << "\n"
      << "  read -r run\n"
      << "  kill -9 $$\n"
      << "fi\n"
      << "exec " << replay << "\n";
  }
  ::chmod(script.c_str(), 0755);
  ReplayOptions o = options({script});
  o.deadline_ns = 5'000'000'000;
  ReplayCoordinator rc(o, "j", dir.path(), 0, nullptr);
  auto recs = run_cycles(rc, m, board, 2);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].outcome, "inconclusive");
  EXPECT_EQ(recs[0].detail["error"], "scout-replay exited (signal 9)");
  EXPECT_EQ(recs[0].detail["verdict"]["recipes"][0]["reason"], "participant lost: scout-replay exited (signal 9)");
  EXPECT_LT(recs[0].ended_ns - recs[0].started_ns, o.deadline_ns);
  EXPECT_EQ(recs[1].outcome, "pass") << recs[1].detail.dump();
  EXPECT_EQ(board.size(), 0u);
}

TEST(ReplayCoordinator, SilentReplayIsKilledAtTheDeadline) {
  TempDir dir;
  Model m = model_of(2);
  FindingBoard board;
  ReplayOptions o = options({"/bin/sleep", "30"});
  o.deadline_ns = 500'000'000;
  ReplayCoordinator rc(o, "j", dir.path(), 0, nullptr);
  auto recs = run_cycles(rc, m, board, 1);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].outcome, "inconclusive");
  EXPECT_EQ(recs[0].detail["error"], "scout-replay did not answer within 0.5 s (killed)");
  EXPECT_LT(recs[0].ended_ns - recs[0].started_ns, 2'000'000'000);
  EXPECT_EQ(rc.child_pid(), 0);
}

}  // namespace
