// Our XXH64 and the kernel's decomposition, compiled for the host, against libxxhash and the CPU
// reference fingerprint(): bit-identical on every size class, alignment and element type
// (the CPU/GPU equality test).
#include "plugin/gpu/fp_hash.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "plugin/gpu/fp_emulate.h"
#include "plugin/gpu/fp_job.h"
#include "plugin/gpu/fp_warp.h"
#include "scout/fingerprint.h"
#include "scout/shm_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace {

using namespace scout::fp;
using namespace scout::fp::hash;
using scout::fp::gpu::FpJob;
using scout::fp::gpu::FpPlan;
using scout::fp::gpu::FpPlanScratch;
using scout::fp::gpu::FpResult;

// A buffer whose data starts `offset` bytes past a 64-byte boundary, with 16 bytes of slack on
// both sides so loaders that read whole aligned words stay inside the allocation.
struct Buffer {
  std::vector<uint64_t> storage;
  unsigned char* data;
  size_t len;
  Buffer(size_t n, size_t offset, uint64_t seed) : storage((n + offset + 64) / 8 + 4), len(n) {
    auto* base = reinterpret_cast<unsigned char*>(storage.data());
    data = base + 16 + offset;
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i < n; ++i) data[i] = uint8_t(rng());
  }
};

const size_t kSizes[] = {0,
                         1,
                         3,
                         4,
                         7,
                         8,
                         9,
                         15,
                         16,
                         24,
                         31,
                         32,
                         33,
                         63,
                         64,
                         65,
                         100,
                         511,
                         kBlockBytes - 1,
                         kBlockBytes,
                         kBlockBytes + 1,
                         kBlockBytes + 31,
                         2 * kBlockBytes + 7,
                         64 * kBlockBytes,
                         64 * kBlockBytes + 1,
                         65 * kBlockBytes - 3};

TEST(FpHash, Xxh64MatchesLibxxhashOnEverySizeAndAlignment) {
  uint64_t none = 0;
  for (size_t n : kSizes) {
    for (size_t offset = 0; offset < 8; ++offset) {
      Buffer b(n, offset, n * 8 + offset);
      for (uint64_t seed : {uint64_t(0), uint64_t(1), uint64_t(0x9E3779B97F4A7C15ull), ~uint64_t(0)}) {
        const uint64_t expect = XXH64(b.data, n, seed);
        EXPECT_EQ(xxh64_lanes<kNotFloat>(HostBytes{b.data, n}, n, seed, &none, &none), expect)
            << "HostBytes n=" << n << " offset=" << offset;
        if (offset == 0) {
          AlignedWords w{reinterpret_cast<const uint64_t*>(b.data), n};
          EXPECT_EQ(xxh64_lanes<kNotFloat>(w, n, seed, &none, &none), expect) << "aligned n=" << n;
        } else {
          FunnelWords w{reinterpret_cast<const uint64_t*>(b.data - offset), uint32_t(offset), n};
          EXPECT_EQ(xxh64_lanes<kNotFloat>(w, n, seed, &none, &none), expect)
              << "funnel n=" << n << " offset=" << offset;
        }
      }
    }
  }
}

TEST(FpHash, Xxh64MatchesLibxxhashOnMultiMiB) {
  uint64_t none = 0;
  const size_t n = (3 << 20) + 13;
  for (size_t offset : {size_t(0), size_t(5)}) {
    Buffer b(n, offset, 99);
    EXPECT_EQ(xxh64_lanes<kNotFloat>(HostBytes{b.data, n}, n, 7, &none, &none), XXH64(b.data, n, 7));
  }
}

