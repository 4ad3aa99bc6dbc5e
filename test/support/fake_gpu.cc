// Fake GPU backend for tests (fake_gpu.h).
#include "test/support/fake_gpu.h"

#include <cstdlib>
#include <cstring>

#include "plugin/gpu/fp_emulate.h"
#include "plugin/gpu/fp_job.h"

namespace scout::testing {

FakeGpu::~FakeGpu() {
  for (void* p : st_->blocks) std::free(p);
  st_->blocks.clear();
}

bool FakeGpu::prepare(void*, int* sm_count, std::string* why) {
  *sm_count = st_->sm_count;
  if (!st_->prepare_ok) *why = "fake: no kernel image for this GPU";
  return st_->prepare_ok;
}

static void* zalloc(uint64_t bytes) {
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p) std::memset(p, 0, bytes);
  return p;
}

bool FakeGpu::alloc_host(uint64_t bytes, void** host, uint64_t* dev) {
  void* p = zalloc(bytes);
  if (!p) return false;
  st_->blocks.insert(p);
  ++st_->host_allocs;
  *host = p;
  *dev = reinterpret_cast<uint64_t>(p);
  return true;
}

bool FakeGpu::alloc_device(uint64_t bytes, uint64_t* dev) {
  void* p = zalloc(bytes);
  if (!p) return false;
  st_->blocks.insert(p);
  ++st_->device_allocs;
  *dev = reinterpret_cast<uint64_t>(p);
  return true;
}

void FakeGpu::free_host(void* host) {
  if (st_->blocks.erase(host)) std::free(host);
}

void FakeGpu::free_device(uint64_t dev) { free_host(reinterpret_cast<void*>(dev)); }

bool FakeGpu::launch(void*, void* stream, uint64_t plan, uint64_t plan_scratch, uint32_t grid) {
  if (st_->fail_launch) return false;
  Item it;
  it.is_hash = true;
  it.plan = plan;
  it.plan_scratch = plan_scratch;
  it.grid = grid;
  st_->streams[stream].push_back(std::move(it));
  ++st_->launches;
  return true;
}

bool FakeGpu::uuid(int cuda_dev, char* out, unsigned cap) {
  if (cuda_dev < 0) {
    if (!st_->ctx) return false;  // no current context: no current device
    cuda_dev = 0;
  }
  unsigned char b[16];
  for (int i = 0; i < 16; ++i) b[i] = static_cast<unsigned char>(cuda_dev * 16 + i);
  fp::gpu::format_gpu_uuid(b, out, cap);
  return true;
}

void FakeGpu::enqueue_marker(State& st, void* stream, std::string label, std::function<void()> fn) {
  Item it;
  it.label = std::move(label);
  it.fn = std::move(fn);
  st.streams[stream].push_back(std::move(it));
}

size_t FakeGpu::run(State& st, void* stream, bool timeout) {
  auto& q = st.streams[stream];
  size_t n = 0;
  while (!q.empty()) {
    Item& it = q.front();
    if (it.is_hash) {
      auto* plan = reinterpret_cast<fp::gpu::FpPlan*>(it.plan);
      auto* ps = reinterpret_cast<fp::gpu::FpPlanScratch*>(it.plan_scratch);
      auto out = fp::gpu::emulate_launch(plan, ps, it.grid, timeout, st.gpu_ns_per_job);
      if (out == fp::gpu::EmuOutcome::kWaiting) return n;
      st.trace.push_back(out == fp::gpu::EmuOutcome::kRan ? "hash(" + std::to_string(plan->njobs) + " jobs)"
                                                          : "hash(abandoned)");
    } else {
      if (it.fn) it.fn();
      st.trace.push_back(it.label);
    }
    q.pop_front();
    ++n;
  }
  return n;
}

}  // namespace scout::testing
