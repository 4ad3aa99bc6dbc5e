// Translation of NCCL's v4 profiler descriptors (NCCL 2.27) into the v5 layout the event layer
// handles. Facts from docs/nccl-notes.md §2.5 and 2.6: the v4 type is 8 bits; for Coll/P2p, parentObj is the
// legacy Group handle (there are no API events in v4); p2p.nChannels is never filled by NCCL's
// v4 adapter (uninitialised memory): the event layer treats it as unknown.
#pragma once

#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::core {

// Copies the members that v4 and v5/v6 descriptors share for event `type` from `in` to `out`, in
// either direction (out zeroed by the caller; type, parentObj and rank are the caller's): Coll's
// seqNumber..proto and P2p's func..peer member by member (v5 adds parentGroup, so the layouts
// differ), ProxyOp, ProxyStep, KernelCh and NetPlugin whole, nothing for Group and ProxyCtrl.
// p2p.nChannels is the caller's (NCCL's v4 adapter never fills it). Returns false for a type v4
// does not have.
template <class From, class To>
bool copy_shared_members(uint64_t type, const From& in, To* out) {
  switch (type) {
    case abi::kEvColl:
      out->coll.seqNumber = in.coll.seqNumber;
      out->coll.func = in.coll.func;
      out->coll.sendBuff = in.coll.sendBuff;
      out->coll.recvBuff = in.coll.recvBuff;
      out->coll.count = in.coll.count;
      out->coll.root = in.coll.root;
      out->coll.datatype = in.coll.datatype;
      out->coll.nChannels = in.coll.nChannels;
      out->coll.nWarps = in.coll.nWarps;
      out->coll.algo = in.coll.algo;
      out->coll.proto = in.coll.proto;
      return true;
    case abi::kEvP2p:
      out->p2p.func = in.p2p.func;
      out->p2p.buff = in.p2p.buff;
      out->p2p.datatype = in.p2p.datatype;
      out->p2p.count = in.p2p.count;
      out->p2p.peer = in.p2p.peer;
      return true;
    case abi::kEvProxyOp: out->proxyOp = in.proxyOp; return true;
    case abi::kEvProxyStep: out->proxyStep = in.proxyStep; return true;
    case abi::kEvKernelCh: out->kernelCh = in.kernelCh; return true;
    case abi::kEvNetPlugin: out->netPlugin = in.netPlugin; return true;
    case abi::kEvGroup:
    case abi::kEvProxyCtrl: return true;
    default: return false;
  }
}

// Copies `in` into `out`. Returns false for a type bit v4 cannot carry (>= bit 8: NCCL never
// sends those to a v4 plugin), in which case `out` is unspecified.
bool descr_from_v4(const abi::DescrV4& in, abi::DescrV5* out);

// startEvent of the v4 table.
void start_event_v4(void* ctx, void** handle, const abi::DescrV4* d);

}  // namespace scout::core
