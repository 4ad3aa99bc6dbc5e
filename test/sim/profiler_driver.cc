#include "test/sim/profiler_driver.h"

#include <cstring>

namespace scout::sim {

ProfilerDriver::ProfilerDriver(const LoadedPlugin& p) : version_(p.version), v4_(p.v4), v5_(p.v5), v6_(p.v6) {}

ProfilerDriver::ProfilerDriver(const abi::ProfilerV5* t) : version_(t ? 5 : 0), v5_(t) {}

const char* ProfilerDriver::name() const {
  const char* n = version_ == 4 ? v4_->name : version_ == 5 ? v5_->name : version_ == 6 ? v6_->name : nullptr;
  return n ? n : "";
}

abi::Result ProfilerDriver::init(void** context, uint64_t comm_hash, int* mask, const char* comm_name, int n_nodes,
                                 int nranks, int rank, abi::Logger log) const {
  *context = nullptr;
  switch (version_) {
    case 4: return v4_->init(context, mask, comm_name, comm_hash, n_nodes, nranks, rank, log);
    case 5: return v5_->init(context, comm_hash, mask, comm_name, n_nodes, nranks, rank, log);
    case 6: return v6_->init(context, comm_hash, mask, comm_name, n_nodes, nranks, rank, log);
    default: return abi::kSuccess;
  }
}

void ProfilerDriver::start(void* context, void** handle, const abi::DescrV5& d) const {
  *handle = nullptr;
  if (version_ == 5) {
    abi::DescrV5 copy = d;
    v5_->startEvent(context, handle, &copy);
  } else if (version_ == 6) {
    abi::DescrV6 d6;
    static_assert(sizeof(d6) == sizeof(d));
    std::memcpy(static_cast<void*>(&d6), &d, sizeof(d6));  // v5 members keep their offsets in v6
    v6_->startEvent(context, handle, &d6);
  } else if (version_ == 4) {
    if (d.type >= abi::kEvGroupApi) return;  // NCCL's v4 adapter drops API-level events
    abi::DescrV4 d4 = v4_descr(d);
    v4_->startEvent(context, handle, &d4);
  }
}

void ProfilerDriver::stop(void* handle) const {
  if (!handle) return;
  switch (version_) {
    case 4: v4_->stopEvent(handle); break;
    case 5: v5_->stopEvent(handle); break;
    case 6: v6_->stopEvent(handle); break;
    default: break;
  }
}

void ProfilerDriver::record(void* handle, int state, abi::StateArgs* args) const {
  if (!handle) return;
  switch (version_) {
    case 4:
      if (state == abi::kStateGroupStartApiStop || state == abi::kStateGroupEndApiStart) return;
      v4_->recordEventState(handle, state, args);
      break;
    case 5: v5_->recordEventState(handle, state, args); break;
    case 6: v6_->recordEventState(handle, state, args); break;
    default: break;
  }
}

void ProfilerDriver::finalize(void* context) const {
  if (!context) return;
  switch (version_) {
    case 4: v4_->finalize(context); break;
    case 5: v5_->finalize(context); break;
    case 6: v6_->finalize(context); break;
    default: break;
  }
}

abi::DescrV4 v4_descr(const abi::DescrV5& d) {
  abi::DescrV4 d4;
  std::memset(static_cast<void*>(&d4), 0, sizeof(d4));
  d4.type = static_cast<uint8_t>(d.type);
  d4.parentObj = d.parentObj;
  d4.rank = d.rank;
  if (d.type == abi::kEvColl) {
    d4.parentObj = d.coll.parentGroup;  // v4 Coll parent is the legacy Group
    d4.coll.seqNumber = d.coll.seqNumber;
    d4.coll.func = d.coll.func;
    d4.coll.sendBuff = d.coll.sendBuff;
    d4.coll.recvBuff = d.coll.recvBuff;
    d4.coll.count = d.coll.count;
    d4.coll.root = d.coll.root;
    d4.coll.datatype = d.coll.datatype;
    d4.coll.nChannels = d.coll.nChannels;
    d4.coll.nWarps = d.coll.nWarps;
    d4.coll.algo = d.coll.algo;
    d4.coll.proto = d.coll.proto;
  } else if (d.type == abi::kEvP2p) {
    d4.parentObj = d.p2p.parentGroup;
    d4.p2p.func = d.p2p.func;
    d4.p2p.buff = d.p2p.buff;
    d4.p2p.datatype = d.p2p.datatype;
    d4.p2p.count = d.p2p.count;
    d4.p2p.peer = d.p2p.peer;
    d4.p2p.nChannels = 0xCD;  // NCCL's v4 adapter leaves it uninitialised (docs/nccl-notes.md §2.5)
  } else if (d.type == abi::kEvKernelCh) {
    d4.kernelCh = d.kernelCh;
  } else if (d.type == abi::kEvProxyOp) {
    d4.proxyOp = d.proxyOp;
  } else if (d.type == abi::kEvProxyStep) {
    d4.proxyStep = d.proxyStep;
  }
  return d4;
}

abi::DescrV5 blank_descr(uint64_t type, void* parent, int rank) {
  abi::DescrV5 d;
  std::memset(static_cast<void*>(&d), 0, sizeof(d));
  d.type = type;
  d.parentObj = parent;
  d.rank = rank;
  return d;
}

}  // namespace scout::sim