TEST(FpHash, WordHashAndRootFollowTheDefinition) {
  const uint64_t words[4] = {1, 2, 3, 4};
  EXPECT_EQ(xxh64_words(words, 4, 77), XXH64(words, 32, 77));
  EXPECT_EQ(xxh64_words(words, 1, 5), XXH64(words, 8, 5));
  const uint64_t root_words[4] = {11, 22, 1, 0};
  EXPECT_EQ(root_hash(11, 22, 1, 0), XXH64(root_words, 32, 0x73636f75742d6670ull));
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t w = rng(), seed = rng(), r[4] = {rng(), rng(), rng(), rng()};
    EXPECT_EQ(xxh64_word(w, seed), XXH64(&w, 8, seed));
    EXPECT_EQ(root_hash(r[0], r[1], r[2], r[3]), XXH64(r, 32, kRootSeed));
  }
}

// The kernel's 16-byte loaders (fp_kernel.cu: aligned pairs, and FunnelPairs over the aligned
// chunks around a misaligned message, reading whole chunks as the GPU does) give libxxhash's
// value when a thread pair's lanes (pair_stripes, h = 0 and 1) meet in finish_message.
struct RawChunks {  // chunk i = the 16 bytes at `aligned` + 16 i, read whole (padded buffer)
  const unsigned char* aligned;
  scout::fp::gpu::WordPair operator()(uint64_t i) const {
    scout::fp::gpu::WordPair w;
    std::memcpy(&w.a, aligned + 16 * i, 8);
    std::memcpy(&w.b, aligned + 16 * i + 8, 8);
    return w;
  }
};
struct RawPairs {
  const unsigned char* p;
  scout::fp::gpu::WordPair operator()(uint32_t s, uint32_t h) const { return RawChunks{p}(2 * uint64_t(s) + h); }
};
template <class Load>
uint64_t pair_hash(const Load& load, const unsigned char* msg, uint64_t n, uint64_t seed) {
  uint64_t acc[2][2];
  uint32_t none = 0;
  for (uint32_t h = 0; h < 2; ++h)
    scout::fp::gpu::pair_stripes<kNotFloat>(load, uint32_t(n / kStripeBytes), h, seed, acc[h], &none, &none);
  const uint64_t lanes[4] = {acc[0][0], acc[0][1], acc[1][0], acc[1][1]};
  return finish_message<kNotFloat>(HostBytes{msg, n}, n, seed, lanes, &none, &none);
}

TEST(FpHash, SixteenByteLoadersMatchLibxxhashOnEveryAlignment) {
  for (size_t n : kSizes) {
    for (size_t offset = 0; offset < 16; ++offset) {
      Buffer b(n, offset, n * 16 + offset);  // data at a 64-byte boundary + offset
      const unsigned char* aligned = b.data - offset;
      for (uint64_t seed : {uint64_t(0), uint64_t(0x9E3779B97F4A7C15ull)}) {
        const uint64_t expect = XXH64(b.data, n, seed);
        if (offset == 0) {
          EXPECT_EQ(pair_hash(RawPairs{b.data}, b.data, n, seed), expect) << "aligned n=" << n;
        } else {
          scout::fp::gpu::FunnelPairs<RawChunks> fp{RawChunks{aligned}, uint32_t(offset)};
          EXPECT_EQ(pair_hash(fp, b.data, n, seed), expect) << "funnel n=" << n << " offset=" << offset;
        }
      }
    }
  }
}

// ---- the kernel's plan execution, replayed on the host

struct Job {
  uint64_t capacity;
  std::vector<uint64_t> scratch;
  FpResult result{};
  explicit Job(uint64_t max_leaves)
      : capacity(max_leaves), scratch(scout::fp::gpu::scratch_bytes(max_leaves) / 8, 0) {}
  // The header counters and every tile's item counter are back to zero (the next job that uses
  // the slot starts from them; digests are overwritten before they are read).
  bool counters_clean() const {
    const uint64_t words = 5 + scout::fp::gpu::counter_words(capacity);  // header + counters
    for (uint64_t i = 0; i < words; ++i)
      if (scratch[i] != 0) return false;
    return true;
  }
};

