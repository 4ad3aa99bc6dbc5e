// Host replay of fp_kernel.cu's mapping; see fp_emulate.h. Each step names the kernel step it
// mirrors and calls the same fp_warp.h / fp_hash.h functions with the same arguments; a
// warp's 32 threads run one after the other between shuffles, and a shuffle is a read of the
// other thread's value. Work items run in the order a real launch could finish them (`order`),
// so the per-tile and per-job "last one finishes" logic is exercised in any order.
#include "plugin/gpu/fp_emulate.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <vector>

#include "plugin/gpu/fp_hash.h"
#include "plugin/gpu/fp_warp.h"
#include "scout/fingerprint.h"

namespace scout::fp::gpu {
namespace {

using namespace scout::fp::hash;

// The Mem policy of fp_warp.h on the host. The kernel loads whole aligned 16-byte chunks and
// 8-byte words, which may read bytes around the message inside those aligned units (harmless on
// the GPU, not on the host): here every loader reads only the message's own bytes and returns
// zero for the others, which gives the same values for every byte the hash uses. The kernel's
// raw loaders are checked against libxxhash on padded buffers in test/unit/fp_hash_test.cc.
struct HostMem {
  // 16 bytes of a message from byte `off`, bytes outside [0, len) read as zero.
  static WordPair bytes16(const unsigned char* msg, int64_t off, uint64_t len) {
    unsigned char b[16] = {};
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t at = off + i;
      if (at >= 0 && uint64_t(at) < len) b[i] = msg[at];
    }
    WordPair w;
    std::memcpy(&w.a, b, 8);
    std::memcpy(&w.b, b + 8, 8);
    return w;
  }
  struct Pairs {
    const unsigned char* p;
    uint64_t len;
    WordPair operator()(uint32_t s, uint32_t h) const { return bytes16(p, int64_t(s) * kStripeBytes + 16 * h, len); }
  };
  struct Chunks {
    const unsigned char* msg;
    int64_t lead;  // message start - aligned start
    uint64_t len;
    WordPair operator()(uint64_t i) const { return bytes16(msg, int64_t(16 * i) - lead, len); }
  };
  struct DigestPairs {
    const uint64_t* d;
    WordPair operator()(uint32_t s, uint32_t h) const { return WordPair{d[4 * s + 2 * h], d[4 * s + 2 * h + 1]}; }
  };
  Pairs pairs(uint64_t p, uint64_t len) const { return Pairs{reinterpret_cast<const unsigned char*>(p), len}; }
  Chunks chunks(uint64_t aligned, uint64_t p, uint64_t len) const {
    return Chunks{reinterpret_cast<const unsigned char*>(p), int64_t(p - aligned), len};
  }
  HostBytes words(uint64_t p, uint64_t len) const { return HostBytes{reinterpret_cast<const unsigned char*>(p), len}; }
  DigestPairs digest_pairs(const uint64_t* d) const { return DigestPairs{d}; }
  AlignedWords digest_words(const uint64_t* d, uint64_t len) const { return AlignedWords{d, len}; }
};

// Kernel: finish_job (levels 2.. by the warp's 16 pairs, root, result, scratch reset).
void finish_job(const FpJob& job, uint64_t m, uint64_t gpu_ns) {
  const HostMem mem;
  auto* sc = reinterpret_cast<FpJobScratch*>(job.scratch);
  const ScratchLayout lay = scratch_layout(job.scratch_leaves, m);
  uint64_t* level = sc->words + lay.level1;
  uint64_t count = tiles_of(m);
  uint32_t depth = 1;
  while (count > 1) {
    const uint64_t parents = level_parent_count(count);
    uint64_t* up = level + count;
    for (uint64_t base = 0; base < parents; base += 16) {
      uint64_t acc[32][2] = {};
      for (uint32_t lane = 0; lane < 32; ++lane) {  // pair part, every lane
        const uint64_t q = base + (lane >> 1);
        if (q < parents)
          node_pair(mem, level + q * kLeafGroups, tile_leaves(q, count), lane & 1, node_seed(depth + 1, q), acc[lane]);
      }
      for (uint32_t lane = 0; lane < 32; lane += 2) {  // shuffle, finish in h = 0
        const uint64_t q = base + (lane >> 1);
        if (q < parents)
          up[q] = node_finish(mem, level + q * kLeafGroups, tile_leaves(q, count), node_seed(depth + 1, q), acc[lane],
                              acc[lane + 1][0], acc[lane + 1][1]);
      }
    }
    level = up;
    count = parents;
    ++depth;
  }
  const uint64_t n = num_blocks(job.len);
  auto* r = reinterpret_cast<FpResult*>(job.result);
  r->value = root_hash(level[0], job.len, kFormatVersion, m == n ? 0 : m);
  r->nan = sc->nan;
  r->inf = sc->inf;
  r->bytes = sc->bytes;
  r->gpu_ns = gpu_ns;
  r->seq = job.seq;
  sc->nan = sc->inf = sc->bytes = 0;
  sc->t_start_inv = 0;
  sc->tiles_done = 0;
  std::atomic_ref<uint32_t>(r->status).store(kResultDone, std::memory_order_release);
}

// Kernel: run_item (one warp, 16 leaves).
template <FloatKind kKind>
void run_item(const FpJob& job, uint64_t item, uint64_t gpu_ns) {
  const HostMem mem;
  const uint64_t n = num_blocks(job.len);
  const uint64_t m = hashed_leaves(job.len, job.max_bytes);
  auto* sc = reinterpret_cast<FpJobScratch*>(job.scratch);
  const ScratchLayout lay = scratch_layout(job.scratch_leaves, m);
  LeafThread th[32];
  for (uint32_t lane = 0; lane < 32; ++lane) th[lane] = leaf_thread<kKind>(mem, job, n, m, item, lane);
  uint64_t nan = 0, inf = 0, bytes = 0;
  for (uint32_t lane = 0; lane < 32; lane += 2) {  // h = 0 threads, after the pair shuffle
    if (th[lane].valid) {
      sc->words[lay.leaves + th[lane].k] =
          leaf_finish<kKind>(mem, job, th[lane], th[lane + 1].acc[0], th[lane + 1].acc[1], &th[lane].nan, &th[lane].inf);
      bytes += th[lane].blen;
    }
  }
  for (uint32_t lane = 0; lane < 32; ++lane) {  // warp sums (64-bit, as the kernel's warp_sum)
    nan += th[lane].nan;
    inf += th[lane].inf;
  }
  if (kKind == kNotFloat) nan = inf = 0;
  sc->nan += nan;
  sc->inf += inf;
  sc->bytes += bytes;
  const uint64_t tile = item / kTileItems;
  uint32_t* counters = reinterpret_cast<uint32_t*>(sc->words);
  if (++counters[tile] != tile_items(tile, m)) return;
  // Last item of the tile: the level-1 node by pair 0.
  const uint64_t* leaves = sc->words + lay.leaves + tile * kLeafGroups;
  uint64_t node = leaves[0];  // a one-leaf buffer: the leaf is the top
  if (m != 1) {
    const uint64_t in_tile = tile_leaves(tile, m);
    uint64_t acc[2][2] = {};
    node_pair(mem, leaves, in_tile, 0, node_seed(1, tile), acc[0]);
    node_pair(mem, leaves, in_tile, 1, node_seed(1, tile), acc[1]);
    node = node_finish(mem, leaves, in_tile, node_seed(1, tile), acc[0], acc[1][0], acc[1][1]);
  }
  sc->words[lay.level1 + tile] = node;
  counters[tile] = 0;
  if (++sc->tiles_done == tiles_of(m)) finish_job(job, m, gpu_ns);
}

}  // namespace

