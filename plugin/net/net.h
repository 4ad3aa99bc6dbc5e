// The net plugin half: what the exported ncclNetPlugin_v11/_v12 tables (plugin/abi/net_exports.cc)
// call. It wraps the delegate named by SCOUT_NET_DELEGATE (delegate.h) and forwards every call
// with its arguments and result unchanged (docs/net-plugin.md; docs/nccl-notes.md §6.5), except:
//   - its own objects stand for the delegate's contexts, listen/send/recv comms, memory handles
//     and requests (each holds the delegate's), so per-connection state needs no lookup;
//   - the last 32 bytes of a listen handle carry this process's identity (global rank, pid,
//     host hash, a nonce) when the delegate left them zero, so the connecting side knows its
//     peer (docs/net-plugin.md, "Peer identity");
//   - every completed isend/irecv adds its bytes and duration (post to the test() that reported
//     it done) to the connection's link table entry (link_table.h);
//   - SCOUT_NET_FAULT drills (fault.h) hold, stall or corrupt chosen transfers.
// Without a delegate (unset, missing, no table, scout itself) init returns kInternalError with
// one WARN line, so NCCL moves on to its next net plugin and its own transports; the profiler
// half is not affected.
//
// Threads: init/finalize/listen/connect/accept/regMr run on NCCL's init and proxy service
// threads; isend/irecv/iflush/test/irecvConsumed of one comm on its proxy progress thread
// (docs/nccl-notes.md §1.4), so a connection's requests and counters have one writer. isend,
// irecv, iflush, test and irecvConsumed never allocate, lock, block or throw; a full request
// table (more than 64 in flight on one comm, twice NCCL's limit) answers "try again" (NULL
// request) without calling the delegate.
#pragma once

#include <cstddef>
#include <cstdint>

#include "scout/nccl_net_abi.h"

namespace scout::net {

// Per-communicator init. `nccl_version` is the table NCCL called (11 or 12). On success *ctx is
// scout's context; on failure *ctx is NULL and the result is the delegate's, or kInternalError
// when there is no usable delegate.
abi::Result init(void** ctx, uint64_t comm_id, abi::NetCommConfig* config, abi::Logger logfn,
                 abi::NetProfilerCallback prof, int nccl_version);
abi::Result devices(int* ndev);
abi::Result get_properties_v11(int dev, abi::NetPropertiesV11* props);
abi::Result get_properties_v12(int dev, abi::NetPropertiesV12* props);
abi::Result listen(void* ctx, int dev, void* handle, void** listen_comm);
abi::Result connect(void* ctx, int dev, void* handle, void** send_comm, abi::NetDeviceHandle** dev_comm);
abi::Result accept(void* listen_comm, void** recv_comm, abi::NetDeviceHandle** dev_comm);
abi::Result reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
abi::Result reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
abi::Result dereg_mr(void* comm, void* mhandle);
abi::Result isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
abi::Result irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                  void** request);
abi::Result iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
abi::Result test(void* request, int* done, int* sizes);
abi::Result close_send(void* send_comm);
abi::Result close_recv(void* recv_comm);
abi::Result close_listen(void* listen_comm);
abi::Result get_device_mr(void* comm, void* mhandle, void** dptr_mhandle);
abi::Result irecv_consumed(void* recv_comm, int n, void* request);
abi::Result make_vdevice_v11(int* d, abi::NetVDevicePropsV11* props);
abi::Result make_vdevice_v12(int* d, abi::NetVDevicePropsV12* props);
abi::Result finalize(void* ctx);
abi::Result set_net_attr(void* ctx, abi::NetAttr* attr);

// The delegate's optional slots (docs/nccl-notes.md §6.2: NCCL tests them for NULL), as loaded by
// the latest successful init; the exported tables mirror them (a NULL slot stays NULL).
struct OptionalSlots {
  bool iflush = false;  // NCCL calls it only to flush receives into GPU memory (src/transport/net.cc)
  bool reg_mr_dmabuf = false, get_device_mr = false, irecv_consumed = false, make_vdevice = false, set_net_attr = false;
};
OptionalSlots optional_slots();

// The identity scout writes into the last kHandleIdBytes of a listen handle.
constexpr uint32_t kHandleIdMagic = 0x31544353;  // "SCT1" little-endian
constexpr size_t kHandleIdBytes = 32;
constexpr size_t kHandleIdOffset = abi::kNetHandleBytes - kHandleIdBytes;
struct HandleId {
  uint32_t magic;       // kHandleIdMagic
  int32_t global_rank;  // the listener's global rank (-1 unknown)
  int32_t pid;
  uint32_t reserved;
  uint64_t nonce;      // random per listen: the link_id of both ends' link table entries
  uint64_t host_hash;  // FNV-1a 64 of the listener's host name (common/paths.h)
};
static_assert(sizeof(HandleId) == kHandleIdBytes);

}  // namespace scout::net