FpJob make_job(const unsigned char* p, uint64_t len, uint64_t max_bytes, uint64_t selector, uint8_t dtype, Job& j,
               uint32_t seq) {
  FpJob job{};
  job.buf = reinterpret_cast<uint64_t>(p);
  job.len = len;
  job.max_bytes = max_bytes;
  job.selector = selector;
  job.result = reinterpret_cast<uint64_t>(&j.result);
  job.scratch = reinterpret_cast<uint64_t>(j.scratch.data());
  job.scratch_leaves = j.capacity;
  job.kind = float_kind(dtype);
  job.seq = seq;
  return job;
}

// Runs one plan with one job through the kernel's decomposition (items completing in the order
// `order_seed` gives, 0: warp by warp); returns the result. The scratch slot is sized for
// `extra_leaves` more leaves than the job, as a pool slot sized for the cap is.
FpResult run_one(const unsigned char* p, uint64_t len, uint64_t max_bytes, uint64_t selector, uint8_t dtype,
                 uint32_t grid, uint64_t order_seed = 0, uint64_t extra_leaves = 0) {
  Job j(hashed_leaves(len, max_bytes) + extra_leaves);
  FpPlan plan{};
  FpPlanScratch ps{};
  plan.ready = scout::fp::gpu::kPlanReady;
  plan.njobs = 1;
  plan.jobs[0] = make_job(p, len, max_bytes, selector, dtype, j, 7);
  EXPECT_EQ(scout::fp::gpu::emulate_launch(&plan, &ps, grid, false, 0, order_seed), scout::fp::gpu::EmuOutcome::kRan);
  EXPECT_TRUE(j.counters_clean()) << "scratch counters left non-zero";
  EXPECT_EQ(j.result.status, scout::fp::gpu::kResultDone);
  EXPECT_EQ(j.result.seq, 7u);
  EXPECT_EQ(plan.finished, 1u);
  return j.result;
}

TEST(FpKernelMapping, FullTreeIdenticalToFingerprint) {
  std::vector<size_t> sizes(std::begin(kSizes), std::end(kSizes));
  sizes.push_back(64 * 64 * kBlockBytes + 4097);  // 16 MiB + 4097: three tree levels above leaves
  for (size_t n : sizes) {
    for (size_t offset : {size_t(0), size_t(3), size_t(8), size_t(13)}) {
      if (n > (1 << 20) && offset != 0 && offset != 8) continue;
      Buffer b(n, offset, n + offset);
      const uint64_t expect = fingerprint(b.data, n, scout::shm::kTypeUint8, nullptr);
      for (uint32_t grid : {1u, 3u, 64u}) {
        for (uint64_t order : {uint64_t(0), uint64_t(grid) * 977 + n}) {
          FpResult r = run_one(b.data, n, ~0ull, 0, scout::shm::kTypeUint8, grid, order, grid == 3 ? 100 : 0);
          EXPECT_EQ(r.value, expect) << "n=" << n << " offset=" << offset << " grid=" << grid << " order=" << order;
          EXPECT_EQ(r.bytes, n);
        }
        if (n > (1 << 20)) break;  // one grid is enough for the big one
      }
    }
  }
}

TEST(FpKernelMapping, CappedIdenticalToFingerprintCapped) {
  const size_t n = 300 * kBlockBytes + 1000;
  Buffer b(n, 0, 5);
  for (uint64_t cap : {uint64_t(kBlockBytes), uint64_t(10 * kBlockBytes), uint64_t(100 * kBlockBytes + 5)}) {
    for (uint64_t sel : {uint64_t(1), uint64_t(0xdeadbeef)}) {
      uint64_t bytes = 0;
      const uint64_t expect = fingerprint_capped(b.data, n, cap, sel, scout::shm::kTypeUint8, nullptr, &bytes);
      FpResult r = run_one(b.data, n, cap, sel, scout::shm::kTypeUint8, 5);
      EXPECT_EQ(r.value, expect) << cap;
      EXPECT_EQ(r.bytes, bytes);
    }
  }
}

