// Ingestion: in-flight records re-read until complete, restart mid-job, gaps and rejected records
// counted, discovery of segments created later, host filter, foreign and garbage segments,
// reclaim of segments whose owner is gone, and the liveness check (zombies are gone).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/liveness.h"
#include "common/paths.h"
#include "observer/ingest/ingestor.h"
#include "observer/ingest/liveness.h"
#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
namespace obs = scout::obs;
namespace shm = scout::shm;

// Completes AllReduce #from..to-1 on every rank of `comm`, #s at kT0 + s ms.
void collectives(FakeJob& job, int comm, int from, int to) {
  for (int s = from; s < to; ++s) {
    FakeColl c;
    c.seq = uint64_t(s);
    c.t0 = kT0 + s * kMs;
    job.collective(comm, c);
  }
}

const obs::Op* only_op(const obs::Observer& o) {
  for (const auto& [k, c] : o.model().comms()) {
    if (!c.ops.empty()) return &c.ops.begin()->second;
  }
  return nullptr;
}

TEST(Ingest, InFlightRecordsAreReReadUntilComplete) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  OpSpec s;
  s.enqueue_ns = kT0;
  FakeRec a = h.job.enqueue(tp, 0, s);
  FakeRec b = h.job.enqueue(tp, 1, s);
  h.pass(kT0 + kMs);
  const obs::Op* op = only_op(*h.observer);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->present(), 2);
  EXPECT_EQ(op->slots[0].rec.state, shm::kStateEnqueued);
  FakeJob::start(a, kT0 + 2 * kMs);
  FakeJob::start(b, kT0 + 2 * kMs);
  h.pass(kT0 + 3 * kMs);
  op = only_op(*h.observer);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->slots[1].rec.state, shm::kStateRunning);
  EXPECT_EQ(op->slots[1].rec.gpu_start_ns, kT0 + 2 * kMs);
  FakeJob::complete(a, kT0 + 4 * kMs);
  FakeJob::complete(b, kT0 + 4 * kMs);
  FakeJob::fp_recv(a, 7);
  FakeJob::fp_recv(b, 7);
  h.pass(kT0 + 5 * kMs);
  EXPECT_EQ(only_op(*h.observer), nullptr);  // judged and dropped
  ASSERT_EQ(h.sink.ops().size(), 1u);
  EXPECT_EQ(h.sink.ops()[0].fp_verdict, "agree");
  EXPECT_EQ(h.sink.ops()[0].end_ns, kT0 + 4 * kMs);
  auto st = h.observer->ingest_stats();
  EXPECT_EQ(st.records.read, 2u);
  EXPECT_EQ(st.records.updates, 4u);  // each record re-read twice before it was final
}

TEST(Ingest, RestartedObserverReadsEverythingStillInTheRings) {
  ObserverHarness h(2, /*ring_capacity=*/16);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  for (int s = 0; s < 40; ++s) {
    FakeColl c;
    c.seq = uint64_t(s);
    c.t0 = kT0 + s * kMs;
    c.fp_recv = {9, 9};
    h.job.collective(tp, c);
  }
  h.pass(kT0 + kSec);  // a fresh observer: sees the newest 16 of each ring
  auto ops = h.sink.ops();
  ASSERT_EQ(ops.size(), 16u);
  EXPECT_EQ(ops.front().seq, 24u);
  EXPECT_EQ(ops.back().seq, 39u);
  auto st = h.observer->ingest_stats();
  EXPECT_EQ(st.records.read, 32u);
  EXPECT_EQ(st.records.gaps, 0u);  // what was gone before it attached is not a gap
}

TEST(Ingest, RecordsOverwrittenBeforeTheyWereReadAreCountedAsGaps) {
  ObserverHarness h(2, 16);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  collectives(h.job, tp, 0, 4);
  h.pass(kT0 + kSec);
  collectives(h.job, tp, 4, 44);  // 40 more while the observer sleeps: 24 per ring are lost
  h.pass(kT0 + 2 * kSec);
  auto st = h.observer->ingest_stats();
  EXPECT_EQ(st.records.read, 2u * (4 + 16));
  EXPECT_EQ(st.records.gaps, 2u * 24);
}

