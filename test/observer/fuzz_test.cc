// Hostile and broken segments never crash the observer: random bytes anywhere (headers, ring
// headers, records), absurd counts, indices and channels, wrong versions, garbage files under a
// segment name, files that shrink while mapped (SIGBUS) or vanish. Deterministic seeds; every
// iteration also checks that the observer keeps working on the healthy segments next to the
// broken one.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "common/paths.h"
#include "observer/ingest/sigbus_guard.h"
#include "test/support/observer_harness.h"

namespace {

using namespace scout::testing;
namespace obs = scout::obs;
namespace shm = scout::shm;

constexpr uint32_t kCap = 16;
constexpr uint32_t kComms = 2;

// Writes a few steps of two communicators over three processes, some left in flight.
void traffic(FakeJob& job, int tp, int dp, int steps, int64_t t0) {
  for (int s = 0; s < steps; ++s) {
    FakeColl c;
    c.seq = uint64_t(s);
    c.t0 = t0 + s * kMs;
    c.fp_recv = {1, 1};
    job.collective(tp, c);
    FakeColl d = c;
    d.fp_recv = {2, 2, 2};
    job.collective(dp, d);
  }
  OpSpec s;
  s.key = uint64_t(steps);
  s.enqueue_ns = t0 + steps * kMs;
  FakeJob::start(job.enqueue(dp, 0, s), s.enqueue_ns + 1);
}

struct Mutator {
  std::mt19937_64 rng;
  explicit Mutator(uint64_t seed) : rng(seed) {}
  uint64_t any() { return rng(); }
  size_t below(size_t n) { return n ? size_t(rng() % n) : 0; }

