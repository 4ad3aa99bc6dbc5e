#include "test/sim/recording_plugin.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scout::sim {
namespace {

std::mutex g_mu;
std::vector<RecordedCall> g_calls;
std::atomic<int> g_mask{0xFFF};
std::atomic<uintptr_t> g_next{1};
std::map<void*, int> g_nranks;              // context -> nranks of its communicator
std::vector<RecordedTask> g_tasks;          // Coll/P2p tasks in start order
std::map<void*, size_t> g_task_of_handle;   // task handle -> index in g_tasks
std::map<void*, size_t> g_task_of_channel;  // KernelCh handle -> index in g_tasks

uint64_t type_size(const char* dt) { return dt && std::strcmp(dt, "ncclInt8") == 0 ? 1 : 4; }

void hash_buffer(const void* p, uint64_t bytes, const char* dt, uint64_t* hash, uint64_t* nan) {
  *hash = p ? XXH64(p, bytes, 0) : 0;
  *nan = 0;
  if (!p || !dt || std::strcmp(dt, "ncclFloat32") != 0) return;
  const float* f = static_cast<const float*>(p);
  for (uint64_t i = 0; i < bytes / 4; ++i) *nan += std::isnan(f[i]) ? 1 : 0;
}

pid_t tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

void* token() { return reinterpret_cast<void*>(0x10000 + 16 * g_next.fetch_add(1)); }

void push(RecordedCall c) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_calls.push_back(std::move(c));
}

abi::Result rec_init(void** context, uint64_t comm_hash, int* mask, const char* name, int n_nodes, int nranks, int rank,
                     abi::Logger) {
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
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_nranks[c.context] = nranks;
  }
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
  if (d->type == abi::kEvColl || d->type == abi::kEvP2p) {
    RecordedTask t;
    t.handle = c.handle;
    t.context = context;
    t.descr = c.descr;
    std::lock_guard<std::mutex> lock(g_mu);
    uint64_t n = static_cast<uint64_t>(g_nranks[context]);
    if (d->type == abi::kEvColl) {
      const char* f = d->coll.func;
      uint64_t unit = d->coll.count * type_size(d->coll.datatype);
      bool rs = !std::strcmp(f, "ReduceScatter"), ag = !std::strcmp(f, "AllGather");
      bool bc = !std::strcmp(f, "Broadcast");
      t.send_bytes = rs ? unit * n : (bc && d->coll.root != d->rank) ? 0 : unit;
      t.recv_bytes = ag ? unit * n : unit;
      hash_buffer(d->coll.sendBuff, t.send_bytes, d->coll.datatype, &t.send_hash, &t.send_nan);
    } else {
      uint64_t bytes = d->p2p.count * type_size(d->p2p.datatype);
      bool send = !std::strcmp(d->p2p.func, "Send");
      t.send_bytes = send ? bytes : 0;
      t.recv_bytes = send ? 0 : bytes;
      if (send) hash_buffer(d->p2p.buff, bytes, d->p2p.datatype, &t.send_hash, &t.send_nan);
    }
    g_task_of_handle[c.handle] = g_tasks.size();
    g_tasks.push_back(t);
  } else if (d->type == abi::kEvKernelCh) {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_task_of_handle.find(d->parentObj);
    if (it != g_task_of_handle.end()) {
      RecordedTask& t = g_tasks[it->second];
      ++t.ch_started;
      if (t.gpu_start == 0 || d->kernelCh.pTimer < t.gpu_start) t.gpu_start = d->kernelCh.pTimer;
      g_task_of_channel[c.handle] = it->second;
    }
  }
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
  if (args && (state == abi::kStateProxyStepSendWait || state == abi::kStateProxyStepRecvFlushWait))
    c.trans_size = args->proxyStep.transSize;
  if (args && state == abi::kStateKernelChStop) {
    c.p_timer = args->kernelCh.pTimer;
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_task_of_channel.find(handle);
    if (it != g_task_of_channel.end()) {
      RecordedTask& t = g_tasks[it->second];
      ++t.ch_stopped;
      t.gpu_end = std::max<uint64_t>(t.gpu_end, c.p_timer);
      if (t.ch_stopped ==
          static_cast<int>(t.descr.type == abi::kEvColl ? t.descr.coll.nChannels : t.descr.p2p.nChannels)) {
        // Completion: hash what the kernel delivered, as the plugin does for host buffers.
        void* buf = t.descr.type == abi::kEvColl ? t.descr.coll.recvBuff : t.descr.p2p.buff;
        const char* dt = t.descr.type == abi::kEvColl ? t.descr.coll.datatype : t.descr.p2p.datatype;
        if (t.recv_bytes) hash_buffer(buf, t.recv_bytes, dt, &t.recv_hash, &t.recv_nan);
      }
    }
  }
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
  g_tasks.clear();
  g_task_of_handle.clear();
  g_task_of_channel.clear();
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

std::vector<RecordedTask> CallRecorder::tasks() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_tasks;
}

}  // namespace scout::sim
