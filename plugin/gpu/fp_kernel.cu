// The fingerprint kernel (docs/fingerprint.md, "GPU kernel"). One launch hashes the jobs of one
// FpPlan. The hash work is the functions of fp_warp.h / fp_hash.h, the same ones fp_emulate.cc
// replays on the host in the tests; this file holds the thread mapping, the memory access and
// the synchronisation:
//
//   * Launch prologue (once per CTA): warp 0 of the first CTA to arrive becomes the leader
//     (atomicCAS on FpPlanScratch::decision). Only the leader reads the plan in pinned host
//     memory: it waits for FpPlan::ready when the plan was launched before its buffers were known
//     (send hashes, FpPlan::wait), copies the jobs into FpPlanScratch (device memory) and
//     publishes Run, or Timeout after FpPlan::timeout_ns. The other CTAs poll the decision in
//     device memory and read the jobs from there. One __syncthreads pair per launch, none per
//     tile: host memory is off the hashing path.
//   * Hashing: every warp takes work items (16 leaves of one job) grid-stride over all jobs.
//     Thread t hashes lanes 2h, 2h+1 of leaf t/2 with 16-byte loads, kPairBatch in flight;
//     a shuffle pairs the accumulators; thread h = 0 finishes the leaf and stores its digest
//     in the job's scratch. NaN/Inf/byte counts are summed by warp shuffles, one atomic per
//     warp and item.
//   * Tree: the warp that completes a tile's last item (per-tile counter, threadfence +
//     atomicAdd) hashes the tile's <= 64 leaf digests into its level-1 node; the warp that
//     completes a job's last tile (FpJobScratch::tiles_done) builds the levels above with its 16
//     pairs and writes the root, the counts and the GPU time into the job's FpResult in pinned
//     host memory, status last after a system-scope fence, then resets the scratch.
#include "plugin/gpu/fp_hash.h"
#include "plugin/gpu/fp_job.h"
#include "plugin/gpu/fp_warp.h"
#include "scout/fingerprint.h"

