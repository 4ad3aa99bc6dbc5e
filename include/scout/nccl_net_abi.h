// scout: our own declarations of NCCL's net plugin ABI, versions 11 (NCCL 2.28) and 12 (2.30).
//
// Written from docs/nccl-notes.md §6.1-6.3 and §6.6 (names, types, slot order and offsets of
// NCCL v2.28.9-1 src/include/plugin/net/net_v11.h and v2.30.7-1 src/include/plugin/net/net_v12.h).
// No NVIDIA header text is used. Every size and offset is checked by a static_assert at the end
// of this file, so a layout mistake fails the build.
//
// v12 differs from v11 only in its property and virtual-device structs (8 devices per virtual
// NIC instead of 4; railId and planeId after maxMultiRequestSize); the 22 function slots have
// the same order and the same parameters, with the v12 struct types.
//
// Platform: x86-64 / aarch64 Linux, LP64 (enums int-sized, pointers and size_t 8 bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "scout/nccl_profiler_abi.h"

namespace scout::abi {

// Most bytes of a listen handle (NCCL_NET_HANDLE_MAXSIZE, docs/nccl-notes.md §6.2).
constexpr size_t kNetHandleBytes = 128;
// Requests a net plugin must support in flight per comm (NCCL_NET_MAX_REQUESTS).
constexpr int kNetMaxRequests = 32;

// regMr memory types (NCCL_PTR_*, docs/nccl-notes.md §6.2).
constexpr int kPtrHost = 0x1;
constexpr int kPtrCuda = 0x2;
constexpr int kPtrDmaBuf = 0x4;

// netDeviceType values.
constexpr int kNetDeviceHost = 0;
constexpr int kNetDeviceUnpack = 1;

// The profiler callback NCCL hands to a net plugin's init (docs/nccl-notes.md §2.1, §6.3):
// (eHandle, type 0 start / 1 stop / 2 update / 3 update-and-stop, pHandle, pluginId, extData).
using NetProfilerCallback = Result (*)(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData);

// Symbols NCCL looks up with dlsym (2.28.9: v11 first; 2.30.x: v12 first).
inline constexpr const char* kNetSymbolV11 = "ncclNetPlugin_v11";
inline constexpr const char* kNetSymbolV12 = "ncclNetPlugin_v12";

// ncclNetCommConfig_v11_t / _v12_t: { trafficClass } (-1: undefined).
struct NetCommConfig {
  int trafficClass;
};

// Virtual NIC properties: the physical devices it fuses.
struct NetVDevicePropsV11 {
  int ndevs;
  int devs[4];
};
struct NetVDevicePropsV12 {
  int ndevs;
  int devs[8];
};

// Device properties (getProperties), v11: 112 bytes.
struct NetPropertiesV11 {
  char* name;                 // 0
  char* pciPath;              // 8   path in /sys (drives NCCL's topology)
  uint64_t guid;              // 16
  int ptrSupport;             // 24  kPtr* bits
  int regIsGlobal;            // 28
  int forceFlush;             // 32
  int speed;                  // 36  Mbps
  int port;                   // 40
  float latency;              // 44
  int maxComms;               // 48
  int maxRecvs;               // 52  grouped receives per irecv
  int netDeviceType;          // 56  kNetDevice*
  int netDeviceVersion;       // 60
  NetVDevicePropsV11 vProps;  // 64 (20 bytes)
  size_t maxP2pBytes;         // 88
  size_t maxCollBytes;        // 96
  int maxMultiRequestSize;    // 104
};

// Device properties, v12: 128 bytes.
struct NetPropertiesV12 {
  char* name;                 // 0
  char* pciPath;              // 8
  uint64_t guid;              // 16
  int ptrSupport;             // 24
  int regIsGlobal;            // 28
  int forceFlush;             // 32
  int speed;                  // 36
  int port;                   // 40
  float latency;              // 44
  int maxComms;               // 48
  int maxRecvs;               // 52
  int netDeviceType;          // 56
  int netDeviceVersion;       // 60
  NetVDevicePropsV12 vProps;  // 64 (36 bytes)
  size_t maxP2pBytes;         // 104
  size_t maxCollBytes;        // 112
  int maxMultiRequestSize;    // 120
  int16_t railId;             // 124
  int16_t planeId;            // 126
};

// Device offload handle (connect/accept's devComm), 32 bytes in v11 and v12.
struct NetDeviceHandle {
  int netDeviceType;       // 0
  int netDeviceVersion;    // 4
  void* handle;            // 8
  size_t size;             // 16
  int needsProxyProgress;  // 24
};

// setNetAttr's argument (44 bytes): concurrency hints for send and receive comms, then the
// operation, algorithm and protocol.
struct NetCommAttr {
  int32_t maxConcurrentPeers, minConcurrentPeers, maxFlowsPerPeer, minFlowsPerPeer;
};
struct NetAttr {
  NetCommAttr sendCommAttr;
  NetCommAttr recvCommAttr;
  uint32_t op, algo, proto;
};

// The function table: 22 slots (name + 21 functions), 176 bytes. Props/VProps are the version's
// property structs. Slots marked "may be NULL" are tested for NULL by NCCL (docs/nccl-notes.md §6.2).
template <class Props, class VProps>
struct NetTable {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, NetCommConfig* config, Logger logFunction,
                 NetProfilerCallback profFunction);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, Props* props);
  Result (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  Result (*connect)(void* ctx, int dev, void* handle, void** sendComm, NetDeviceHandle** sendDevComm);
  Result (*accept)(void* listenComm, void** recvComm, NetDeviceHandle** recvDevComm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                        void** mhandle);  // may be NULL
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  Result (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                  void** request);
  Result (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
  Result (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);  // may be NULL
  Result (*irecvConsumed)(void* recvComm, int n, void* request);          // may be NULL
  Result (*makeVDevice)(int* d, VProps* props);                           // may be NULL
  Result (*finalize)(void* ctx);
  Result (*setNetAttr)(void* ctx, NetAttr* netAttr);  // may be NULL
};
using NetV11 = NetTable<NetPropertiesV11, NetVDevicePropsV11>;
using NetV12 = NetTable<NetPropertiesV12, NetVDevicePropsV12>;

// ---- layout checks (docs/nccl-notes.md §6.2, §6.6)
static_assert(sizeof(NetCommConfig) == 4);
static_assert(sizeof(NetVDevicePropsV11) == 20 && sizeof(NetVDevicePropsV12) == 36);
static_assert(sizeof(NetPropertiesV11) == 112);
static_assert(offsetof(NetPropertiesV11, guid) == 16 && offsetof(NetPropertiesV11, ptrSupport) == 24);
static_assert(offsetof(NetPropertiesV11, speed) == 36 && offsetof(NetPropertiesV11, latency) == 44);
static_assert(offsetof(NetPropertiesV11, maxRecvs) == 52 && offsetof(NetPropertiesV11, netDeviceType) == 56);
static_assert(offsetof(NetPropertiesV11, vProps) == 64 && offsetof(NetPropertiesV11, maxP2pBytes) == 88);
static_assert(offsetof(NetPropertiesV11, maxCollBytes) == 96 && offsetof(NetPropertiesV11, maxMultiRequestSize) == 104);
static_assert(sizeof(NetPropertiesV12) == 128);
static_assert(offsetof(NetPropertiesV12, vProps) == 64 && offsetof(NetPropertiesV12, maxP2pBytes) == 104);
static_assert(offsetof(NetPropertiesV12, maxCollBytes) == 112 &&
              offsetof(NetPropertiesV12, maxMultiRequestSize) == 120);
static_assert(offsetof(NetPropertiesV12, railId) == 124 && offsetof(NetPropertiesV12, planeId) == 126);
static_assert(sizeof(NetDeviceHandle) == 32 && offsetof(NetDeviceHandle, needsProxyProgress) == 24);
static_assert(sizeof(NetCommAttr) == 16 && sizeof(NetAttr) == 44);
static_assert(sizeof(NetV11) == 176 && sizeof(NetV12) == 176);
static_assert(offsetof(NetV11, init) == 8 && offsetof(NetV11, getProperties) == 24);
static_assert(offsetof(NetV11, regMrDmaBuf) == 64 && offsetof(NetV11, isend) == 80);
static_assert(offsetof(NetV11, test) == 104 && offsetof(NetV11, getDeviceMr) == 136);
static_assert(offsetof(NetV11, makeVDevice) == 152 && offsetof(NetV11, finalize) == 160);
static_assert(offsetof(NetV11, setNetAttr) == 168);

}  // namespace scout::abi
