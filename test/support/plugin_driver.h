// Test helper: drives a loaded profiler plugin (the real .so, loaded by
// test/sim/nccl_plugin_loader.h) with the descriptors and call sequences NCCL makes
// (docs/nccl-notes.md §1.4 and 3), whatever ABI version was loaded, and reads back what it wrote.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/segment_reader.h"
#include "scout/nccl_profiler_abi.h"
#include "test/sim/nccl_plugin_loader.h"

namespace scout::testing {

// ---- descriptor builders (v5 layout; the driver converts for v4 and v6)
abi::DescrV5 d_group_api(bool captured, int depth);
abi::DescrV5 d_coll_api(const char* func, size_t count, const char* dtype, int root, void* stream, bool captured,
                        void* group_api);
abi::DescrV5 d_p2p_api(const char* func, size_t count, const char* dtype, void* stream, bool captured, void* group_api);
abi::DescrV5 d_kernel_launch(void* stream, void* group_api);
abi::DescrV5 d_group();
abi::DescrV5 d_coll(uint64_t seq, const char* func, const void* send, void* recv, size_t count, int root,
                    const char* dtype, uint8_t nch, const char* algo, const char* proto, void* coll_api, void* group,
                    int rank);
abi::DescrV5 d_p2p(const char* func, void* buf, const char* dtype, size_t count, int peer, uint8_t nch, void* p2p_api,
                   void* group, int rank);
abi::DescrV5 d_kernel_ch(uint8_t channel, uint64_t ptimer, void* op);
abi::DescrV5 d_proxy_op(pid_t pid, void* op, int peer, int channel);

// Messages the plugin sent to NCCL's logger (capture_logger), one string per call.
abi::Logger capture_logger();
std::vector<std::string> captured_logs();
void clear_captured_logs();

// Version-neutral calls into a loaded plugin (not owning it).
class Plugin {
 public:
  explicit Plugin(const sim::LoadedPlugin& p) : p_(p) {}
  int version() const { return p_.version; }
  // init with NCCL's argument order for the loaded version; returns the context. `mask` must
  // outlive the plugin's use of it (the plugin may write it at any API call); nullptr: this
  // object's own.
  void* init(uint64_t comm_hash, int nranks, int rank, const char* name = nullptr, int nnodes = 1, int* mask = nullptr,
             abi::Logger log = capture_logger());
  // startEvent. For v4, types NCCL's v4 adapter drops (bit >= 8) are not delivered (returns
  // nullptr) and the Coll/P2p parentObj becomes the legacy Group handle, as NCCL does.
  void* start(void* ctx, const abi::DescrV5& d);
  void* start_v6(void* ctx, const abi::DescrV6& d);  // v6 only
  void stop(void* h);
  void state(void* h, int state, abi::StateArgs* args);
  void kernel_ch_stop(void* h, uint64_t ptimer);  // KernelChStop state with args, then stop
  void finalize(void* ctx);
  // Calls that returned something other than ncclSuccess (the plugin must always succeed).
  int bad_results() const { return bad_results_; }

 private:
  void check(int r) {
    if (r != abi::kSuccess) bad_results_++;
  }
  sim::LoadedPlugin p_;
  int bad_results_ = 0;
  int mask_ = 0;  // NCCL's process-wide activation mask when a test passes none (it must outlive init)
};

// Handles of the events NCCL starts for one collective.
struct CollHandles {
  void* group_api = nullptr;
  void* coll_api = nullptr;
  void* launch = nullptr;
  void* group = nullptr;
  void* coll = nullptr;
};

// One collective (or send/recv) as the application issues it.
struct OpSpec {
  const char* func = "AllReduce";
  uint64_t seq = 0;     // NCCL seqNumber (Coll)
  size_t count = 1024;  // API count
  const char* dtype = "ncclFloat32";
  size_t task_count = 0;             // Coll descriptor count (0: = count)
  const char* task_dtype = nullptr;  // Coll descriptor datatype (nullptr: = dtype)
  int root = 0;                      // root (Coll) or peer (P2P)
  const void* send = reinterpret_cast<const void*>(0x7000);
  void* recv = reinterpret_cast<void*>(0x8000);
  void* stream = reinterpret_cast<void*>(0x5000);
  uint8_t nch = 4;
  const char* algo = "RING";
  const char* proto = "SIMPLE";
  int rank = 0;
};

// NCCL's exact sequence for one collective outside a group on a blocking communicator, on the
// calling thread (docs/nccl-notes.md §3.1-3.3 and 4, "Ordering on the default path"): GroupApi start (depth
// 1), GroupStartApiStop, CollApi start/stop, GroupEndApiStart, KernelLaunch start/stop, Group
// start, Coll start, Coll stop, Group stop, GroupApi stop. No KernelCh (see run_kernel_ch).
CollHandles nccl_single_coll(Plugin& pl, void* ctx, const OpSpec& op);

// KernelCh start, KernelChStop, stop for channels 0..nch-1 of `op` (GPU times start_ns +
// channel, end_ns + channel), on the calling thread (NCCL's proxy thread).
void run_kernel_ch(Plugin& pl, void* ctx, void* op, int nch, uint64_t start_ns, uint64_t end_ns);

// ---- reading the segment back
struct SegmentView {
  bool ok = false;
  std::string error;
  shm::SegmentInfo info;
  std::vector<shm::CommSnapshot> comms;
  std::vector<std::vector<shm::RecordSnapshot>> records;  // per ring, readable ones in order
};
// Opens the only segment in `dir` (ok false with error if there is not exactly one).
SegmentView read_segment(const std::string& dir);
// Paths of every file in `dir` named like a segment.
std::vector<std::string> segment_files(const std::string& dir);

// Sets environment variables for the scope of the object and restores them after.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ~ScopedEnv();
  void set(const char* name, const std::string& value);
  void unset(const char* name);

 private:
  std::vector<std::pair<std::string, std::pair<bool, std::string>>> saved_;
  void save(const char* name);
};

}  // namespace scout::testing