namespace scout::fp::gpu {
namespace {

using namespace scout::fp::hash;

constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint32_t load_acquire_gpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// One aligned 16-byte read-only load of the buffer; on a miss L2 fetches the 256-byte sector
// group around it (the next stripes of the same block), L1 keeps nothing (each byte is read once).
__device__ __forceinline__ WordPair ld_buf16(const void* p) {
  WordPair w;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u64 {%0, %1}, [%2];" : "=l"(w.a), "=l"(w.b) : "l"(p));
  return w;
}

// Stripe pairs of a 16-byte aligned block.
struct DevPairs {
  const unsigned char* p;
  __device__ __forceinline__ WordPair operator()(uint32_t s, uint32_t h) const {
    return ld_buf16(p + uint64_t(s) * kStripeBytes + 16 * h);
  }
};
// Aligned 16-byte chunks around a misaligned block (FunnelPairs).
struct DevChunks {
  const unsigned char* aligned;
  __device__ __forceinline__ WordPair operator()(uint64_t i) const { return ld_buf16(aligned + 16 * i); }
};
// Digests in job scratch, written by other warps: read from L2 (ld.global.cg).
struct ScratchPairs {
  const uint64_t* w;
  __device__ __forceinline__ WordPair operator()(uint32_t s, uint32_t h) const {
    const auto* q = reinterpret_cast<const unsigned long long*>(w) + 4 * uint64_t(s) + 2 * h;
    return WordPair{__ldcg(q), __ldcg(q + 1)};
  }
};
struct ScratchWords {
  const uint64_t* w;
  uint64_t len;
  __device__ __forceinline__ uint64_t operator()(uint64_t i) const {
    return i * 8 < len ? __ldcg(reinterpret_cast<const unsigned long long*>(w) + i) : 0;
  }
};

// The Mem policy of fp_warp.h on the GPU. Tail words use 8-byte loads of the aligned words
// holding the message (AlignedWords / FunnelWords, fp_hash.h): they may read up to 7 bytes past
// the buffer's last byte inside its last aligned word, never past an allocation (256-byte
// granular).
struct DevMem {
  __device__ __forceinline__ DevPairs pairs(uint64_t p, uint64_t) const {
    return DevPairs{reinterpret_cast<const unsigned char*>(p)};
  }
  __device__ __forceinline__ DevChunks chunks(uint64_t aligned, uint64_t, uint64_t) const {
    return DevChunks{reinterpret_cast<const unsigned char*>(aligned)};
  }
  struct Words {
    uint64_t p, len;
    __device__ __forceinline__ uint64_t operator()(uint64_t i) const {
      const uint32_t shift = uint32_t(p & 7);
      const auto* a = reinterpret_cast<const uint64_t*>(p - shift);
      if (shift == 0) return AlignedWords{a, len}(i);
      return FunnelWords{a, shift, len}(i);
    }
  };
  __device__ __forceinline__ Words words(uint64_t p, uint64_t len) const { return Words{p, len}; }
  __device__ __forceinline__ ScratchPairs digest_pairs(const uint64_t* d) const { return ScratchPairs{d}; }
  __device__ __forceinline__ ScratchWords digest_words(const uint64_t* d, uint64_t len) const {
    return ScratchWords{d, len};
  }
};

__device__ __forceinline__ uint64_t shfl(uint64_t v, int src) {
  return __shfl_sync(kFull, static_cast<unsigned long long>(v), src);
}

__device__ __forceinline__ uint64_t warp_sum(uint64_t v) {
  SCOUT_UNROLL
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFull, static_cast<unsigned long long>(v), off);
  return v;
}

struct Shared {
  FpJob jobs[kMaxJobs];
  uint64_t items_before[kMaxJobs + 1];
  uint32_t decision;
  uint32_t njobs;
};

// Levels 2.. of job `job` from its level-1 nodes, the root and the result (one warp: 16 pairs
// hash 16 nodes of a level at a time).
__device__ void finish_job(const FpJob& job, uint64_t m) {
  const DevMem mem;
  auto* sc = reinterpret_cast<FpJobScratch*>(job.scratch);
  const ScratchLayout lay = scratch_layout(job.scratch_leaves, m);
  const uint32_t lane = threadIdx.x & 31, h = lane & 1;
  uint64_t* level = sc->words + lay.level1;
  uint64_t count = tiles_of(m);
  uint32_t depth = 1;
  while (count > 1) {
    const uint64_t parents = level_parent_count(count);
    uint64_t* up = level + count;
    for (uint64_t base = 0; base < parents; base += 16) {
      const uint64_t q = base + (lane >> 1);
      const bool valid = q < parents;
      const uint64_t kq = valid ? tile_leaves(q, count) : 0;
      const uint64_t seed = node_seed(depth + 1, q);
      uint64_t acc[2] = {0, 0};
      if (valid) node_pair(mem, level + q * kLeafGroups, kq, h, seed, acc);
      const uint64_t p0 = shfl(acc[0], lane ^ 1), p1 = shfl(acc[1], lane ^ 1);
      if (valid && h == 0) up[q] = node_finish(mem, level + q * kLeafGroups, kq, seed, acc, p0, p1);
    }
    __threadfence();
    __syncwarp();
    level = up;
    count = parents;
    ++depth;
  }
  if (lane == 0) {
    const uint64_t top = __ldcg(reinterpret_cast<const unsigned long long*>(level));
    const uint64_t n = num_blocks(job.len);
    const uint64_t value = root_hash(top, job.len, kFormatVersion, m == n ? 0 : m);
    const uint64_t nan = atomicExch(reinterpret_cast<unsigned long long*>(&sc->nan), 0ull);
    const uint64_t inf = atomicExch(reinterpret_cast<unsigned long long*>(&sc->inf), 0ull);
    const uint64_t bytes = atomicExch(reinterpret_cast<unsigned long long*>(&sc->bytes), 0ull);
    const uint64_t t0 = ~atomicExch(reinterpret_cast<unsigned long long*>(&sc->t_start_inv), 0ull);
    atomicExch(&sc->tiles_done, 0u);
    volatile FpResult* r = reinterpret_cast<volatile FpResult*>(job.result);
    r->value = value;
    r->nan = nan;
    r->inf = inf;
    r->bytes = bytes;
    const uint64_t t1 = globaltimer();
    r->gpu_ns = t1 > t0 ? t1 - t0 : 0;
    r->seq = job.seq;
    __threadfence_system();
    r->status = kResultDone;
  }
}

// One work item: 16 leaves of `job` starting at leaf item * 16, by the calling warp.
template <FloatKind kKind>
__device__ __noinline__ void run_item(const FpJob& job, uint64_t item) {
  const DevMem mem;
  const uint32_t lane = threadIdx.x & 31, h = lane & 1;
  const uint64_t n = num_blocks(job.len);
  const uint64_t m = hashed_leaves(job.len, job.max_bytes);
  auto* sc = reinterpret_cast<FpJobScratch*>(job.scratch);
  const ScratchLayout lay = scratch_layout(job.scratch_leaves, m);
  if (lane == 0) atomicMax(reinterpret_cast<unsigned long long*>(&sc->t_start_inv), ~globaltimer());

  LeafThread th = leaf_thread<kKind>(mem, job, n, m, item, lane);
  const uint64_t p0 = shfl(th.acc[0], lane ^ 1), p1 = shfl(th.acc[1], lane ^ 1);
  uint64_t blen = 0;
  if (th.valid && h == 0) {
    sc->words[lay.leaves + th.k] = leaf_finish<kKind>(mem, job, th, p0, p1, &th.nan, &th.inf);
    blen = th.blen;
  }
  const uint64_t nan = kKind != kNotFloat ? warp_sum(th.nan) : 0;
  const uint64_t inf = kKind != kNotFloat ? warp_sum(th.inf) : 0;
  const uint64_t bytes = warp_sum(blen);
  __threadfence();  // this thread's digest is visible GPU-wide before the item counts as done
  __syncwarp();
  const uint64_t tile = item / kTileItems;
  uint32_t* counters = reinterpret_cast<uint32_t*>(sc->words);
  uint32_t last = 0;
  if (lane == 0) {
    if (nan) atomicAdd(reinterpret_cast<unsigned long long*>(&sc->nan), static_cast<unsigned long long>(nan));
    if (inf) atomicAdd(reinterpret_cast<unsigned long long*>(&sc->inf), static_cast<unsigned long long>(inf));
    atomicAdd(reinterpret_cast<unsigned long long*>(&sc->bytes), static_cast<unsigned long long>(bytes));
    __threadfence();
    last = atomicAdd(&counters[tile], 1u) + 1 == tile_items(tile, m) ? 1u : 0u;
  }
  if (!__shfl_sync(kFull, last, 0)) return;

  // This warp completed the tile: its level-1 node (pair 0), then maybe the job.
  __threadfence();
  const uint64_t* leaves = sc->words + lay.leaves + tile * kLeafGroups;
  const uint64_t in_tile = tile_leaves(tile, m);
  uint64_t node = 0;
  if (m == 1) {
    node = __ldcg(reinterpret_cast<const unsigned long long*>(leaves));  // one leaf: it is the top
  } else {
    const uint64_t seed = node_seed(1, tile);
    uint64_t acc[2] = {0, 0};
    if (lane < 2) node_pair(mem, leaves, in_tile, h, seed, acc);
    const uint64_t q0 = shfl(acc[0], lane ^ 1), q1 = shfl(acc[1], lane ^ 1);
    if (lane == 0) node = node_finish(mem, leaves, in_tile, seed, acc, q0, q1);
  }
  uint32_t job_done = 0;
  if (lane == 0) {
    sc->words[lay.level1 + tile] = node;
    counters[tile] = 0;  // ready for the slot's next job
    __threadfence();
    job_done = atomicAdd(&sc->tiles_done, 1u) + 1 == tiles_of(m) ? 1u : 0u;
  }
  if (!__shfl_sync(kFull, job_done, 0)) return;
  __threadfence();
  finish_job(job, m);
}

// Launch prologue, warp 0 of each CTA: the leader reads the plan (host memory) and publishes
// the decision and the jobs in FpPlanScratch; the others wait for it. Fills sh.decision and,
// on Run, sh.jobs / sh.njobs.
__device__ void plan_prologue(const FpPlan* plan, FpPlanScratch* ps, Shared& sh) {
  const uint32_t lane = threadIdx.x & 31;
  uint32_t role = 0;
  if (lane == 0) role = atomicCAS(&ps->decision, kDecisionNone, kDecisionClaimed);
  role = __shfl_sync(kFull, role, 0);
  uint32_t decision = kDecisionNone;
  if (role == kDecisionNone) {  // leader
    // Host memory is a PCIe round trip away: every lane acquires `wait` itself (one coalesced
    // read); a plan that was ready at launch then costs one more round trip, njobs and all the
    // job words read at once.
    const uint32_t wait = load_acquire_sys(&plan->wait);
    decision = kDecisionRun;
    if (wait) {
      if (lane == 0) {
        const uint64_t t0 = globaltimer();
        while (load_acquire_sys(&plan->ready) != kPlanReady) {
          if (globaltimer() - t0 > plan->timeout_ns) {
            decision = kDecisionTimeout;
            break;
          }
          __nanosleep(256);
        }
      }
      decision = __shfl_sync(kFull, decision, 0);
      if (decision == kDecisionRun) (void)load_acquire_sys(&plan->ready);  // every lane acquires
    }
    if (decision == kDecisionRun) {
      constexpr uint32_t kWords = kMaxJobs * uint32_t(sizeof(FpJob) / 8);  // 64: two per lane
      const volatile uint64_t* src = reinterpret_cast<const volatile uint64_t*>(plan->jobs);
      uint32_t njobs = reinterpret_cast<const volatile FpPlan*>(plan)->njobs;
      const uint64_t w0 = src[lane], w1 = src[lane + 32];
      static_assert(kWords == 64, "two job words per lane");
      if (njobs > kMaxJobs) njobs = kMaxJobs;
      const uint32_t words = njobs * uint32_t(sizeof(FpJob) / 8);
      if (lane < words) {
        reinterpret_cast<uint64_t*>(ps->jobs)[lane] = w0;
        reinterpret_cast<uint64_t*>(sh.jobs)[lane] = w0;
      }
      if (lane + 32 < words) {
        reinterpret_cast<uint64_t*>(ps->jobs)[lane + 32] = w1;
        reinterpret_cast<uint64_t*>(sh.jobs)[lane + 32] = w1;
      }
      if (lane == 0) {
        ps->njobs = njobs;
        sh.njobs = njobs;
      }
      __threadfence();
      __syncwarp();
      if (lane == 0) atomicExch(&ps->decision, kDecisionRun);
    } else if (lane == 0) {
      volatile FpPlan* vp = const_cast<volatile FpPlan*>(plan);
      vp->abandoned = kPlanAbandoned;
      __threadfence_system();
      atomicExch(&ps->decision, kDecisionTimeout);
    }
  } else {  // follower: the leader is running, so the decision comes
    if (lane == 0) {
      for (;;) {
        decision = load_acquire_gpu(&ps->decision);
        if (decision == kDecisionRun || decision == kDecisionTimeout) break;
        __nanosleep(200);
      }
    }
    decision = __shfl_sync(kFull, decision, 0);
    if (decision == kDecisionRun) {
      (void)load_acquire_gpu(&ps->decision);  // every lane acquires the leader's jobs itself
      uint32_t njobs = __ldcg(&ps->njobs);
      if (njobs > kMaxJobs) njobs = kMaxJobs;
      const uint32_t words = njobs * uint32_t(sizeof(FpJob) / 8);
      for (uint32_t i = lane; i < words; i += 32) {
        reinterpret_cast<uint64_t*>(sh.jobs)[i] =
            __ldcg(reinterpret_cast<const unsigned long long*>(ps->jobs) + i);
      }
      if (lane == 0) sh.njobs = njobs;
    }
  }
  if (lane == 0) sh.decision = decision;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreadsPerCta, kCtasPerSm)
    scout_fp_plan(const FpPlan* plan, FpPlanScratch* ps) {
  __shared__ Shared sh;
  if (threadIdx.x < 32) plan_prologue(plan, ps, sh);
  __syncthreads();
  if (sh.decision == kDecisionRun) {
    if (threadIdx.x == 0) {
      sh.items_before[0] = 0;
      for (uint32_t j = 0; j < sh.njobs; ++j)
        sh.items_before[j + 1] = sh.items_before[j] + job_items(hashed_leaves(sh.jobs[j].len, sh.jobs[j].max_bytes));
    }
    __syncthreads();
    // Item indices fit 32 bits: 2^32 items are 2^36 leaves (256 TiB), far beyond any device buffer.
    const uint32_t total = uint32_t(sh.items_before[sh.njobs]);
    const uint32_t stride = gridDim.x * kWarpsPerCta;
    for (uint32_t it = blockIdx.x * kWarpsPerCta + (threadIdx.x >> 5); it < total; it += stride) {
      uint32_t j = 0;
      while (it >= sh.items_before[j + 1]) ++j;
      const uint64_t item = it - sh.items_before[j];
      switch (static_cast<FloatKind>(sh.jobs[j].kind)) {
        case kF16: run_item<kF16>(sh.jobs[j], item); break;
        case kBF16: run_item<kBF16>(sh.jobs[j], item); break;
        case kF32: run_item<kF32>(sh.jobs[j], item); break;
        case kF64: run_item<kF64>(sh.jobs[j], item); break;
        default: run_item<kNotFloat>(sh.jobs[j], item); break;
      }
    }
  }
  // The last CTA out resets the launch scratch and marks the plan slot reusable.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&ps->exited, 1u) + 1 == gridDim.x) {
      ps->exited = 0;
      ps->decision = kDecisionNone;
      __threadfence();
      volatile FpPlan* vp = const_cast<volatile FpPlan*>(plan);
      vp->finished = 1;
      __threadfence_system();
    }
  }
}

}  // namespace scout::fp::gpu
