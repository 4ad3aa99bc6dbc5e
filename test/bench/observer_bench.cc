// Observer CPU per record (`make bench`): emulated segments of an 8-rank 3-D parallel
// job (TP=2, PP=2, DP=2 plus a world communicator) are read and judged by a fresh observer, and
// the cost per record is printed next to a baseline measured in the same run: the bare validated
// copy of every record (SegmentReader::read), which any reader of the segments pays.
//
// Output: ns per record for the baseline, for a full pass into an in-memory sink and into the
// SQLite store, and their ratios to the baseline.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/paths.h"
#include "observer/model/memory_sink.h"
#include "observer/pipeline/observer.h"
#include "observer/store/writer.h"
#include "test/support/fake_job.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::testing;
namespace obs = scout::obs;
namespace shm = scout::shm;

constexpr int kSteps = 400;
constexpr uint32_t kRing = 4096;

double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Writes kSteps steps; returns the number of records written.
uint64_t write_job(FakeJob& job) {
  std::vector<int> tp, dp, pp;
  for (int b = 0; b < 8; b += 2) tp.push_back(job.add_comm(0x7000 + uint64_t(b), {b, b + 1}, "tp"));
  for (int a : {0, 1, 4, 5}) pp.push_back(job.add_comm(0x9000 + uint64_t(a), {a, a + 2}, "pp"));
  for (int a = 0; a < 4; ++a) dp.push_back(job.add_comm(0xd000 + uint64_t(a), {a, a + 4}, "dp"));
  int world = job.add_comm(0x3333, {0, 1, 2, 3, 4, 5, 6, 7}, "world");
  uint64_t records = 0;
  for (int s = 0; s < kSteps; ++s) {
    int64_t base = kT0 + int64_t(s) * 20 * kMs;
    for (int c : tp) {
      FakeColl f;
      f.seq = uint64_t(s);
      f.t0 = base;
      f.fp_recv = {uint64_t(s), uint64_t(s)};
      job.collective(c, f);
      records += 2;
    }
    for (int c : pp) {
      job.p2p(c, 0, 1, uint64_t(s), base + kMs, base + kMs, 100'000);
      records += 2;
    }
    for (int c : dp) {
      FakeColl f;
      f.seq = uint64_t(s);
      f.t0 = base + 2 * kMs;
      f.fp_recv = {uint64_t(s) + 1, uint64_t(s) + 1};
      job.collective(c, f);
      records += 2;
    }
    FakeColl w;
    w.seq = uint64_t(s);
    w.t0 = base + 3 * kMs;
    w.fp_recv = std::vector<uint64_t>(8, uint64_t(s) + 2);
    job.collective(world, w);
    records += 8;
  }
  return records;
}

// Baseline: validated copies of every record of every ring, as any reader pays.
uint64_t raw_read(const std::string& dir) {
  uint64_t n = 0;
  shm::RecordSnapshot r;
  for (const std::string& path : shm::list_segments(dir, "bench")) {
    std::string err;
    auto rd = shm::SegmentReader::open(path, &err);
    if (!rd) continue;
    for (uint32_t ring = 0; ring < rd->n_rings(); ++ring) {
      shm::CommSnapshot cs;
      if (!rd->comm(ring, &cs)) continue;
      for (uint64_t i = 0; i < cs.head; ++i) n += rd->read(ring, i, &r) == shm::ReadStatus::kOk;
    }
  }
  return n;
}

obs::ObserverOptions options(const std::string& dir, const FakeJob& job) {
  obs::ObserverOptions o;
  o.job = "bench";
  o.host = "node0";
  o.shm_dir = dir;
  o.liveness = job.liveness();
  o.reclaim_after_ns = -1;
  return o;
}

template <typename F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    double t0 = cpu_now();
    f();
    best = std::min(best, cpu_now() - t0);
  }
  return best;
}

}  // namespace

int main() {
  TempDir dir;
  FakeJob job(dir.path(), "bench", 8, "node0", kRing, 16);
  uint64_t records = write_job(job);
  int64_t now = kT0 + int64_t(kSteps) * 20 * kMs + kSec;

  uint64_t seen = 0;
  double base = best_of(5, [&] { seen = raw_read(dir.path()); });
  if (seen != records) {
    std::fprintf(stderr, "observer_bench: read %llu records, wrote %llu\n", (unsigned long long)seen,
                 (unsigned long long)records);
    return 1;
  }
  uint64_t judged = 0;
  double mem = best_of(5, [&] {
    obs::MemorySink sink;
    obs::Observer o(options(dir.path(), job), &sink);
    o.pass(now);
    judged = o.judge_stats().judged;
  });
  int rep = 0;
  double sql = best_of(3, [&] {
    std::string err;
    auto store = scout::store::StoreWriter::open(dir.path() + "/store-" + std::to_string(rep++) + ".db", {}, &err);
    if (!store) return;
    obs::Observer o(options(dir.path(), job), store.get());
    o.pass(now);
  });
  auto per = [&](double s) { return s * 1e9 / double(records); };
  std::printf("observer: 8 ranks, 13 communicators, %d steps: %llu records, %llu operations judged\n", kSteps,
              (unsigned long long)records, (unsigned long long)judged);
  std::printf("  baseline: validated record copy (SegmentReader::read)   %8.1f ns/record\n", per(base));
  std::printf("  observer pass, in-memory sink (ingest+judge+detect)     %8.1f ns/record  %6.1fx baseline\n", per(mem),
              mem / base);
  std::printf("  observer pass, SQLite store                              %8.1f ns/record  %6.1fx baseline\n", per(sql),
              sql / base);
  return 0;
}