  // One random corruption of segment `p` of `job`; returns true if it truncated the file.
  bool corrupt(FakeJob& job, int p) {
    auto* base = reinterpret_cast<uint8_t*>(job.header(p));
    uint64_t size = shm::segment_bytes(kComms, kCap);
    auto* ring0 = reinterpret_cast<shm::CommHeader*>(base + shm::kSegmentHeaderBytes);
    uint64_t stride = shm::kCommHeaderBytes + uint64_t(kCap) * shm::kRecordBytes;
    auto* ring = reinterpret_cast<shm::CommHeader*>(reinterpret_cast<uint8_t*>(ring0) + stride * below(kComms));
    auto* rec =
        reinterpret_cast<shm::OpRecord*>(reinterpret_cast<uint8_t*>(ring) + shm::kCommHeaderBytes) + below(kCap);
    switch (below(12)) {
      case 0:  // random bytes anywhere
        for (int i = 0; i < 64; ++i) base[below(size)] = uint8_t(any());
        return false;
      case 1:  // a whole record of noise
        for (size_t i = 0; i < sizeof(shm::OpRecord); ++i) reinterpret_cast<uint8_t*>(rec)[i] = uint8_t(any());
        return false;
      case 2:  // absurd ring count
        job.header(p)->n_comms.store(uint32_t(any()), std::memory_order_relaxed);
        return false;
      case 3:  // absurd ring header values
        ring->nranks = int32_t(any());
        ring->rank = int32_t(any());
        return false;
      case 4: ring->head.store(any(), std::memory_order_relaxed); return false;
      case 5: ring->head.store(UINT64_MAX - below(3), std::memory_order_relaxed); return false;
      case 6:  // absurd record fields with a valid sequence number
        rec->kind = uint8_t(any());
        rec->func = uint8_t(any());
        rec->n_channels = uint8_t(any());
        rec->peer = int32_t(any());
        rec->ch_stopped.store(uint16_t(any()), std::memory_order_relaxed);
        rec->state.store(uint32_t(any() % 8), std::memory_order_relaxed);
        return false;
      case 7:
        rec->seq.store(any(), std::memory_order_relaxed);
        rec->key = any();
        return false;
      case 8:  // fingerprint words with the right tag but garbage status
        rec->fp_recv_word.store((rec->fp_recv_word.load() & ~0xffull) | (any() & 0xff), std::memory_order_relaxed);
        return false;
      case 9:  // wrong version, ring geometry or magic (matters for observers that attach later)
        job.header(p)->layout_version = uint32_t(any());
        job.header(p)->ring_capacity = uint32_t(any());
        return false;
      case 10:  // the file shrinks under every mapping
        if (::truncate(job.path(p).c_str(), off_t(below(size))) != 0) return false;
        return true;
      default:  // the file disappears
        std::filesystem::remove(job.path(p));
        return false;
    }
  }
};

TEST(Fuzz, HostileSegmentsNeverCrashTheObserver) {
  int truncations = 0;
  uint64_t dropped = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Mutator mu(seed);
    TempDir dir;
    std::vector<obs::Finding> findings;
    {
      FakeJob job(dir.path(), "job1", 3, "node0", kCap, kComms);
      int tp = job.add_comm(0x71, {0, 1}, "tp");
      int dp = job.add_comm(0xd1, {0, 1, 2}, "dp");
      traffic(job, tp, dp, 6, kT0);
      obs::MemorySink sink;
      obs::ObserverOptions opt;
      opt.job = "job1";
      opt.host = "node0";
      opt.shm_dir = dir.path();
      opt.liveness = job.liveness();
      opt.reclaim_after_ns = -1;
      opt.hang.timeout_ns = kSec;
      opt.judge.settle_timeout_ns = kSec;
      obs::Observer o(opt, &sink);
      o.pass(kT0 + kSec);
      int victim = int(mu.below(3));
      bool truncated = false;
      int n = 1 + int(mu.below(4));
      for (int k = 0; k < n && !truncated; ++k) {
        truncated = mu.corrupt(job, victim);
        truncations += truncated;
        o.pass(kT0 + (2 + k) * kSec);
      }
      if (!truncated) traffic(job, tp, dp, 3, kT0 + 100 * kSec);  // writers keep going
      o.pass(kT0 + 200 * kSec);
      o.pass(kT0 + 300 * kSec);
      // A second observer attaching to what is left must cope as well.
      obs::MemorySink sink2;
      obs::Observer o2(opt, &sink2);
      o2.pass(kT0 + 400 * kSec);
      EXPECT_FALSE(o.stats_line().empty());
      dropped += o.ingest_stats().segments_faulted;
      EXPECT_GE(o.model().procs().size(), 2u) << "seed " << seed;
      if (truncated) job.kill(victim);  // its mapping must not be touched by the writer again
    }
    // Garbage files under a segment name.
    {
      std::ofstream junk(dir.path() + "/" + shm::segment_name("job1", "node0", 1000 + int(seed)));
      std::string bytes(mu.below(3 * shm::kSegmentHeaderBytes), '\0');
      for (char& ch : bytes) ch = char(mu.any());
      if (bytes.size() >= 8 && mu.below(2)) {
        uint64_t magic = shm::kSegmentMagic;
        std::memcpy(bytes.data(), &magic, 8);
      }
      junk << bytes;
    }
    obs::MemorySink sink3;
    obs::ObserverOptions opt;
    opt.job = "job1";
    opt.shm_dir = dir.path();
    opt.reclaim_after_ns = -1;
    obs::Observer o3(opt, &sink3);
    o3.pass(kT0);
  }
  EXPECT_GT(truncations, 0);
  EXPECT_EQ(dropped, uint64_t(truncations));  // every shrunk segment was seen and dropped
}

// The race the size check cannot close (the file shrinks between the check and the read):
// reading vanished pages raises SIGBUS, which the guard turns into a return.
TEST(Fuzz, SigbusInsideAGuardedReadIsCaught) {
  TempDir dir;
  std::string path = dir.path() + "/mapped";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 1 << 16), 0);
  void* mem = ::mmap(nullptr, 1 << 16, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(mem, MAP_FAILED);
  ASSERT_EQ(::ftruncate(fd, 0), 0);
  unsigned long before = obs::SigbusGuard::faults();
  volatile int caught = 0;
  {
    obs::SigbusGuard g;
    if (SIGBUS_GUARD_ENTER(g)) {
      caught = 1;
    } else {
      volatile uint8_t x = static_cast<volatile uint8_t*>(mem)[4096];
      (void)x;
      g.leave();
    }
  }
  EXPECT_EQ(caught, 1);
  EXPECT_EQ(obs::SigbusGuard::faults(), before + 1);
  ::munmap(mem, 1 << 16);
  ::close(fd);
}

TEST(Fuzz, SigbusOutsideAGuardIsNotSwallowed) {
  // The guard only catches faults inside guarded reads; anything else keeps the default action.
  EXPECT_DEATH(
      {
        obs::SigbusGuard g;
        g.leave();
        raise(SIGBUS);
      },
      "");
}

}  // namespace
