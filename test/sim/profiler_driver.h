// NCCL 2.28.9's side of the profiler ABI, as scout-sim drives it: calls the plugin's table with
// v5 descriptors, adapting to a v4-only plugin the way NCCL's v4 adapter does (docs/nccl-notes.md §2.5,
// "v4 caveats"), and the activation-mask gates NCCL applies before each event (docs/nccl-notes.md §2.2).
// Without a plugin every call is a no-op, as in NCCL with profiling off.
#pragma once

#include <cstdint>

#include "scout/nccl_profiler_abi.h"
#include "test/sim/nccl_plugin_loader.h"

namespace scout::sim {

// Mask gates (docs/nccl-notes.md §2.2; v2.28.9-1:src/plugin/profiler.cc): an event is started only if the
// activation mask has one of these bits.
namespace gate {
using namespace scout::abi;
constexpr uint64_t kGroupApi = 0xFFFull & ~kEvProxyCtrl;  // bits 0-11 except ProxyCtrl
constexpr uint64_t kCollApi = kEvCollApi | kEvColl | kEvProxyOp | kEvProxyStep | kEvKernelCh | kEvNetPlugin;
constexpr uint64_t kP2pApi = kEvP2pApi | kEvP2p | kEvProxyOp | kEvProxyStep | kEvKernelCh | kEvNetPlugin;
constexpr uint64_t kKernelLaunch = kEvKernelLaunch;
constexpr uint64_t kGroup = kEvGroup | kEvColl | kEvP2p | kEvProxyOp | kEvProxyStep | kEvKernelCh | kEvNetPlugin;
constexpr uint64_t kColl = kEvColl | kEvProxyOp | kEvProxyStep | kEvKernelCh | kEvNetPlugin;
constexpr uint64_t kP2p = kEvP2p | kEvProxyOp | kEvProxyStep | kEvKernelCh | kEvNetPlugin;
constexpr uint64_t kKernelCh = kEvKernelCh;
// ProxyOp and ProxyStep: their own bit or a descendant's (ancestors come for free, docs/nccl-notes.md §2.2).
constexpr uint64_t kProxyOp = kEvProxyOp | kEvProxyStep | kEvNetPlugin;
constexpr uint64_t kProxyStep = kEvProxyStep | kEvNetPlugin;
}  // namespace gate

class ProfilerDriver {
 public:
  ProfilerDriver() = default;                         // no plugin
  explicit ProfilerDriver(const LoadedPlugin& p);     // the table the loader found (v4, v5 or v6)
  explicit ProfilerDriver(const abi::ProfilerV5* t);  // an in-process table (tests)

  bool loaded() const { return version_ != 0; }
  int version() const { return version_; }
  const char* name() const;

  // init with NCCL's argument order for the table's version (docs/nccl-notes.md §2.4). Returns the
  // plugin's result; NCCL 2.28.9 only logs a failure and keeps calling the plugin (docs/nccl-notes.md §1.3).
  abi::Result init(void** context, uint64_t comm_hash, int* mask, const char* comm_name, int n_nodes, int nranks,
                   int rank, abi::Logger log) const;
  // startEvent. *handle is set to what the plugin returns (nullptr when no plugin, or when a v4
  // plugin cannot receive the type: types >= GroupApi are dropped, docs/nccl-notes.md §2.5).
  void start(void* context, void** handle, const abi::DescrV5& d) const;
  // stopEvent / recordEventState for a non-null handle (NCCL never passes null here except on
  // the net-plugin path, which the sim does not emulate). v4 gets no GroupApi states.
  void stop(void* handle) const;
  void record(void* handle, int state, abi::StateArgs* args) const;
  // finalize, only for a non-null context (docs/nccl-notes.md §1.3).
  void finalize(void* context) const;

 private:
  int version_ = 0;
  const abi::ProfilerV4* v4_ = nullptr;
  const abi::ProfilerV5* v5_ = nullptr;
  const abi::ProfilerV6* v6_ = nullptr;
};

// `d` (an event below GroupApi) as NCCL's v4 adapter hands it to a v4 plugin (docs/nccl-notes.md
// §2.5): a Coll's or P2p's parent is its legacy Group (coll.parentGroup, p2p.parentGroup), a P2p's
// nChannels is left uninitialised (here 0xCD, a value the plugin must not trust), the other
// types' members copied.
abi::DescrV4 v4_descr(const abi::DescrV5& d);

// An event description of `type` under `parent` for comm rank `rank`, every other field zero;
// callers fill the union member of their event type.
abi::DescrV5 blank_descr(uint64_t type, void* parent, int rank);

}  // namespace scout::sim