TEST(Ingest, InvalidAndAbandonedRecordsAreCountedNotDelivered) {
  ObserverHarness h(1);
  int c = h.job.add_comm(0x11, {0}, "self");
  OpSpec s;
  s.enqueue_ns = kT0;
  FakeRec bad = h.job.enqueue(c, 0, s);
  bad.rec->kind = 99;  // breaks the format after publication
  uint64_t idx;
  h.job.ring(c, 0)->begin(&idx);  // claimed and never published: the writer died mid-write
  FakeRec good = h.job.enqueue(c, 0, s);
  FakeJob::start(good, kT0 + 1);
  FakeJob::complete(good, kT0 + 2);
  for (int p = 0; p < 5; ++p) h.pass(kT0 + kSec + p * kMs);
  auto st = h.observer->ingest_stats();
  EXPECT_EQ(st.records.invalid, 2u);
  EXPECT_EQ(st.records.read, 1u);
  EXPECT_EQ(h.sink.ops().size(), 1u);
}

TEST(Ingest, SegmentsCreatedAfterStartAreDiscoveredAndOtherHostsIgnored) {
  ObserverHarness h(2);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  h.pass(kT0);
  EXPECT_EQ(h.observer->model().procs().size(), 2u);
  FakeJob later(h.dir.path(), "job1", 2, "node0", 256, 8, /*first_rank=*/2);
  FakeJob other_host(h.dir.path(), "job1", 2, "node1", 256, 8, 4);
  FakeJob other_job(h.dir.path(), "job2", 2, "node0", 256, 8, 6);
  int dp = later.add_comm(0xd1, {0, 1}, "dp");
  FakeColl c;
  c.t0 = kT0 + kMs;
  later.collective(dp, c);
  h.job.collective(tp, c);
  h.pass(kT0 + kSec);
  std::vector<int> ranks;
  for (const auto& p : h.observer->model().procs()) ranks.push_back(p.global_rank);
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(h.sink.ops().size(), 2u);
  EXPECT_EQ(h.sink.ranks().size(), 4u);
}

TEST(Ingest, GarbageAndWrongVersionSegmentsAreRejectedWithAMessage) {
  ObserverHarness h(1);
  {
    std::ofstream junk(h.dir.path() + "/" + shm::segment_name("job1", "node0", 4242));
    junk << std::string(10000, 'x');
  }
  std::filesystem::permissions(h.dir.path() + "/" + shm::segment_name("job1", "node0", 4242),
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  FakeJob v(h.dir.path(), "job1", 1, "node0", 256, 8, 9);
  v.header(0)->layout_version = 99;
  h.pass(kT0);
  auto st = h.observer->ingest_stats();
  EXPECT_EQ(st.segments_attached, 1u);
  EXPECT_EQ(st.segments_rejected, 2u);
  bool magic = false, version = false;
  for (const auto& l : h.log) {
    magic |= l.find("not a scout segment (bad magic)") != std::string::npos;
    version |= l.find("layout version 99 (this build reads 2)") != std::string::npos;
  }
  EXPECT_TRUE(magic);
  EXPECT_TRUE(version);
  h.pass(kT0 + kSec);  // retried, still rejected, logged once
  EXPECT_EQ(h.log.size(), 2u);
}

TEST(Ingest, SegmentOfAnotherJobUnderOurNameIsDropped) {
  ObserverHarness h(1);
  FakeJob foreign(h.dir.path(), "job2", 1, "node0", 256, 8, 5);
  std::filesystem::rename(foreign.path(0), h.dir.path() + "/" + shm::segment_name("job1", "node0", 777));
  h.pass(kT0);
  EXPECT_EQ(h.observer->model().procs().size(), 1u);
  bool logged = false;
  for (const auto& l : h.log) logged |= l.find("belongs to job 'job2'") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(Ingest, GoneOwnersSegmentIsReclaimedOnceJudged) {
  ObserverHarness h(2);
  h.opt.reclaim_after_ns = 30 * kSec;
  h.opt.judge.settle_timeout_ns = 60 * kSec;
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  FakeColl c;
  c.t0 = kT0;
  h.job.collective(tp, c);
  OpSpec s;
  s.key = 1;
  s.enqueue_ns = kT0 + kMs;
  h.job.enqueue(tp, 0, s);  // rank 0 has an operation rank 1 never joined
  h.job.header(0)->last_event_ns.store(kT0, std::memory_order_relaxed);
  h.job.header(1)->last_event_ns.store(kT0, std::memory_order_relaxed);
  h.job.kill(0, /*finalized=*/true);
  h.job.kill(1, /*finalized=*/true);
  h.pass(kT0 + 10 * kSec);
  EXPECT_TRUE(std::filesystem::exists(h.job.path(0)));  // too recent
  h.pass(kT0 + 31 * kSec);
  EXPECT_FALSE(std::filesystem::exists(h.job.path(1)));  // judged, gone, old: reclaimed
  EXPECT_TRUE(std::filesystem::exists(h.job.path(0)));   // its op #1 is not judged yet
  h.pass(kT0 + 80 * kSec);                               // the unmatched op is judged partial after the settle timeout
  EXPECT_FALSE(std::filesystem::exists(h.job.path(0)));
  EXPECT_EQ(h.observer->ingest_stats().segments_reclaimed, 2u);
  // What was learnt stays: ranks and operations are still in the sink.
  EXPECT_EQ(h.sink.ranks().size(), 2u);
  EXPECT_EQ(h.sink.ops().size(), 2u);
}

TEST(Ingest, ZombieOwnerIsGone) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  // Not reaped yet: kill(pid, 0) succeeds, but the process is a zombie.
  for (int i = 0; i < 200; ++i) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", child);
    std::ifstream f(path);
    std::string s;
    std::getline(f, s);
    if (s.find(") Z ") != std::string::npos) break;
    usleep(5000);
  }
  EXPECT_FALSE(obs::owner_running(child, 0));
  EXPECT_TRUE(obs::owner_running(getpid(), shm::process_start_ticks(getpid())));
  int status;
  waitpid(child, &status, 0);
  EXPECT_FALSE(obs::owner_running(child, 0));
}