template <class T>
void put(std::vector<unsigned char>& v, size_t i, T x) {
  std::memcpy(v.data() + i * sizeof(T), &x, sizeof(T));
}

TEST(FpKernelMapping, CountsNanAndInfExactlyLikeTheReference) {
  // Crafted buffers of each float type, non-finite values at block edges and in the tail.
  struct Case {
    uint8_t dtype;
    size_t elem;
    uint64_t nan_bits, inf_bits;
  } cases[] = {{scout::shm::kTypeFloat16, 2, 0x7E00, 0xFC00},
               {scout::shm::kTypeBfloat16, 2, 0xFFC0, 0x7F80},
               {scout::shm::kTypeFloat32, 4, 0x7FC00000, 0xFF800000},
               {scout::shm::kTypeFloat64, 8, 0x7FF8000000000001ull, 0x7FF0000000000000ull}};
  for (const Case& c : cases) {
    const size_t count = 3 * kBlockBytes / c.elem + 13;
    std::vector<unsigned char> v(count * c.elem, 0x11);
    const size_t nan_at[] = {0, kBlockBytes / c.elem - 1, kBlockBytes / c.elem, count - 1};
    const size_t inf_at[] = {5, 2 * kBlockBytes / c.elem + 1};
    for (size_t i : nan_at) std::memcpy(v.data() + i * c.elem, &c.nan_bits, c.elem);
    for (size_t i : inf_at) std::memcpy(v.data() + i * c.elem, &c.inf_bits, c.elem);
    Counts ref;
    const uint64_t expect = fingerprint(v.data(), v.size(), c.dtype, &ref);
    EXPECT_EQ(ref.nan, 4u) << int(c.dtype);
    EXPECT_EQ(ref.inf, 2u) << int(c.dtype);
    FpResult r = run_one(v.data(), v.size(), ~0ull, 0, c.dtype, 2);
    EXPECT_EQ(r.value, expect);
    EXPECT_EQ(r.nan, 4u) << int(c.dtype);
    EXPECT_EQ(r.inf, 2u) << int(c.dtype);
  }
}

TEST(FpKernelMapping, SeveralJobsInOnePlanAndScratchReuse) {
  Buffer a(100000, 0, 1), b(5, 0, 2), c(64 * kBlockBytes * 3, 0, 3);
  Job ja(1000), jb(1000), jc(1000);
  FpPlan plan{};
  FpPlanScratch ps{};
  plan.ready = scout::fp::gpu::kPlanReady;
  plan.njobs = 3;
  plan.jobs[0] = make_job(a.data, a.len, ~0ull, 0, scout::shm::kTypeUint8, ja, 1);
  plan.jobs[1] = make_job(b.data, b.len, ~0ull, 0, scout::shm::kTypeUint8, jb, 2);
  plan.jobs[2] = make_job(c.data, c.len, ~0ull, 0, scout::shm::kTypeUint8, jc, 3);
  ASSERT_EQ(scout::fp::gpu::emulate_launch(&plan, &ps, 4, false, 0), scout::fp::gpu::EmuOutcome::kRan);
  EXPECT_EQ(ja.result.value, fingerprint(a.data, a.len, scout::shm::kTypeUint8, nullptr));
  EXPECT_EQ(jb.result.value, fingerprint(b.data, b.len, scout::shm::kTypeUint8, nullptr));
  EXPECT_EQ(jc.result.value, fingerprint(c.data, c.len, scout::shm::kTypeUint8, nullptr));
  // The finisher left the scratch as it found it: reusing it gives the right answer again.
  auto* sc = reinterpret_cast<scout::fp::gpu::FpJobScratch*>(ja.scratch.data());
  EXPECT_EQ(sc->tiles_done, 0u);
  EXPECT_EQ(sc->bytes, 0u);
  EXPECT_TRUE(ja.counters_clean());
  EXPECT_TRUE(jb.counters_clean());
  EXPECT_TRUE(jc.counters_clean());
  plan.njobs = 1;
  plan.finished = 0;
  plan.jobs[0] = make_job(c.data, c.len, ~0ull, 0, scout::shm::kTypeUint8, ja, 4);
  ja.result = FpResult{};
  ASSERT_EQ(scout::fp::gpu::emulate_launch(&plan, &ps, 2, false, 0), scout::fp::gpu::EmuOutcome::kRan);
  EXPECT_EQ(ja.result.value, jc.result.value);
}

