// The second profiler plugin scout forwards NCCL's profiler callbacks to (SCOUT_PROFILER_DELEGATE,
// docs/plugin.md "A second profiler plugin"): NCCL has one profiler slot (docs/nccl-notes.md §1.1),
// so a site that runs NVIDIA's Inspector (or any profiler plugin) loads scout and names that plugin
// here; both then see NCCL exactly as they would alone.
//
// This file holds what the ABI layer's forwarding (plugin/abi/forward.h) needs and nothing of
// scout's own recording:
//   - opening the delegate the way NCCL opens a profiler plugin, with the table NCCL would pick
//     for the ABI version NCCL called scout with (v6 -> v6, v5, v4; v5 -> v5, v4; v4 -> v4);
//   - the delegate's activation mask (its own int, which it may keep and change later) and the
//     event types it receives: its mask plus the ancestors NCCL adds (docs/nccl-notes.md §2.2),
//     limited to the types its ABI version knows;
//   - joined handles: when scout and the delegate both return a handle for one event (or both a
//     context for one communicator), NCCL gets one value that names both, and every handle NCCL
//     gives back (stopEvent, recordEventState, parentObj, finalize's context) is split again, so
//     each plugin only ever sees its own handles. Joined values are never pointers: salt (16 bits)
//     | type nibble 0xF (event) or 0xE (context) | payload, checked against the slot's sequence
//     number before use, like scout's own handles (handle.h), so a stale or foreign one splits into
//     two NULLs and is never followed.
//   - the v5 -> v4 descriptor translation for a delegate that has only a v4 table.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "plugin/core/handle.h"
#include "scout/nccl_profiler_abi.h"

namespace scout::core::dlg {

// The delegate's functions, from the table chosen for NCCL's ABI version. init_v4/start_v4 are set
// for a v4 table, init_v5/start_v5 for v5, init_v5/start_v6 for v6.
struct Table {
  int version = 0;  // 4, 5 or 6
  const char* name = "";
  abi::Result (*init_v4)(void**, int*, const char*, uint64_t, int, int, int, abi::Logger) = nullptr;
  abi::Result (*init_v5)(void**, uint64_t, int*, const char*, int, int, int, abi::Logger) = nullptr;
  abi::Result (*start_v4)(void*, void**, abi::DescrV4*) = nullptr;
  abi::Result (*start_v5)(void*, void**, abi::DescrV5*) = nullptr;
  abi::Result (*start_v6)(void*, void**, abi::DescrV6*) = nullptr;
  abi::Result (*stop)(void*) = nullptr;
  abi::Result (*record)(void*, int, abi::StateArgs*) = nullptr;
  abi::Result (*finalize)(void*) = nullptr;
};

// Opens the plugin named by `spec` (the value of SCOUT_PROFILER_DELEGATE) as NCCL opens
// NCCL_PROFILER_PLUGIN (docs/nccl-notes.md §1.1): dlopen(spec, RTLD_NOW | RTLD_LOCAL); if that
// fails and `spec` has no '/' and is not "lib*.so", dlopen("libnccl-profiler-<spec>.so"). Then the
// newest table not newer than `nccl_version` (the ABI NCCL called scout with: 4, 5 or 6), in
// NCCL's dlsym order (docs/nccl-notes.md §1.2). Fails (false, one line in *error, nothing left
// open) when `spec` is empty or "none", nothing opens, there is no usable table, a slot is NULL,
// or the library is scout itself.
bool open_delegate(const std::string& spec, int nccl_version, Table* out, void** dl, std::string* opened,
                   std::string* error);

// The event types a delegate receives for activation mask `mask` under ABI `version`: the mask's
// own bits plus the ancestors NCCL starts for them (docs/nccl-notes.md §2.2), restricted to the
// types that version has (v4: bits 0-7, v5: 0-11, v6: 0-14).
uint64_t routed_types(int mask, int version);

// The v4 descriptor for a v5/v6 one (what NCCL's own v4 adapter does for a v4-only plugin):
// Coll and P2p take their parentGroup (the Group handle) as parent, as v4 has no API events.
// Returns false for a type v4 does not have.
bool descr_to_v4(const abi::DescrV5& in, void* coll_parent_group, abi::DescrV4* out);

// A handle (or context) split into scout's half and the delegate's half; either may be NULL.
struct Split {
  void* scout = nullptr;
  void* del = nullptr;
};

// Joined event handles: a ring of kPairSlots slots reused in order. A slot stays valid until
// kPairSlots later joins reuse it; NCCL hands a handle back long after its event stopped only
// as a parent (a Coll's children; a graph's capture-time CollApi, docs/nccl-notes.md §3.8), so a
// delegate that returns handles for API events may see a graph replay's parent as NULL after
// 2^16 joined events (docs/plugin.md, "A second profiler plugin").
constexpr uint32_t kPairSlots = 1u << 16;
// Joined contexts: one slot per communicator that both plugins record, freed at finalize.
constexpr uint32_t kCtxSlots = 4096;

// The type nibbles of joined values (above every HandleType of handle.h).
constexpr uint64_t kJoinedEvent = 0xF;
constexpr uint64_t kJoinedContext = 0xE;
static_assert(uint64_t(kLastHandleType) < kJoinedContext, "joined values must not decode as scout's handles");

class Joins {
 public:
  // Allocates the slots (false when out of memory) and draws a salt.
  bool init();
  void release();

  // One value for NCCL: `s` when `d` is NULL, `d` when `s` is NULL, else a joined handle.
  void* join(void* s, void* d) {
    if (d == nullptr) return s;
    if (s == nullptr) return d;
    return join_slow(s, d);
  }
  // The halves of a value NCCL gave back: a joined handle's two halves (NULL, NULL when its slot
  // was reused: counted in stale()); a value scout's decode accepts with `scout_salt` (0: scout
  // keeps no state) as scout's; anything else as the delegate's.
  Split split(void* h, uint16_t scout_salt) const {
    const uint64_t v = reinterpret_cast<uintptr_t>(h);
    if (v == 0) return {};
    if (uint16_t(v >> kSaltShift) == salt_ && ((v >> kTypeShift) & 0xf) == kJoinedEvent) return split_slow(v);
    if (scout_salt != 0 && decode(h, scout_salt).type != HandleType::kInvalid) return {h, nullptr};
    return {nullptr, h};
  }

  // Contexts (init and finalize only; serialized by the caller's mutex).
  void* join_context(void* s, void* d);
  Split split_context(void* ctx, uint16_t scout_salt) const;
  void free_context(void* ctx);

  uint64_t stale() const { return stale_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> seq{0};
    std::atomic<void*> s{nullptr};
    std::atomic<void*> d{nullptr};
  };
  // Written under the caller's init mutex, read on any thread (relaxed: a context is used only
  // between its init and its finalize).
  struct CtxSlot {
    std::atomic<uint32_t> gen{0};
    std::atomic<void*> s{nullptr};
    std::atomic<void*> d{nullptr};
  };
  void* join_slow(void* s, void* d);
  Split split_slow(uint64_t v) const;

  uint16_t salt_ = 0;
  Slot* slots_ = nullptr;
  CtxSlot* ctx_ = nullptr;
  std::atomic<uint64_t> next_{1};
  mutable std::atomic<uint64_t> stale_{0};
};

}  // namespace scout::core::dlg
