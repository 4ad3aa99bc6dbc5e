// Fingerprint throughput against same-run baselines (docs/fingerprint.md "Benchmarks"):
//  * CPU: fingerprint() vs plain XXH64 (libxxhash) over the same bytes, one core; target >= 90%.
//  * GPU (when a CUDA driver and device are present): the kernel vs cuMemcpyDtoD of the same
//    bytes; target >= 80% of the copy's read bandwidth for buffers of 64 MiB and more.
// Modes: (none) both tables; --cpu; --gpu; --check (GPU kernel vs CPU reference on many sizes,
// alignments, types and caps; exit status 1 on any mismatch, 2 without a GPU); --profile MIB
// (exactly two kernel launches over one random MIB-MiB buffer, a warm-up and the one to profile
// with `ncu --launch-skip 1 --launch-count 1`, checked against the CPU reference; used by
// scripts/gpu-lab.sh; 2 without a GPU).
// Exit status of the tables: 1 when a target measured here is MISSED (the CPU ratio on any
// machine, the GPU ratio where a GPU is present); without a GPU its table says "not measured here"
// (exit 2 in --gpu mode, where it is all that was asked).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "plugin/gpu/gpu_harness.h"
#include "scout/fingerprint.h"
#include "scout/shm_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace {

volatile uint64_t g_sink;

// This thread's CPU time in seconds (time preempted by other processes does not count, which
// keeps the ratio meaningful on a shared machine).
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// CPU seconds per call of a() and b(), each the best of 15 rounds; the rounds of a and b
// alternate so that cache or frequency effects hit both alike. Each round hashes ~64 MiB.
template <class A, class B>
std::pair<double, double> best_seconds(A a, B b, uint64_t bytes) {
  const int per_round = int(std::max<uint64_t>(1, (uint64_t(1) << 26) / std::max<uint64_t>(bytes, 1)));
  double best_a = 1e30, best_b = 1e30;
  for (int round = 0; round < 15; ++round) {
    const double t0 = thread_cpu_seconds();
    for (int i = 0; i < per_round; ++i) g_sink = a();
    const double t1 = thread_cpu_seconds();
    for (int i = 0; i < per_round; ++i) g_sink = b();
    const double t2 = thread_cpu_seconds();
    best_a = std::min(best_a, (t1 - t0) / per_round);
    best_b = std::min(best_b, (t2 - t1) / per_round);
  }
  return {best_a, best_b};
}

std::vector<unsigned char> random_buffer(size_t n, uint64_t seed) {
  std::vector<unsigned char> v(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t r = rng();
    std::memcpy(&v[i], &r, 8);
  }
  return v;
}

int cpu_table() {
  std::printf("CPU fingerprint vs XXH64 (one core, thread CPU time, best of 15 alternating rounds; target >= 90%%)\n");
  std::printf("%-10s %14s %14s %8s %s\n", "size", "fingerprint", "XXH64", "ratio", "target");
  int misses = 0;
  const struct {
    const char* name;
    uint64_t bytes;
  } sizes[] = {{"64 KiB", 64ull << 10}, {"1 MiB", 1ull << 20}, {"64 MiB", 64ull << 20}};
  for (const auto& s : sizes) {
    auto buf = random_buffer(s.bytes, s.bytes);
    const auto [t_fp, t_xx] =
        best_seconds([&] { return scout::fp::fingerprint(buf.data(), buf.size(), scout::shm::kTypeUint8, nullptr); },
                     [&] { return XXH64(buf.data(), buf.size(), 0); }, s.bytes);
    const double g_fp = double(s.bytes) / t_fp / 1e9, g_xx = double(s.bytes) / t_xx / 1e9;
    const double ratio = g_fp / g_xx;
    const bool ok = ratio >= 0.90;
    misses += !ok;
    std::printf("%-10s %9.2f GB/s %9.2f GB/s %7.1f%% %s\n", s.name, g_fp, g_xx, 100 * ratio, ok ? "met" : "MISSED");
  }
  // NaN/Inf counting costs an extra pass over each block while it is in L1: shown, not targeted.
  auto buf = random_buffer(64ull << 20, 7);
  const auto [t_f32, t_u8] = best_seconds(
      [&] { return scout::fp::fingerprint(buf.data(), buf.size(), scout::shm::kTypeFloat32, nullptr); },
      [&] { return scout::fp::fingerprint(buf.data(), buf.size(), scout::shm::kTypeUint8, nullptr); }, buf.size());
  std::printf("%-10s %9.2f GB/s %9.2f GB/s %7.1f%% (float32 with NaN/Inf counts vs uint8; not a target)\n", "64 MiB",
              double(buf.size()) / t_f32 / 1e9, double(buf.size()) / t_u8 / 1e9, 100 * t_u8 / t_f32);
  return misses;
}

