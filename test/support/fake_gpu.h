// A fake GPU backend for engine tests (plugin/gpu/backend.h): "device" memory is host memory,
// the fingerprint kernel is the host replay of its mapping (plugin/gpu/fp_emulate.h), and each
// stream is a FIFO of work executed only when the test runs it, so tests see stream order:
// a waiting send-hash kernel blocks its stream until the engine releases its plan.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "plugin/gpu/backend.h"

namespace scout::testing {

class FakeGpu : public fp::gpu::Backend {
 public:
  struct Item {
    bool is_hash = false;
    uint64_t plan = 0, plan_scratch = 0;
    uint32_t grid = 0;
    std::string label;         // markers: what the test enqueued ("nccl")
    std::function<void()> fn;  // markers: the work (e.g. the collective's effect)
  };
  // Everything the test inspects or steers; shared with the backend the engine owns.
  struct State {
    void* ctx = reinterpret_cast<void*>(0xC0C0);  // nullptr: no CUDA context on the thread
    bool prepare_ok = true;
    int sm_count = 4;
    bool fail_launch = false;
    uint64_t gpu_ns_per_job = 1000;
    std::set<void*> capturing;
    std::map<void*, std::deque<Item>> streams;
    std::vector<std::string> trace;  // executed items: "hash(N jobs)", "hash(abandoned)", labels
    uint64_t launches = 0, host_allocs = 0, device_allocs = 0;
    std::set<void*> blocks;  // live allocations
  };

  explicit FakeGpu(std::shared_ptr<State> st) : st_(std::move(st)) {}
  ~FakeGpu() override;

  void* current_context() override { return st_->ctx; }
  bool prepare(void* ctx, int* sm_count, std::string* why) override;
  int capturing(void* stream) override { return st_->capturing.count(stream) ? 1 : 0; }
  bool alloc_host(uint64_t bytes, void** host, uint64_t* dev) override;
  bool alloc_device(uint64_t bytes, uint64_t* dev) override;
  void free_host(void* host) override;
  void free_device(uint64_t dev) override;
  bool launch(void* ctx, void* stream, uint64_t plan, uint64_t plan_scratch, uint32_t grid) override;
  bool uuid(int cuda_dev, char* out, unsigned cap) override;

  // Test side (static: the engine owns the backend object).
  static void enqueue_marker(State& st, void* stream, std::string label, std::function<void()> fn);
  // Runs `stream`'s items in order until it is empty or a waiting plan is not ready; with
  // `timeout` such a plan is abandoned (the kernel's timeout path) and the stream continues.
  // Returns the number of items run.
  static size_t run(State& st, void* stream, bool timeout = false);

 private:
  std::shared_ptr<State> st_;
};

}  // namespace scout::testing
