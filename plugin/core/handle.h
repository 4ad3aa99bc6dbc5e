// Handles: the opaque values scout gives NCCL as contexts (init) and event handles (startEvent).
//
// NCCL never dereferences them; it stores them and passes them back as parentObj, to stopEvent
// and to recordEventState, possibly long after the event ended (stale handles, docs/nccl-notes.md §3.10), and
// under PXN a handle of *another process* may come back (docs/nccl-notes.md §3.9). So a handle is never a
// pointer: it is an encoded 64-bit value that scout decodes and validates before any use.
//
//   bits 63..48  salt     per-process, per-load random value != 0 (so a handle is never NULL,
//                         and handles of another process or an earlier load are rejected)
//   bits 47..44  type     HandleType below
//   bits 43..0   payload  type-specific, see the make_* functions
//
// Decoding checks salt and type; the payload's indices are then bounds-checked and its
// generation/index compared with the live state it names (comm ring, API slot generation,
// RingWriter::at(index)), so a stale or forged value is counted and ignored, never followed.
#pragma once

#include <cstdint>

namespace scout::core {

enum class HandleType : uint8_t {
  kInvalid = 0,
  kContext = 1,       // communicator context: ring index
  kGroupApi = 2,      // outermost GroupApi: thread block, group id, captured, user group
  kApi = 3,           // CollApi / P2pApi: thread block, slot ring, slot counter
  kKernelLaunch = 4,  // KernelLaunch: ring index
  kGroup = 5,         // legacy Group event (payload 0)
  kOp = 6,            // Coll / P2p / CeColl: ring index + record index (low 36 bits)
  kKernelCh = 7,      // KernelCh: ring index + channel + record index (low 30 bits)
  kInert = 8,         // an event scout chose not to track: its children and stop are ignored
  kProxyOp = 9,       // ProxyOp in a ProxyStep window or a trace: ring, direction, window, entry or peer
  kProxyStep = 10,    // ProxyStep of such an op: ring, step slot, slot generation
  kProxyCount = 11,   // ProxyStep only counted in its progress entry (not timed): ring, direction, op gen, entry
};
constexpr HandleType kLastHandleType = HandleType::kProxyCount;

constexpr int kSaltShift = 48;
constexpr int kTypeShift = 44;
constexpr uint64_t kPayloadMask = (1ull << kTypeShift) - 1;

constexpr int kOpIndexBits = 36;
constexpr int kChIndexBits = 30;
constexpr int kApiCounterBits = 35;
constexpr uint64_t kApiCounterMask = (1ull << kApiCounterBits) - 1;
constexpr int kGroupIdBits = 34;
constexpr uint64_t kGroupIdMask = (1ull << kGroupIdBits) - 1;

constexpr uint64_t encode(uint16_t salt, HandleType t, uint64_t payload) {
  return (uint64_t(salt) << kSaltShift) | (uint64_t(t) << kTypeShift) | (payload & kPayloadMask);
}

// A decoded handle: type kInvalid when the value is NULL or not one of this load's handles.
struct Decoded {
  HandleType type = HandleType::kInvalid;
  uint64_t payload = 0;
};

inline Decoded decode(const void* h, uint16_t salt) {
  uint64_t v = reinterpret_cast<uintptr_t>(h);
  Decoded d;
  // NULL never matches: salts are never 0. Type 0 and types above kLastHandleType are rejected.
  uint32_t t = uint32_t(v >> kTypeShift) & 0xf;
  if (uint16_t(v >> kSaltShift) != salt || t - 1u >= uint32_t(kLastHandleType)) return d;
  d.type = static_cast<HandleType>(t);
  d.payload = v & kPayloadMask;
  return d;
}

inline void* to_ptr(uint64_t v) { return reinterpret_cast<void*>(uintptr_t(v)); }

// ---- payload layouts

// Context / KernelLaunch: the communicator's ring index.
constexpr uint64_t ring_payload(uint32_t ring) { return ring & 0xff; }
constexpr uint32_t payload_ring(uint64_t p) { return uint32_t(p & 0xff); }

// Op: ring (8 bits) << 36 | record index & (2^36 - 1).
constexpr uint64_t op_payload(uint32_t ring, uint64_t index) {
  return (uint64_t(ring & 0xff) << kOpIndexBits) | (index & ((1ull << kOpIndexBits) - 1));
}
constexpr uint32_t op_ring(uint64_t p) { return uint32_t((p >> kOpIndexBits) & 0xff); }
constexpr uint64_t op_index_low(uint64_t p) { return p & ((1ull << kOpIndexBits) - 1); }

// KernelCh: ring (8) << 36 | channel (6) << 30 | record index & (2^30 - 1).
constexpr uint64_t ch_payload(uint32_t ring, uint32_t channel, uint64_t index) {
  return (uint64_t(ring & 0xff) << 36) | (uint64_t(channel & 0x3f) << kChIndexBits) |
         (index & ((1ull << kChIndexBits) - 1));
}
constexpr uint32_t ch_ring(uint64_t p) { return uint32_t((p >> 36) & 0xff); }
constexpr uint32_t ch_channel(uint64_t p) { return uint32_t((p >> kChIndexBits) & 0x3f); }
constexpr uint64_t ch_index_low(uint64_t p) { return p & ((1ull << kChIndexBits) - 1); }

// Api: thread block (8) << 36 | captured-ring bit << 35 | slot counter & (2^35 - 1).
constexpr uint64_t api_payload(uint32_t block, bool captured_ring, uint64_t counter) {
  return (uint64_t(block & 0xff) << 36) | (uint64_t(captured_ring) << 35) | (counter & kApiCounterMask);
}
constexpr uint32_t api_block(uint64_t p) { return uint32_t((p >> 36) & 0xff); }
constexpr bool api_captured_ring(uint64_t p) { return (p >> 35) & 1; }
constexpr uint64_t api_counter(uint64_t p) { return p & kApiCounterMask; }

// GroupApi: thread block (8) << 36 | user group << 35 | captured << 34 | group id (34 bits).
// The block lets CollApi/P2pApi (same thread, parentObj = this handle) and the GroupApi stop find
// the thread's API state without a thread-local lookup; it is trusted only while that block's
// open group has this id.
constexpr uint64_t group_payload(uint32_t block, uint64_t group_id, bool captured, bool user_group) {
  return (uint64_t(block & 0xff) << 36) | (uint64_t(user_group) << 35) | (uint64_t(captured) << 34) |
         (group_id & kGroupIdMask);
}
constexpr uint64_t group_id(uint64_t p) { return p & kGroupIdMask; }
constexpr bool group_captured(uint64_t p) { return (p >> 34) & 1; }
constexpr bool group_user(uint64_t p) { return (p >> 35) & 1; }
constexpr uint32_t group_block(uint64_t p) { return uint32_t((p >> 36) & 0xff); }

// ProxyOp: ring (8) << 36 | send << 35 | timed << 34 | window (11) << 23 | progress << 22 | value
// (22 bits). `timed`: started in an open ProxyStep window (its steps are timed while the window
// lasts); the window is ProxyWindows::current() >> 1, truncated. `progress`: value is the index of
// its progress table entry (progress.h), whose `peer` names the peer; otherwise value is the peer's
// comm rank.
constexpr uint64_t kProxyValueMask = (1ull << 22) - 1;
constexpr uint64_t pop_payload(uint32_t ring, bool send, bool timed, uint32_t window, bool progress, uint32_t value) {
  return (uint64_t(ring & 0xff) << 36) | (uint64_t(send) << 35) | (uint64_t(timed) << 34) |
         (uint64_t(window & 0x7ff) << 23) | (uint64_t(progress) << 22) | (value & kProxyValueMask);
}
constexpr uint32_t pop_ring(uint64_t p) { return uint32_t((p >> 36) & 0xff); }
constexpr bool pop_send(uint64_t p) { return (p >> 35) & 1; }
constexpr bool pop_timed(uint64_t p) { return (p >> 34) & 1; }
constexpr uint32_t pop_window(uint64_t p) { return uint32_t((p >> 23) & 0x7ff); }
constexpr bool pop_progress(uint64_t p) { return (p >> 22) & 1; }
constexpr uint32_t pop_value(uint64_t p) { return uint32_t(p & kProxyValueMask); }

// The value of a ProxyOp handle with `progress`: its progress entry's index (12 bits) and the
// entry's op_gen its op has or will have (low 8 bits; progress.h, ops queued behind a running one).
constexpr uint32_t prog_value(uint32_t index, uint32_t gen) { return ((gen & 0xff) << 12) | (index & 0xfff); }
constexpr uint32_t prog_index(uint32_t value) { return value & 0xfff; }
constexpr uint32_t prog_gen(uint32_t value) { return (value >> 12) & 0xff; }

// ProxyCount (a ProxyStep counted, not timed): ring (8) << 36 | send << 35 | op gen (8) << 12 |
// progress entry index (12 bits).
constexpr uint64_t count_payload(uint32_t ring, bool send, uint32_t gen, uint32_t index) {
  return (uint64_t(ring & 0xff) << 36) | (uint64_t(send) << 35) | (uint64_t(gen & 0xff) << 12) | (index & 0xfff);
}
constexpr uint32_t count_ring(uint64_t p) { return uint32_t((p >> 36) & 0xff); }
constexpr bool count_send(uint64_t p) { return (p >> 35) & 1; }
constexpr uint32_t count_gen(uint64_t p) { return uint32_t((p >> 12) & 0xff); }
constexpr uint32_t count_index(uint64_t p) { return uint32_t(p & 0xfff); }

// ProxyStep: ring (8) << 36 | step slot (12) << 24 | slot generation (24 bits).
constexpr uint64_t step_payload(uint32_t ring, uint32_t slot, uint32_t gen) {
  return (uint64_t(ring & 0xff) << 36) | (uint64_t(slot & 0xfff) << 24) | (gen & 0xffffff);
}
constexpr uint32_t step_ring(uint64_t p) { return uint32_t((p >> 36) & 0xff); }
constexpr uint32_t step_slot(uint64_t p) { return uint32_t((p >> 24) & 0xfff); }
constexpr uint32_t step_gen(uint64_t p) { return uint32_t(p & 0xffffff); }

// The full record index whose low `bits` bits are `low`: the latest index below `head` with
// those bits (records older than 2^bits are long overwritten). Returns false when head == 0 or
// `low` names no index below head.
inline bool full_index(uint64_t head, uint64_t low, int bits, uint64_t* out) {
  if (head == 0) return false;
  uint64_t mask = (1ull << bits) - 1;
  uint64_t last = head - 1;
  uint64_t back = (last - low) & mask;
  if (back > last) return false;
  *out = last - back;
  return true;
}

}  // namespace scout::core
