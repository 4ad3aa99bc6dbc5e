// A standalone driver of the fingerprint kernel on device 0, for the benchmark and the GPU
// check (test/bench/fingerprint_bench.cc, scripts/gpu-fingerprint-check.sh): uploads buffers,
// hashes them with the same kernel and plan descriptors the engine uses, times the kernel and a
// device-to-device copy with CUDA events. Not used inside training processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "plugin/gpu/fp_job.h"

namespace scout::fp::gpu {

class GpuHarness {
 public:
  // Opens device 0 (its primary context becomes current on this thread). nullptr with *why
  // when there is no driver, no device or no kernel for it.
  static std::unique_ptr<GpuHarness> open(std::string* why);
  ~GpuHarness();

  const std::string& device() const { return device_; }  // "sm_90, 132 SMs"
  int sm_count() const { return sm_count_; }

  // Device buffer of `n` bytes (+ 64 bytes slack for misaligned views) holding `host`.
  bool upload(const void* host, uint64_t n, uint64_t* dev);
  bool alloc(uint64_t n, uint64_t* dev);
  void release(uint64_t dev);

  // Fingerprints [dev, dev + n) on the GPU, `reps` launches back to back; *out = the result of
  // the last one, *ms = mean kernel time per launch (events around the launches).
  bool hash(uint64_t dev, uint64_t n, uint64_t max_bytes, uint64_t selector, uint8_t dtype, int reps, FpResult* out,
            float* ms);
  // Mean time of `reps` cuMemcpyDtoDAsync of n bytes.
  bool copy(uint64_t dst, uint64_t src, uint64_t n, int reps, float* ms);

  const std::string& error() const { return error_; }

 private:
  GpuHarness() = default;
  struct Impl;
  Impl* impl_ = nullptr;
  std::string device_;
  int sm_count_ = 0;
  std::string error_;
};

}  // namespace scout::fp::gpu