EmuOutcome emulate_launch(FpPlan* plan, FpPlanScratch* ps, uint32_t grid, bool timed_out, uint64_t gpu_ns_per_job,
                          uint64_t order_seed) {
  // Kernel: plan_prologue (the leader).
  if (plan->wait && std::atomic_ref<uint32_t>(plan->ready).load(std::memory_order_acquire) != kPlanReady) {
    if (!timed_out) return EmuOutcome::kWaiting;
    plan->abandoned = kPlanAbandoned;
    std::atomic_ref<uint32_t>(plan->finished).store(1, std::memory_order_release);
    return EmuOutcome::kTimedOut;
  }
  const uint32_t njobs = plan->njobs < kMaxJobs ? plan->njobs : kMaxJobs;
  std::memcpy(ps->jobs, plan->jobs, sizeof(FpJob) * njobs);
  ps->njobs = njobs;
  // Kernel: the items of every job, taken grid-stride by the warps of `grid` CTAs.
  uint64_t items_before[kMaxJobs + 1] = {0};
  for (uint32_t j = 0; j < njobs; ++j)
    items_before[j + 1] = items_before[j] + job_items(hashed_leaves(ps->jobs[j].len, ps->jobs[j].max_bytes));
  const uint64_t total = items_before[njobs];
  if (grid == 0) grid = 1;
  const uint64_t warps = uint64_t(grid) * kWarpsPerCta;
  // Completion order: warp by warp (each warp's items in its own order), or shuffled.
  std::vector<uint64_t> order;
  order.reserve(total);
  for (uint64_t w = 0; w < warps && w < total; ++w)
    for (uint64_t it = w; it < total; it += warps) order.push_back(it);
  if (order_seed != 0) {
    std::mt19937_64 rng(order_seed);
    std::shuffle(order.begin(), order.end(), rng);
  }
  for (uint64_t it : order) {
    uint32_t j = 0;
    while (it >= items_before[j + 1]) ++j;
    const FpJob& job = ps->jobs[j];
    const uint64_t item = it - items_before[j];
    switch (static_cast<FloatKind>(job.kind)) {
      case kF16: run_item<kF16>(job, item, gpu_ns_per_job); break;
      case kBF16: run_item<kBF16>(job, item, gpu_ns_per_job); break;
      case kF32: run_item<kF32>(job, item, gpu_ns_per_job); break;
      case kF64: run_item<kF64>(job, item, gpu_ns_per_job); break;
      default: run_item<kNotFloat>(job, item, gpu_ns_per_job); break;
    }
  }
  ps->decision = kDecisionNone;
  ps->exited = 0;
  std::atomic_ref<uint32_t>(plan->finished).store(1, std::memory_order_release);
  return EmuOutcome::kRan;
}

}  // namespace scout::fp::gpu
