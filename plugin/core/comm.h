// Per-communicator state of the event layer (one per ring of the segment).
//
// Created at init, marked finalized at finalize, freed only with the process state (last
// finalize), so a stale handle naming a finalized communicator is still validated against live
// memory and counted, never followed into freed memory. Everything touched on the hot path is
// an atomic owned by this communicator (no process-wide cache line is written per event).
#pragma once

#include <atomic>
#include <cstdint>

#include "common/names.h"
#include "common/segment_writer.h"
#include "plugin/core/clock.h"

namespace scout::fp {
struct CommFp;
}

namespace scout::core {

struct ProxyComm;

// KernelCh bookkeeping of one ring slot (process memory, indexed like the ring): which channels
// started and stopped (bit = NCCL channel id 0..63; their counts are the record's ch_started and
// ch_stopped) and the latest raw GPU stop time.
struct SlotChannels {
  std::atomic<uint64_t> started;
  std::atomic<uint64_t> stopped;
  std::atomic<uint64_t> end_raw;
};

enum CommLive : uint32_t { kCommLiveFree = 0, kCommLiveActive = 1, kCommLiveFinalized = 2 };

struct CommState {
  uint32_t ring_index = 0;
  std::atomic<uint32_t> live{kCommLiveFree};
  shm::RingWriter* ring = nullptr;             // the segment's writer of this ring
  shm::RingWriter rw{nullptr, nullptr, 1, 0};  // a copy of it, one indirection less
  shm::CommHeader* hdr = nullptr;
  uint64_t comm_hash = 0;
  int nranks = 0, rank = 0, nnodes = 0;
  fp::CommFp* fp = nullptr;                   // null: no fingerprints for this communicator
  ProxyComm* proxy = nullptr;                 // ProxyStep timing (proxy_steps.h); null: off
  std::atomic<uint64_t>* send_ctr = nullptr;  // [nranks] sends issued to each peer
  std::atomic<uint64_t>* recv_ctr = nullptr;  // [nranks] recvs issued from each peer
  SlotChannels* channels = nullptr;           // [ring capacity]
  uint32_t slot_mask = 0;                     // ring capacity - 1
  std::atomic<uint64_t> fallback_key{0};      // keys of unmatched records

  // Last strings seen in this communicator's descriptors (names.h).
  shm::NameMemo api_func, api_dtype, op_func, op_dtype, op_algo, op_proto;

  // Latest KernelLaunch on this communicator (written by the launching thread).
  alignas(64) std::atomic<int64_t> launch_ns{0};
  std::atomic<uint64_t> launch_stream{0};
  std::atomic<uint32_t> launch_tid{0};
  std::atomic<uint64_t> launch_group{0};   // group id of the GroupApi parent of that launch
  std::atomic<uint64_t> enqueue_group{0};  // group id of the latest Coll/P2p's API call
  std::atomic<uint64_t> send_hint{0};      // largest send buffer of API calls since the last
                                           // launch (engine on_launch_start hint), bytes

  alignas(64) ClockOffset clock;  // GPU clock -> wall clock (clock.h)
};

// Allocates the communicator state for `ring` (a ring already opened in the segment). Returns
// nullptr when memory is short.
CommState* comm_create(shm::RingWriter* ring, uint64_t comm_hash, int nranks, int rank, int nnodes);
void comm_free(CommState* c);

// Slot bookkeeping of record `index` of this communicator.
inline SlotChannels& slot_channels(CommState* c, uint64_t index) { return c->channels[index & c->slot_mask]; }

}  // namespace scout::core