int gpu_table(scout::fp::gpu::GpuHarness& h) {
  std::printf("GPU fingerprint kernel vs device-to-device copy (%s; target >= 80%% for >= 64 MiB)\n",
              h.device().c_str());
  std::printf("%-10s %14s %16s %8s %s\n", "size", "kernel", "copy (read)", "ratio", "target");
  int misses = 0;
  const uint64_t sizes[] = {1ull << 20, 16ull << 20, 64ull << 20, 256ull << 20};
  auto host = random_buffer(256ull << 20, 11);
  uint64_t src = 0, dst = 0;
  if (!h.upload(host.data(), host.size(), &src) || !h.alloc(host.size(), &dst)) {
    std::printf("GPU: %s\n", h.error().c_str());
    return 1;
  }
  for (uint64_t n : sizes) {
    scout::fp::gpu::FpResult r{};
    float t_k = 0, t_c = 0;
    const int reps = n >= (64ull << 20) ? 20 : 100;
    // Warm-up, then timed runs; uncapped (the cap is a separate, sampling decision).
    if (!h.hash(src, n, ~0ull, 0, scout::shm::kTypeUint8, 2, &r, &t_k) ||
        !h.hash(src, n, ~0ull, 0, scout::shm::kTypeUint8, reps, &r, &t_k) || !h.copy(dst, src, n, 2, &t_c) ||
        !h.copy(dst, src, n, reps, &t_c)) {
      std::printf("GPU: %s\n", h.error().c_str());
      return 1;
    }
    const double g_k = double(n) / (t_k * 1e-3) / 1e9, g_c = double(n) / (t_c * 1e-3) / 1e9;
    const double ratio = g_k / g_c;
    const bool applies = n >= (64ull << 20);
    const bool ok = ratio >= 0.80;
    misses += applies && !ok;
    std::printf("%-10s %9.1f GB/s %11.1f GB/s %7.1f%% %s\n", (std::to_string(n >> 20) + " MiB").c_str(), g_k, g_c,
                100 * ratio, applies ? (ok ? "met" : "MISSED") : "-");
    const uint64_t expect = scout::fp::fingerprint(host.data(), n, scout::shm::kTypeUint8, nullptr);
    if (r.value != expect) {
      std::printf("GPU: MISMATCH at %llu bytes: kernel %016llx, CPU %016llx\n", (unsigned long long)n,
                  (unsigned long long)r.value, (unsigned long long)expect);
      ++misses;
    }
  }
  h.release(src);
  h.release(dst);
  return misses;
}

