// Writing operation records into a communicator's ring (include/scout/shm_format.h).
//
// One OpRecord per operation, written once at Coll/P2p/CeColl start (or, for API calls NCCL
// never turned into a Coll/P2p, at the decision point of api_state.h) and then only updated in
// its progress fields by kernel_ch.h. Every function here runs on NCCL's threads: no locks, no
// allocation, no system calls beyond clock reads.
#pragma once

#include <cstdint>

#include "plugin/core/api_state.h"
#include "scout/nccl_profiler_abi.h"

namespace scout::core {

struct Process;
struct CommState;

// Context of one Coll/P2p start beyond its descriptor.
struct OpContext {
  const ApiCopy* api = nullptr;  // the CollApi/P2pApi parent, if valid
  uint32_t flags = 0;            // extra shm::OpFlags (kFlagNoApi, ...)
  int64_t now = 0;               // CLOCK_REALTIME of the start callback
};

// Coll start: key = descriptor seqNumber (docs/nccl-notes.md §3.6). A func string NCCL does not number gives
// a kKindUnmatched record with a fallback key. Returns false if nothing was written; *index is
// the record's ring index.
bool write_coll(Process* p, CommState* c, const abi::CollV5& d, const OpContext& ctx, uint64_t* index);

// P2p start: key = this communicator's counter of sends to (recvs from) the peer, so send #k of
// rank a to b pairs with recv #k of b from a.
bool write_p2p(Process* p, CommState* c, const abi::P2pV5& d, const OpContext& ctx, uint64_t* index);

// v6 CeColl start: kKindCeColl, key = ceColl.seqNumber, always kFlagUnmatched (copy-engine
// collectives are not numbered by NCCL's seqNumber, docs/nccl-notes.md §3.6) and kFlagNoKernelCh.
bool write_ce_coll(Process* p, CommState* c, const abi::CeCollDescr& d, const OpContext& ctx, uint64_t* index);

// An API call no Coll/P2p followed: kKindUnmatched, state kStateApiOnly, kFlagUnmatched, key =
// the communicator's fallback counter.
void write_unmatched(Process* p, CommState* c, const ApiCopy& api);

}  // namespace scout::core
