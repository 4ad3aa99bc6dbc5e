// An in-process profiler plugin (a v5 function table) that records every callback with its
// thread, for the call-sequence tests of scout-sim and anything else that needs to see exactly
// what NCCL's side of the ABI emits. Handles are unique non-null tokens; contexts identify the
// (communicator name, rank) of each init. Thread-safe.
#pragma once

#include <sys/types.h>
#include <cstdint>
#include <string>
#include <vector>

#include "scout/nccl_profiler_abi.h"

namespace scout::sim {

struct RecordedCall {
  enum Kind { kInit, kStart, kStop, kRecord, kFinalize } kind;
  pid_t tid = 0;            // Linux thread id of the caller
  void* context = nullptr;  // init: the context returned; start: the context passed
  void* handle = nullptr;   // start: the handle returned; stop/record: the handle passed
  abi::DescrV5 descr{};     // start: the descriptor (copied)
  int state = -1;           // record
  bool args_null = false;   // record: eStateArgs == NULL
  uint64_t p_timer = 0;     // record KernelChStop: args->kernelCh.pTimer
  uint64_t trans_size = 0;  // record ProxyStepSendWait / RecvFlushWait: args->proxyStep.transSize
  // init arguments
  uint64_t comm_hash = 0;
  std::string comm_name;
  int n_nodes = 0, nranks = 0, rank = -1;
  int* mask_ptr = nullptr;
};

// What the recorder saw of one Coll or P2p task, the way a fingerprinting plugin sees it: the
// send buffer hashed (XXH64) at Coll/P2p start, the receive buffer hashed when the last of its
// KernelCh channels stopped, NaN counts of float32 buffers, and the KernelCh timers.
struct RecordedTask {
  void* handle = nullptr;
  void* context = nullptr;
  abi::DescrV5 descr{};
  uint64_t send_bytes = 0, recv_bytes = 0;
  uint64_t send_hash = 0, recv_hash = 0;
  uint64_t send_nan = 0, recv_nan = 0;
  int ch_started = 0, ch_stopped = 0;
  uint64_t gpu_start = 0;  // earliest KernelCh start pTimer
  uint64_t gpu_end = 0;    // latest KernelChStop pTimer
  bool complete() const { return ch_started > 0 && ch_stopped == ch_started; }
};

class CallRecorder {
 public:
  // The table to hand to ProfilerDriver. Its init sets *mask to mask() and returns a new context.
  static const abi::ProfilerV5* table();
  // Clears the calls and sets the mask the next inits publish (default 0xFFF: every v5 event).
  static void reset(int mask = 0xFFF);
  // Copy of every call so far, in the order they were made.
  static std::vector<RecordedCall> calls();
  // The init call that created `context` (nullptr if none).
  static const RecordedCall* init_of(const std::vector<RecordedCall>& calls, void* context);
  static int mask();
  // Every Coll and P2p task so far, in start order.
  static std::vector<RecordedTask> tasks();
};

}  // namespace scout::sim
