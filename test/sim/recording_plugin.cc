#include "test/sim/recording_plugin.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace scout::sim {
namespace {

std::mutex g_mu;
std::vector<RecordedCall> g_calls;
std::atomic<int> g_mask{0xFFF};
std::atomic<uintptr_t> g_next{1};

pid_t tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

void* token() { return reinterpret_cast<void*>(0x10000 + 16 * g_next.fetch_add(1)); }

void push(RecordedCall c) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_calls.push_back(std::move(c));
}

abi::Result rec_init(void** context, uint64_t comm_hash, int* mask, const char* name, int n_nodes, int nranks,
                     int rank, abi::Logger) {
  RecordedCall c{};
  c.kind = RecordedCall::kInit;
  c.tid = tid();
  c.context = token();
  c.comm_hash = comm_hash;
  c.comm_name = name ? name : "";
  c.n_nodes = n_nodes;
  c.nranks = nranks;
  c.rank = rank;
  c.mask_ptr = mask;
  *context = c.context;
  __atomic_store_n(mask, g_mask.load(), __ATOMIC_RELAXED);
  push(c);
  return abi::kSuccess;
}

abi::Result rec_start(void* context, void** handle, abi::DescrV5* d) {
  RecordedCall c{};
  c.kind = RecordedCall::kStart;
  c.tid = tid();
  c.context = context;
  c.handle = token();
  std::memcpy(static_cast<void*>(&c.descr), d, sizeof(*d));
  *handle = c.handle;
  push(c);
  return abi::kSuccess;
}

abi::Result rec_stop(void* handle) {
  RecordedCall c{};
  c.kind = RecordedCall::kStop;
  c.tid = tid();
  c.handle = handle;
  push(c);
  return abi::kSuccess;
}

abi::Result rec_record(void* handle, int state, abi::StateArgs* args) {
  RecordedCall c{};
  c.kind = RecordedCall::kRecord;
  c.tid = tid();
  c.handle = handle;
  c.state = state;
  c.args_null = args == nullptr;
  if (args && state == abi::kStateKernelChStop) c.p_timer = args->kernelCh.pTimer;
  push(c);
  return abi::kSuccess;
}

abi::Result rec_finalize(void* context) {
  RecordedCall c{};
  c.kind = RecordedCall::kFinalize;
  c.tid = tid();
  c.context = context;
  push(c);
  return abi::kSuccess;
}

const abi::ProfilerV5 kTable = {"scout-sim-recorder", rec_init, rec_start, rec_stop, rec_record, rec_finalize};

}  // namespace

const abi::ProfilerV5* CallRecorder::table() { return &kTable; }

void CallRecorder::reset(int mask) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_calls.clear();
  g_mask.store(mask);
}

std::vector<RecordedCall> CallRecorder::calls() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_calls;
}

const RecordedCall* CallRecorder::init_of(const std::vector<RecordedCall>& calls, void* context) {
  for (const RecordedCall& c : calls)
    if (c.kind == RecordedCall::kInit && c.context == context) return &c;
  return nullptr;
}

int CallRecorder::mask() { return g_mask.load(); }

}  // namespace scout::sim