// Row 5 of the hostile-input trial: an observer that starts after the ring wrapped counts what was
// overwritten before it attached, says so in its log and in the store's job header.
TEST(IngestLoss, LateObserverCountsRecordsGoneBeforeItAttached) {
  ObserverHarness h(2, /*ring_capacity=*/16);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  collectives(h.job, tp, 0, 40);
  h.pass(kT0 + kSec);
  auto st = h.observer->ingest_stats();
  EXPECT_EQ(st.records.read, 32u);
  EXPECT_EQ(st.records.before_attach, 48u);
  EXPECT_EQ(h.sink.job().records_read, 32u);
  EXPECT_EQ(h.sink.job().records_lost, 48u);
  int warned = 0;
  for (const auto& l : h.log) {
    warned += l ==
              "warning: 48 records lost (ring overwritten before they were read): a finding may be "
              "missing; raise SCOUT_RING_SLOTS";
  }
  EXPECT_EQ(warned, 1);
  EXPECT_NE(h.observer->stats_line().find("records 32 read / 48 overwritten unread"), std::string::npos)
      << h.observer->stats_line();
}

// Row 6: records lost while the observer runs reach the job header (scout status, Prometheus).
TEST(IngestLoss, RecordsLostWhileRunningReachTheJobHeader) {
  ObserverHarness h(2, 16);
  int tp = h.job.add_comm(0x71, {0, 1}, "tp");
  collectives(h.job, tp, 0, 4);
  h.pass(kT0 + kSec);
  EXPECT_EQ(h.sink.job().records_lost, 0u);
  collectives(h.job, tp, 4, 44);
  h.pass(kT0 + 2 * kSec);
  EXPECT_EQ(h.sink.job().records_lost, 48u);
  EXPECT_EQ(h.sink.job().records_read, 40u);
}

