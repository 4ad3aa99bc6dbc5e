// The fingerprint kernel (docs/fingerprint.md, "GPU kernel"). One launch hashes the jobs of one
// FpPlan; every hash step is a call into fp_hash.h, the same functions the host tests check
// against libxxhash. Only the thread mapping lives here, and fp_emulate.cc replays it on the host:
//
//   * CTA = 256 threads = 64 leaf groups x 4 XXH64 lanes. A tile is 64 consecutive leaves of one
//     job (256 KiB of a full buffer); CTAs take tiles grid-stride over all jobs of the plan.
//   * Thread (g, l) runs XXH64 lane l over the 128 stripes of leaf g's 4 KiB block: words
//     l, l+4, ... loaded 16 at a time (128 bytes in flight per thread), so a warp's load covers
//     8 blocks x 32 contiguous bytes (whole 32-byte sectors); the 4 accumulators meet in lane 0
//     by warp shuffles, which finishes the leaf into shared memory.
//   * Warp 0 hashes the tile's 64 leaf digests into the level-1 node (same 4-lane scheme) and
//     stores it in the job's scratch. The CTA that completes a job's last tile (threadfence +
//     atomic counter) builds the levels above from scratch with all 64 groups and writes the
//     root and NaN/Inf counts to the job's FpResult in pinned host memory, status last after a
//     system-scope fence, then resets the scratch for the next use.
//   * A plan launched before its buffers are known (send hashes, FpPlan::wait) first waits for
//     FpPlan::ready; all CTAs follow one decision (run or time out) taken by the first CTA to
//     see either, so a job is never half hashed.
#include "plugin/gpu/fp_hash.h"
#include "plugin/gpu/fp_job.h"
#include "scout/fingerprint.h"