// Random sizes (up to 3 MiB), start offsets 0..15, every element type, capped and uncapped, grids
// of 1..40 CTAs, items completing in shuffled orders: always the CPU reference's value, counts
// and bytes.
TEST(FpKernelMapping, RandomShapesAndOrdersIdenticalToTheReference) {
  std::mt19937_64 rng(28);
  const uint8_t types[] = {scout::shm::kTypeUint8, scout::shm::kTypeFloat16, scout::shm::kTypeBfloat16,
                           scout::shm::kTypeFloat32, scout::shm::kTypeFloat64};
  for (int i = 0; i < 60; ++i) {
    const size_t n = i < 20 ? rng() % (64 * kBlockBytes + 100) : rng() % (3u << 20);
    const size_t offset = rng() % 16;
    const uint8_t t = types[rng() % 5];
    Buffer b(n, offset, rng());
    for (uint64_t k = 0; k + 8 <= n; k += 4096 + 8 * (k % 5)) {  // non-finite patterns of every width
      const uint64_t v = (k / 4096) % 2 ? 0x7FF0000000000000ull : 0x7FC000007F800000ull;
      std::memcpy(b.data + (k & ~uint64_t(7)), &v, 8);
    }
    const uint64_t cap = rng() % 3 == 0 ? (uint64_t(rng() % 200) + 1) * 4096 + rng() % 4096 : ~0ull;
    const uint64_t sel = rng();
    Counts c;
    uint64_t bytes = 0;
    const uint64_t expect = fingerprint_capped(b.data, n, cap, sel, t, &c, &bytes);
    const uint32_t grid = uint32_t(rng() % 40) + 1;
    FpResult r = run_one(b.data, n, cap, sel, t, grid, rng() | 1, rng() % 300);
    EXPECT_EQ(r.value, expect) << "case " << i << " n=" << n << " offset=" << offset << " dtype=" << int(t)
                               << " cap=" << cap << " grid=" << grid;
    EXPECT_EQ(r.nan, c.nan) << "case " << i;
    EXPECT_EQ(r.inf, c.inf) << "case " << i;
    EXPECT_EQ(r.bytes, bytes) << "case " << i;
  }
}

TEST(FpKernelMapping, WaitingPlanRunsOnlyWhenReadyOrIsAbandoned) {
  Buffer a(5000, 0, 1);
  Job ja(10);
  FpPlan plan{};
  FpPlanScratch ps{};
  plan.wait = 1;
  EXPECT_EQ(scout::fp::gpu::emulate_launch(&plan, &ps, 1, false, 0), scout::fp::gpu::EmuOutcome::kWaiting);
  plan.jobs[0] = make_job(a.data, a.len, ~0ull, 0, scout::shm::kTypeUint8, ja, 1);
  plan.njobs = 1;
  plan.ready = scout::fp::gpu::kPlanReady;
  EXPECT_EQ(scout::fp::gpu::emulate_launch(&plan, &ps, 1, false, 0), scout::fp::gpu::EmuOutcome::kRan);
  EXPECT_EQ(ja.result.value, fingerprint(a.data, a.len, scout::shm::kTypeUint8, nullptr));
  FpPlan late{};
  late.wait = 1;
  EXPECT_EQ(scout::fp::gpu::emulate_launch(&late, &ps, 1, true, 0), scout::fp::gpu::EmuOutcome::kTimedOut);
  EXPECT_EQ(late.abandoned, scout::fp::gpu::kPlanAbandoned);
  EXPECT_EQ(late.finished, 1u);
}

}  // namespace