// Row 2 (first trial): a file claiming many huge communicators cannot make the observer allocate
// per-rank state beyond its bound; the rings past its own budget are refused, logged once.
TEST(IngestBounds, HugeCommunicatorClaimsAreBoundedPerSegment) {
  ObserverHarness h(1, 16);
  FakeJob big(h.dir.path(), "job1", 1, "node0", 16, 32, /*first_rank=*/1);
  for (int i = 0; i < 32; ++i) big.add_comm(0x1000 + uint64_t(i), {0}, "huge", 1 << 18, {0}, 1);
  h.pass(kT0);
  EXPECT_EQ(h.observer->model().comms().size(), 2u);  // 2 x 2^18 rank slots fill its budget of 2^19
  EXPECT_EQ(h.observer->ingest_stats().rings_rejected, 30u);
  int refused = 0;
  for (const auto& l : h.log) refused += l.find("beyond its budget of 524288 rank slots per segment") != std::string::npos;
  EXPECT_EQ(refused, 1);
  h.pass(kT0 + kSec);  // said once per segment
  refused = 0;
  for (const auto& l : h.log) refused += l.find("beyond its budget") != std::string::npos;
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(h.sink.job().rings_refused, 30u);
}

// The second adversarial trial: the planted 430 KB segment declaring 32 rings of 262,144 ranks beside
// a real 8-rank job. The old global bound let it take every rank slot: the job's records went
// unread and its SDC was missed. Now it exhausts only its own budget, is refused with the reason,
// and every record of the real job is read and its SDC found.
TEST(IngestBounds, HostileSegmentExhaustsOnlyItsOwnBudgetAndTheRealJobIsRead) {
  ObserverHarness h(8, 64);
  // The hostile segment first in the directory listing (and at the first pass).
  FakeJob hostile(h.dir.path(), "job1", 1, "node0", 16, 32, /*first_rank=*/100);
  for (int i = 0; i < 32; ++i) hostile.add_comm(0x9000 + uint64_t(i), {0}, "hostile", 1 << 18, {0}, 1);
  h.pass(kT0);
  const int world = h.job.add_comm(0x51, {0, 1, 2, 3, 4, 5, 6, 7}, "world");
  const int tp = h.job.add_comm(0x52, {0, 1}, "tp0");
  for (int s = 0; s < 20; ++s) {
    FakeColl c;
    c.seq = uint64_t(s);
    c.t0 = kT0 + (s + 1) * 10 * kMs;
    c.fp_recv.assign(8, 0x1234 + uint64_t(s));
    if (s == 12) c.fp_recv[5] = 0xbad;  // rank 5 received different bytes
    h.job.collective(world, c);
    FakeColl t;
    t.seq = uint64_t(s);
    t.t0 = c.t0;
    h.job.collective(tp, t);
  }
  h.pass(kT0 + kSec);
  h.pass(kT0 + 8 * kSec);
  EXPECT_EQ(h.sink.job().records_read, 20u * 8 + 20u * 2);
  EXPECT_EQ(h.sink.job().records_lost, 0u);
  EXPECT_EQ(h.sink.job().rings_refused, 30u);
  const auto sdc = h.findings(obs::FindingKind::kSdc);
  ASSERT_EQ(sdc.size(), 1u);
  EXPECT_EQ(suspect_ranks(sdc[0]), std::vector<int>{5});
  int said = 0;
  for (const auto& l : h.log)
    said += l.find("claims a communicator of 262144 ranks beyond its budget of 524288 rank slots per segment") !=
            std::string::npos;
  EXPECT_EQ(said, 1);
}

// Row 7: no segment within the grace period: the observer says why, in its log and the job header.
TEST(IngestLoss, NoSegmentWithinGraceSaysWhy) {
  TempDir dir;
  obs::MemorySink sink;
  obs::ObserverOptions opt;
  opt.job = "job1";
  opt.shm_dir = dir.path() + "/missing";
  std::vector<std::string> log;
  opt.log = [&](const std::string& l) { log.push_back(l); };
  obs::Observer o(opt, &sink);
  o.pass(kT0);
  EXPECT_EQ(sink.job().warning, "");  // within the grace period
  o.pass(kT0 + 11 * kSec);
  const std::string want = "segment directory " + opt.shm_dir +
                           " (SCOUT_SHM_DIR): No such file or directory; the plugin cannot create segments";
  EXPECT_EQ(sink.job().warning, want);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "warning: " + want);
  o.pass(kT0 + 12 * kSec);
  EXPECT_EQ(log.size(), 1u);  // said once
  EXPECT_EQ(scout::shm::shm_dir_problem(dir.path()), "");
}

}  // namespace
