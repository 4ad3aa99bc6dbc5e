// Host replay of fp_kernel.cu's mapping; see fp_emulate.h. Each function names the kernel step
// it mirrors. Sequential CTAs make the kernel's atomics plain additions.
#include "plugin/gpu/fp_emulate.h"

#include <atomic>
#include <cstring>

#include "plugin/gpu/fp_hash.h"
#include "scout/fingerprint.h"

namespace scout::fp::gpu {
namespace {

using namespace scout::fp::hash;

// One quad's leaf (kernel: leaf_digest): lanes 0..3 each run lane_stripes over the block, then
// lane 0 finishes with the gathered accumulators. The kernel loads whole aligned words
// (AlignedWords / FunnelWords), which may read past the buffer's last byte inside its last
// aligned word: harmless on the GPU (allocations are 256-byte granular), not on the host, so
// the replay reads the same values through HostBytes. The kernel's loaders are checked against
// libxxhash on padded buffers in test/unit/fp_hash_test.cc.
template <FloatKind kKind>
uint64_t leaf_digest(const FpJob& job, uint64_t k, uint64_t n, uint64_t m, uint64_t* nan, uint64_t* inf,
                     uint64_t* blen_out) {
  const uint64_t b = leaf_block(k, n, m, job.selector);
  const uint64_t blen = block_len(b, job.len);
  const auto* p = reinterpret_cast<const unsigned char*>(job.buf) + b * kBlockBytes;
  uint64_t lanes[4];
  HostBytes w{p, blen};
  for (uint32_t l = 0; l < 4; ++l) lanes[l] = lane_stripes<kKind>(w, uint32_t(blen / kStripeBytes), l, b, nan, inf);
  *blen_out = blen;
  return finish_message<kKind>(w, blen, b, lanes, nan, inf);
}

// One quad's node over `count` digests (kernel: node_digest).
uint64_t node_digest(const uint64_t* words, uint64_t count, uint64_t seed) {
  uint64_t none = 0, lanes[4];
  AlignedWords w{words, count * 8};
  for (uint32_t l = 0; l < 4; ++l)
    lanes[l] = lane_stripes<kNotFloat>(w, uint32_t(count * 8 / kStripeBytes), l, seed, &none, &none);
  return finish_message<kNotFloat>(w, count * 8, seed, lanes, &none, &none);
}

// Kernel: finish_job (levels 2.., root, result, scratch reset).
void finish_job(const FpJob& job, uint64_t m, uint64_t gpu_ns) {
  auto* sc = reinterpret_cast<FpJobScratch*>(job.scratch);
  uint64_t* level = sc->digests;
  uint64_t count = m == 1 ? 1 : (m + kLeafGroups - 1) / kLeafGroups;
  uint32_t depth = 1;
  while (count > 1) {
    const uint64_t parents = (count + kLeafGroups - 1) / kLeafGroups;
    uint64_t* up = level + count;
    for (uint64_t q = 0; q < parents; ++q) {  // the kernel's 64 groups, base by base
      const uint64_t kq = count - q * kLeafGroups < kLeafGroups ? count - q * kLeafGroups : kLeafGroups;
      up[q] = node_digest(level + q * kLeafGroups, kq, node_seed(depth + 1, q));
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

// Kernel: run_tile.
template <FloatKind kKind>
void run_tile(const FpJob& job, uint64_t tile, uint64_t gpu_ns) {
  const uint64_t n = num_blocks(job.len);
  const uint64_t m = hashed_leaves(job.len, job.max_bytes);
  auto* sc = reinterpret_cast<FpJobScratch*>(job.scratch);
  uint64_t leaf[kLeafGroups];
  uint64_t nan = 0, inf = 0, bytes = 0;
  const uint64_t in_tile = m - tile * kLeafGroups < kLeafGroups ? m - tile * kLeafGroups : kLeafGroups;
  for (uint64_t g = 0; g < in_tile; ++g) {
    uint64_t blen = 0;
    leaf[g] = leaf_digest<kKind>(job, tile * kLeafGroups + g, n, m, &nan, &inf, &blen);
    bytes += blen;
  }
  sc->digests[tile] = m == 1 ? leaf[0] : node_digest(leaf, in_tile, node_seed(1, tile));
  sc->nan += nan;
  sc->inf += inf;
  sc->bytes += bytes;
  if (++sc->tiles_done == (m + kLeafGroups - 1) / kLeafGroups) finish_job(job, m, gpu_ns);
}

}  // namespace

EmuOutcome emulate_launch(FpPlan* plan, FpPlanScratch* ps, uint32_t grid, bool timed_out, uint64_t gpu_ns_per_job) {
  // Kernel: plan_decision.
  if (plan->wait && std::atomic_ref<uint32_t>(plan->ready).load(std::memory_order_acquire) != kPlanReady) {
    if (!timed_out) return EmuOutcome::kWaiting;
    plan->abandoned = kPlanAbandoned;
    std::atomic_ref<uint32_t>(plan->finished).store(1, std::memory_order_release);
    return EmuOutcome::kTimedOut;
  }
  const uint32_t njobs = plan->njobs < kMaxJobs ? plan->njobs : kMaxJobs;
  uint64_t tiles_before[kMaxJobs + 1] = {0};
  for (uint32_t j = 0; j < njobs; ++j) {
    const uint64_t m = hashed_leaves(plan->jobs[j].len, plan->jobs[j].max_bytes);
    tiles_before[j + 1] = tiles_before[j] + (m + kLeafGroups - 1) / kLeafGroups;
  }
  const uint64_t total = tiles_before[njobs];
  if (grid == 0) grid = 1;
  for (uint32_t cta = 0; cta < grid; ++cta) {
    for (uint64_t t = cta; t < total; t += grid) {
      uint32_t j = 0;
      while (t >= tiles_before[j + 1]) ++j;
      const FpJob& job = plan->jobs[j];
      const uint64_t tile = t - tiles_before[j];
      switch (static_cast<FloatKind>(job.kind)) {
        case kF16: run_tile<kF16>(job, tile, gpu_ns_per_job); break;
        case kBF16: run_tile<kBF16>(job, tile, gpu_ns_per_job); break;
        case kF32: run_tile<kF32>(job, tile, gpu_ns_per_job); break;
        case kF64: run_tile<kF64>(job, tile, gpu_ns_per_job); break;
        default: run_tile<kNotFloat>(job, tile, gpu_ns_per_job); break;
      }
    }
  }
  ps->decision = kDecisionNone;
  ps->exited = 0;
  std::atomic_ref<uint32_t>(plan->finished).store(1, std::memory_order_release);
  return EmuOutcome::kRan;
}

}  // namespace scout::fp::gpu