namespace scout::fp::gpu {
namespace {

using namespace scout::fp::hash;

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

// Read-only, non-coherent loads of the buffer (8-byte aligned words).
struct DevWords {
  const uint64_t* w;
  __device__ __forceinline__ uint64_t operator()(uint64_t i) const {
    return __ldg(reinterpret_cast<const unsigned long long*>(w) + i);
  }
};
// Scratch words written by other CTAs: bypass L1.
struct ScratchWords {
  const uint64_t* w;
  uint64_t len;
  __device__ __forceinline__ uint64_t operator()(uint64_t i) const {
    return i * 8 < len ? __ldcg(reinterpret_cast<const unsigned long long*>(w) + i) : 0;
  }
};

__device__ __forceinline__ uint64_t shfl(uint64_t v, int src) {
  return __shfl_sync(0xffffffffu, static_cast<unsigned long long>(v), src);
}

// The four lane accumulators of a quad gathered in its first thread.
__device__ __forceinline__ void gather_lanes(uint64_t acc, uint64_t out[4]) {
  const int base = (threadIdx.x & 31) & ~3;
  SCOUT_UNROLL
  for (int l = 0; l < 4; ++l) out[l] = shfl(acc, base + l);
}

struct TileShared {
  FpJob jobs[kMaxJobs];
  uint64_t tiles_before[kMaxJobs + 1];
  uint64_t leaf[kLeafGroups];
  unsigned long long nan, inf, bytes;
  uint32_t decision;
  uint32_t finisher;
};

// Leaf digest of leaf k of job j: every thread returns its lane's work, lane 0 of each quad the
// digest (others: unspecified). `valid` is uniform per quad.
template <FloatKind kKind>
__device__ __forceinline__ uint64_t leaf_digest(const FpJob& job, uint64_t k, uint64_t n, uint64_t m, bool valid,
                                                uint64_t* nan, uint64_t* inf, uint64_t* blen_out) {
  const uint32_t lane = threadIdx.x & 3;
  uint64_t acc = 0, b = 0, blen = 0;
  const unsigned char* p = nullptr;
  uint32_t shift = 0;
  if (valid) {
    b = leaf_block(k, n, m, job.selector);
    blen = block_len(b, job.len);
    p = reinterpret_cast<const unsigned char*>(job.buf) + b * kBlockBytes;
    shift = uint32_t(reinterpret_cast<uintptr_t>(p) & 7);
    const uint32_t stripes = uint32_t(blen / kStripeBytes);
    if (shift == 0) {
      acc = lane_stripes<kKind>(DevWords{reinterpret_cast<const uint64_t*>(p)}, stripes, lane, b, nan, inf);
    } else {
      FunnelWords fw{reinterpret_cast<const uint64_t*>(p - shift), shift, blen};
      acc = lane_stripes<kKind>(fw, stripes, lane, b, nan, inf);
    }
  }
  uint64_t lanes[4];
  gather_lanes(acc, lanes);
  uint64_t digest = 0;
  if (valid && lane == 0) {
    if (shift == 0) {
      digest =
          finish_message<kKind>(AlignedWords{reinterpret_cast<const uint64_t*>(p), blen}, blen, b, lanes, nan, inf);
    } else {
      FunnelWords fw{reinterpret_cast<const uint64_t*>(p - shift), shift, blen};
      digest = finish_message<kKind>(fw, blen, b, lanes, nan, inf);
    }
    *blen_out = blen;
  }
  return digest;
}

// XXH64 of `count` digests read by `load`, computed by one quad; result valid in lane 0.
template <class Load>
__device__ __forceinline__ uint64_t node_digest(const Load& load, uint64_t count, uint64_t seed, bool valid) {
  const uint32_t lane = threadIdx.x & 3;
  uint64_t none = 0, acc = 0;
  const uint64_t len = count * 8;
  if (valid) acc = lane_stripes<kNotFloat>(load, uint32_t(len / kStripeBytes), lane, seed, &none, &none);
  uint64_t lanes[4];
  gather_lanes(acc, lanes);
  return (valid && lane == 0) ? finish_message<kNotFloat>(load, len, seed, lanes, &none, &none) : 0;
}

__device__ void warp_sum_to_shared(uint64_t v, unsigned long long* target) {
  SCOUT_UNROLL
  for (int off = 16; off > 0; off >>= 1) v += shfl(v, (threadIdx.x & 31) ^ off);
  if ((threadIdx.x & 31) == 0 && v) atomicAdd(target, static_cast<unsigned long long>(v));
}

// Builds levels 2.. of job `job` from its level-1 digests and writes the result (finisher CTA).
__device__ void finish_job(const FpJob& job, uint64_t m) {
  auto* sc = reinterpret_cast<FpJobScratch*>(job.scratch);
  const uint32_t g = threadIdx.x >> 2;
  uint64_t* level = sc->digests;
  uint64_t count = m == 1 ? 1 : (m + kLeafGroups - 1) / kLeafGroups;  // digests at this level
  uint32_t depth = 1;
  while (count > 1) {
    const uint64_t parents = (count + kLeafGroups - 1) / kLeafGroups;
    uint64_t* up = level + count;
    for (uint64_t base = 0; base < parents; base += kLeafGroups) {
      const uint64_t q = base + g;
      const bool valid = q < parents;
      const uint64_t kq = valid ? (count - q * kLeafGroups < kLeafGroups ? count - q * kLeafGroups : kLeafGroups) : 0;
      uint64_t d = node_digest(ScratchWords{level + q * kLeafGroups, kq * 8}, kq, node_seed(depth + 1, q), valid);
      if (valid && (threadIdx.x & 3) == 0) up[q] = d;
    }
    __threadfence_block();
    __syncthreads();
    level = up;
    count = parents;
    ++depth;
  }
  if (threadIdx.x == 0) {
    const uint64_t top = __ldcg(reinterpret_cast<const unsigned long long*>(level));
    const uint64_t n = num_blocks(job.len);
    const uint64_t value = root_hash(top, job.len, kFormatVersion, m == n ? 0 : m);
    __threadfence();
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

template <FloatKind kKind>
__device__ void run_tile(TileShared& sh, const FpJob& job, uint64_t tile) {
  const uint64_t n = num_blocks(job.len);
  const uint64_t m = hashed_leaves(job.len, job.max_bytes);
  const uint32_t g = threadIdx.x >> 2;
  const uint64_t k = tile * kLeafGroups + g;
  const bool valid = k < m;
  uint64_t nan = 0, inf = 0, blen = 0;
  auto* sc = reinterpret_cast<FpJobScratch*>(job.scratch);
  if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned long long*>(&sc->t_start_inv), ~globaltimer());
  const uint64_t d = leaf_digest<kKind>(job, k, n, m, valid, &nan, &inf, &blen);
  if (valid && (threadIdx.x & 3) == 0) sh.leaf[g] = d;
  if (kKind != kNotFloat) {
    warp_sum_to_shared(nan, &sh.nan);
    warp_sum_to_shared(inf, &sh.inf);
  }
  warp_sum_to_shared(blen, &sh.bytes);
  __syncthreads();
  if (threadIdx.x < 32) {
    const uint64_t in_tile = m - tile * kLeafGroups < kLeafGroups ? m - tile * kLeafGroups : kLeafGroups;
    uint64_t node = 0;
    if (m == 1) {
      node = sh.leaf[0];  // a one-leaf buffer: the leaf is the top
    } else {
      node = node_digest(AlignedWords{sh.leaf, in_tile * 8}, in_tile, node_seed(1, tile), true);
    }
    if (threadIdx.x == 0) {
      sc->digests[tile] = node;
      if (sh.nan) atomicAdd(reinterpret_cast<unsigned long long*>(&sc->nan), sh.nan);
      if (sh.inf) atomicAdd(reinterpret_cast<unsigned long long*>(&sc->inf), sh.inf);
      atomicAdd(reinterpret_cast<unsigned long long*>(&sc->bytes), sh.bytes);
      sh.nan = sh.inf = sh.bytes = 0;
      __threadfence();
      const uint64_t tiles = (m + kLeafGroups - 1) / kLeafGroups;
      sh.finisher = atomicAdd(&sc->tiles_done, 1u) + 1 == tiles ? 1u : 0u;
    }
  }
  __syncthreads();
  if (sh.finisher) {
    __threadfence();
    finish_job(job, m);
  }
  __syncthreads();
}

// Waits (thread 0) until the plan is ready or its timeout passes; the first CTA to see either
// fixes the decision for all CTAs of this launch.
__device__ uint32_t plan_decision(const FpPlan* plan, FpPlanScratch* ps) {
  volatile uint32_t* decision = &ps->decision;
  if (!load_acquire_sys(&plan->wait)) { return kDecisionRun; }
  const uint64_t t0 = globaltimer();
  const uint64_t timeout = plan->timeout_ns;
  // CTA 0 polls the plan in host memory; the others mostly poll the decision in device memory
  // (every 64th round the plan too, in case CTA 0 is not resident yet), so a wide grid does
  // not flood PCIe with reads.
  for (uint32_t round = 0;; ++round) {
    uint32_t d = *decision;
    if (d != kDecisionNone) return d;
    if ((blockIdx.x == 0 || (round & 63) == 63) && load_acquire_sys(&plan->ready) == kPlanReady) {
      d = atomicCAS(&ps->decision, kDecisionNone, kDecisionRun);
      return d == kDecisionNone ? kDecisionRun : d;
    }
    if (globaltimer() - t0 > timeout) {
      d = atomicCAS(&ps->decision, kDecisionNone, kDecisionTimeout);
      if (d == kDecisionNone) {
        volatile FpPlan* vp = const_cast<volatile FpPlan*>(plan);
        vp->abandoned = kPlanAbandoned;
        __threadfence_system();
        return kDecisionTimeout;
      }
      return d;
    }
    __nanosleep(blockIdx.x == 0 ? 256 : 1024);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreadsPerCta) scout_fp_plan(const FpPlan* plan, FpPlanScratch* ps) {
  __shared__ TileShared sh;
  if (threadIdx.x == 0) {
    sh.decision = plan_decision(plan, ps);
    sh.nan = sh.inf = sh.bytes = 0;
    sh.finisher = 0;
  }
  __syncthreads();
  uint32_t njobs = 0;
  if (sh.decision == kDecisionRun) {
    njobs = load_acquire_sys(&plan->njobs);
    if (njobs > kMaxJobs) njobs = kMaxJobs;
    // Copy the jobs (host memory) to shared memory once per CTA.
    const uint32_t words = njobs * (sizeof(FpJob) / 8);
    for (uint32_t i = threadIdx.x; i < words; i += blockDim.x) {
      reinterpret_cast<uint64_t*>(sh.jobs)[i] = reinterpret_cast<const volatile uint64_t*>(plan->jobs)[i];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      sh.tiles_before[0] = 0;
      for (uint32_t j = 0; j < njobs; ++j) {
        const uint64_t m = hashed_leaves(sh.jobs[j].len, sh.jobs[j].max_bytes);
        sh.tiles_before[j + 1] = sh.tiles_before[j] + (m + kLeafGroups - 1) / kLeafGroups;
      }
    }
    __syncthreads();
    const uint64_t total = sh.tiles_before[njobs];
    for (uint64_t t = blockIdx.x; t < total; t += gridDim.x) {
      uint32_t j = 0;
      while (t >= sh.tiles_before[j + 1]) ++j;
      const FpJob& job = sh.jobs[j];
      const uint64_t tile = t - sh.tiles_before[j];
      switch (static_cast<FloatKind>(job.kind)) {
        case kF16: run_tile<kF16>(sh, job, tile); break;
        case kBF16: run_tile<kBF16>(sh, job, tile); break;
        case kF32: run_tile<kF32>(sh, job, tile); break;
        case kF64: run_tile<kF64>(sh, job, tile); break;
        default: run_tile<kNotFloat>(sh, job, tile); break;
      }
    }
  }
  // The last CTA out resets the launch scratch and marks the plan slot reusable.
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