// The kernel against the CPU reference on many shapes; prints one line per case and a summary.
int gpu_check(scout::fp::gpu::GpuHarness& h) {
  std::printf("gpu-check: %s\n", h.device().c_str());
  std::mt19937_64 rng(2024);
  std::vector<uint64_t> sizes = {0,
                                 1,
                                 7,
                                 8,
                                 31,
                                 32,
                                 33,
                                 4095,
                                 4096,
                                 4097,
                                 65535,
                                 262144,
                                 262145,
                                 (1u << 20) + 3,
                                 (16u << 20) + 4097,
                                 (64u << 20) + 123};
  for (int i = 0; i < 12; ++i) sizes.push_back(rng() % (8u << 20));
  const uint8_t types[] = {scout::shm::kTypeUint8, scout::shm::kTypeFloat16, scout::shm::kTypeBfloat16,
                           scout::shm::kTypeFloat32, scout::shm::kTypeFloat64};
  int cases = 0, bad = 0;
  for (uint64_t n : sizes) {
    auto host = random_buffer(n + 16, n ^ 0x5eed);
    // Sprinkle non-finite patterns (valid for every float width at 8-byte aligned positions).
    for (uint64_t k = 0; k + 8 <= n; k += 4096 + 8 * (k % 7)) {
      const uint64_t inf64 = 0x7FF0000000000000ull, nan32 = 0x7FC000007F800000ull;
      std::memcpy(&host[k], (k / 4096) % 2 ? &inf64 : &nan32, 8);
    }
    uint64_t dev = 0;
    if (!h.upload(host.data(), host.size(), &dev)) {
      std::printf("gpu-check: %s\n", h.error().c_str());
      return 1;
    }
    for (uint64_t offset : {uint64_t(0), uint64_t(3), uint64_t(8)}) {
      if (offset > 0 && n < 4096 && offset != 3) continue;
      for (uint8_t t : types) {
        for (uint64_t cap : {~uint64_t(0), uint64_t(1) << 20}) {
          if (cap != ~uint64_t(0) && n <= cap) continue;
          const uint64_t sel = rng();
          scout::fp::Counts c;
          uint64_t bytes = 0;
          const uint64_t expect = scout::fp::fingerprint_capped(host.data() + offset, n, cap, sel, t, &c, &bytes);
          scout::fp::gpu::FpResult r{};
          float ms = 0;
          const bool ran = h.hash(dev + offset, n, cap, sel, t, 1, &r, &ms);
          const bool ok = ran && r.value == expect && r.nan == c.nan && r.inf == c.inf && r.bytes == bytes;
          ++cases;
          if (!ok) {
            ++bad;
            std::printf(
                "MISMATCH size=%llu offset=%llu dtype=%d cap=%s: gpu %016llx nan=%llu inf=%llu bytes=%llu, "
                "cpu %016llx nan=%llu inf=%llu bytes=%llu%s%s\n",
                (unsigned long long)n, (unsigned long long)offset, int(t), cap == ~uint64_t(0) ? "none" : "1MiB",
                (unsigned long long)r.value, (unsigned long long)r.nan, (unsigned long long)r.inf,
                (unsigned long long)r.bytes, (unsigned long long)expect, (unsigned long long)c.nan,
                (unsigned long long)c.inf, (unsigned long long)bytes,
                ran ? "" : " error: ", ran ? "" : h.error().c_str());
          }
        }
      }
    }
    h.release(dev);
  }
  std::printf("gpu-check: %d/%d cases identical to the CPU reference\n", cases - bad, cases);
  return bad ? 1 : 0;
}

// Two launches over one buffer of `mib` MiB; prints the second's time and whether it matched.
int gpu_profile(scout::fp::gpu::GpuHarness& h, uint64_t mib) {
  const uint64_t n = mib << 20;
  auto host = random_buffer(n, 11);
  uint64_t dev = 0;
  scout::fp::gpu::FpResult r{};
  float ms = 0;
  if (!h.upload(host.data(), n, &dev) || !h.hash(dev, n, ~0ull, 0, scout::shm::kTypeUint8, 1, &r, &ms) ||
      !h.hash(dev, n, ~0ull, 0, scout::shm::kTypeUint8, 1, &r, &ms)) {
    std::printf("GPU: %s\n", h.error().c_str());
    return 1;
  }
  h.release(dev);
  const uint64_t expect = scout::fp::fingerprint(host.data(), n, scout::shm::kTypeUint8, nullptr);
  std::printf("profile: %llu MiB, %s, kernel %.3f ms (%.1f GB/s), %s\n", (unsigned long long)mib, h.device().c_str(),
              ms, double(n) / (double(ms) * 1e-3) / 1e9, r.value == expect ? "identical to the CPU reference" : "MISMATCH");
  return r.value == expect ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int misses = 0;
  if (mode.empty() || mode == "--cpu") misses += cpu_table();
  if (mode == "--cpu") return misses ? 1 : 0;
  std::string why;
  auto h = scout::fp::gpu::GpuHarness::open(&why);
  if (!h) {
    std::printf("GPU fingerprint kernel vs device-to-device copy: not measured here (no CUDA driver: %s)\n",
                why.c_str());
    if (mode == "--check" || mode == "--gpu" || mode == "--profile") return 2;
    return misses ? 1 : 0;
  }
  if (mode == "--check") return gpu_check(*h);
  if (mode == "--profile") return gpu_profile(*h, argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64);
  misses += gpu_table(*h);
  if (misses) std::printf("fingerprint_bench: %d target(s) MISSED\n", misses);
  return misses ? 1 : 0;
}
