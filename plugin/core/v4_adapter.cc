// v4 descriptor translation (v4_adapter.h).
#include "plugin/core/v4_adapter.h"

#include <cstring>

#include "plugin/core/events.h"

namespace scout::core {

bool descr_from_v4(const abi::DescrV4& in, abi::DescrV5* out) {
  std::memset(out, 0, sizeof(*out));
  out->type = in.type;
  out->parentObj = in.parentObj;
  out->rank = in.rank;
  switch (in.type) {
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
      out->coll.parentGroup = in.parentObj;
      return true;
    case abi::kEvP2p:
      out->p2p.func = in.p2p.func;
      out->p2p.buff = in.p2p.buff;
      out->p2p.datatype = in.p2p.datatype;
      out->p2p.count = in.p2p.count;
      out->p2p.peer = in.p2p.peer;
      out->p2p.nChannels = 0;  // not filled by NCCL for v4: unknown (start_event is told)
      out->p2p.parentGroup = in.parentObj;
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

void start_event_v4(void* ctx, void** handle, const abi::DescrV4* d) {
  if (handle == nullptr) return;
  if (d == nullptr) {
    *handle = nullptr;
    return;
  }
  abi::DescrV5 v5;
  if (!descr_from_v4(*d, &v5)) {
    v5.type = uint64_t(1) << 63;  // reported as unknown by start_event
  }
  start_event(ctx, handle, &v5, 4);
}

}  // namespace scout::core
