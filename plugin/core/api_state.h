// Per-thread API state: the GroupApi, CollApi and P2pApi events of the threads that call NCCL.
//
// NCCL starts and stops these on the user thread (docs/nccl-notes.md §1.4, 3.1), but their handles come back
// later on other threads: as the parent of a Coll/P2p on the launching thread or a CUDA
// host-callback thread (non-blocking communicators, graph replays, docs/nccl-notes.md §3.8). So each calling
// thread owns a ThreadBlock in a process-wide table (not in thread_local storage, which dies
// with the thread and cannot be reached safely from others); thread_local holds only a cached
// index. A block holds two rings of API slots, one for ordinary calls and one for calls made
// during CUDA graph capture (their handles must stay valid for every replay).
//
// Slot protocol: slot.word = (counter << 4) | SlotState, a single atomic; the owner invalidates
// it (state kSlotWriting), writes the fields, then publishes (counter, kSlotOpen) with release.
// Readers copy the fields between two loads of word (a seqlock); state changes are CAS on word,
// so a decision about an API call (matched / emitted as unmatched) is taken exactly once and
// can never apply to a later call reusing the slot.
//
// Unmatched API calls (docs/record-format.md#unmatched-api-calls, "never guessed"): at the outermost
// GroupApi stop each call of the group that no Coll/P2p/CeColl claimed is
//   * emitted at once as a kKindUnmatched record when its communicator already enqueued a
//     Coll/P2p of this group (all of that group's plans were launched: blocking path);
//   * otherwise deferred (the launch may still come on another thread: non-blocking
//     communicators, host callbacks) and emitted at the thread's next outermost GroupApi stop if
//     still unclaimed;
//   * calls made during graph capture stay claimable (replays) and are emitted only if never
//     claimed when their communicator is finalized or their slot is reused.
// A Coll/P2p that arrives for an already emitted call still gets its full record (and the
// communicator's late_matches counter advances).
#pragma once

#include <cstdint>

namespace scout::core {

struct Process;
struct CommState;

constexpr uint32_t kMaxThreadBlocks = 256;  // threads that may issue NCCL calls at once
constexpr uint32_t kRegularSlots = 8192;    // API calls in flight per thread (>= one group)
constexpr uint32_t kCapturedSlots = 2048;   // captured API calls kept claimable per thread

enum SlotState : uint64_t {
  kSlotWriting = 0,  // being (re)written by the owner; readers skip
  kSlotOpen = 1,     // API call made, no Coll/P2p yet
  kSlotMatched = 2,  // claimed by a Coll/P2p/CeColl
  kSlotPending = 3,  // group ended without a claim; decision deferred
  kSlotEmitted = 4,  // recorded as an unmatched record
  kSlotIgnored = 5,  // not recorded (SCOUT_P2P=0)
};

// One API call. Plain fields accessed with __atomic builtins (other threads read them).
struct ApiSlot {
  uint64_t word;    // (counter << 4) | SlotState
  uint64_t count;   // user count
  uint64_t stream;  // user stream
  uint64_t group;   // group id
  int64_t api_ns;   // CLOCK_REALTIME at CollApi/P2pApi start
  int32_t root;     // CollApi root (-1 for P2pApi)
  uint32_t tid;     // calling thread
  uint16_t ring;    // communicator ring index
  uint8_t func;     // shm::Func
  uint8_t dtype;    // shm::Datatype
  uint8_t is_p2p;
  uint8_t flags;    // shm::kFlagGraphCaptured | shm::kFlagUserGroup
  uint8_t pad[10];  // one cache line per slot
};
static_assert(sizeof(ApiSlot) == 64);

// A validated copy of a slot.
struct ApiCopy {
  uint64_t counter = 0;
  uint64_t count = 0, stream = 0, group = 0;
  int64_t api_ns = 0;
  int32_t root = -1;
  uint32_t tid = 0;
  uint32_t ring = 0;
  uint8_t func = 0, dtype = 0, is_p2p = 0, flags = 0;
  uint64_t state = 0;
};

struct ThreadBlock {
  uint32_t owner_tid;  // 0: free (atomic builtins)
  uint32_t index;
  uint64_t owner_self;  // pthread_self() of the owner (atomic builtins)
  // Owner-only state.
  uint64_t next_counter[2];  // per ring; counters start at 1
  uint64_t group_id;         // open outermost group (0: none)
  uint64_t group_first;      // first regular counter of the open group
  uint64_t group_first_cap;  // first captured counter of the open group
  uint8_t group_open, group_captured, group_user, pad0;
  uint64_t deferred_first, deferred_end;  // regular counters awaiting the next sweep
  uint64_t gid_next, gid_end;             // reserved batch of group ids
  ApiSlot regular[kRegularSlots];
  ApiSlot captured[kCapturedSlots];
};

// The calling thread's block (acquired on first use; a block whose owner thread has exited is
// reused). nullptr when all kMaxThreadBlocks are taken by live threads.
ThreadBlock* my_block(Process* p);

// The block named by a GroupApi handle payload if that block's open group is the handle's
// group (then the caller is its owner thread: NCCL's API state is thread-local); else nullptr.
ThreadBlock* group_block_of(Process* p, uint64_t group_payload);

// Frees every block (process state teardown).
void free_blocks(Process* p);

// GroupApi start on the owner thread: opens a group, returns its id (>0).
uint64_t group_begin(Process* p, ThreadBlock* tb, bool captured, int depth);

// GroupApi stop on the owner thread: decides the fate of the group's unclaimed calls (see the
// header comment) and closes the group.
void group_end(Process* p, ThreadBlock* tb);

// CollApi/P2pApi start: claims a slot, fills it, returns the handle payload.
uint64_t api_begin(Process* p, ThreadBlock* tb, CommState* c, bool is_p2p, uint8_t func, uint8_t dtype, uint64_t count,
                   int32_t root, uint64_t stream, bool captured, int64_t now);

enum class ClaimResult {
  kFirst,   // first claim: use the API information
  kReplay,  // captured call claimed again (graph replay): use it
  kLate,    // the call had been recorded as unmatched already: use it, count a late match
  kStale,   // already claimed by another Coll/P2p and not captured (docs/nccl-notes.md §3.10): ignore it
  kGone,    // slot reused meanwhile
};
// The Coll/P2p/CeColl start path: copies the API call named by an Api handle payload into
// *out (a seqlock copy), checks that it was made on communicator `ring`, and marks it claimed
// (a plain store on its own thread, else a CAS on the slot word). kGone when the handle names no
// live slot of that ring (bad block, reused slot, being written, another communicator).
ClaimResult api_take(Process* p, uint64_t payload, uint32_t ring, ApiCopy* out);

// Emits every still-unclaimed call of communicator `c` (finalize of `c`).
void sweep_comm(Process* p, CommState* c);

}  // namespace scout::core
