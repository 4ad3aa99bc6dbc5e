// scout: our own declarations of NCCL's profiler plugin ABI, versions 4, 5 and 6.
//
// Written from docs/nccl-notes.md §2.1-2.6 (names, types, values and offsets measured on NCCL
// v2.28.9-1 and v2.30.7-1; NCCL sources src/include/plugin/profiler/profiler_v{4,5,6}.h).
// No NVIDIA header text is used. Every size and offset in those tables is checked by a
// static_assert at the end of this file, so a layout mistake fails the build.
//
// Platform: x86-64 / aarch64 Linux, LP64 (bool 1 byte, pid_t 4 bytes, enums int-sized).
#pragma once

#include <sys/types.h>
#include <cstddef>
#include <cstdint>

namespace scout::abi {

// ncclResult_t values (docs/nccl-notes.md §2.1). Enums crossing the ABI are plain ints.
using Result = int;
constexpr Result kSuccess = 0;
constexpr Result kUnhandledCudaError = 1;
constexpr Result kSystemError = 2;
constexpr Result kInternalError = 3;
constexpr Result kInvalidArgument = 4;
constexpr Result kInvalidUsage = 5;
constexpr Result kRemoteError = 6;
constexpr Result kInProgress = 7;

// ncclDebugLogLevel values (docs/nccl-notes.md §2.1).
constexpr int kLogNone = 0;
constexpr int kLogVersion = 1;
constexpr int kLogWarn = 2;
constexpr int kLogInfo = 3;
constexpr int kLogAbort = 4;
constexpr int kLogTrace = 5;

// Debug subsystem flag for profiler messages (NCCL_DEBUG_SUBSYS=PROFILE, docs/nccl-notes.md §2.1).
constexpr unsigned long kSubsysInit = 0x1;
constexpr unsigned long kSubsysProfile = 0x4000;

// The logger NCCL hands to init: (level, subsystem flags, file-or-function, line, printf fmt, ...).
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event type bits, used both in the activation mask and in descriptor.type (docs/nccl-notes.md §2.2).
constexpr uint64_t kEvGroup = 1u << 0;          // legacy group: one per kernel plan
constexpr uint64_t kEvColl = 1u << 1;           // collective task, enqueue time
constexpr uint64_t kEvP2p = 1u << 2;            // point-to-point task
constexpr uint64_t kEvProxyOp = 1u << 3;        // proxy op per channel/peer
constexpr uint64_t kEvProxyStep = 1u << 4;      // one network transfer step
constexpr uint64_t kEvProxyCtrl = 1u << 5;      // proxy thread idle/active/sleep/append
constexpr uint64_t kEvKernelCh = 1u << 6;       // kernel work on one channel (GPU timers since v4)
constexpr uint64_t kEvNetPlugin = 1u << 7;      // net-plugin defined events
constexpr uint64_t kEvGroupApi = 1u << 8;       // outermost group API (v5+)
constexpr uint64_t kEvCollApi = 1u << 9;        // collective API call (v5+)
constexpr uint64_t kEvP2pApi = 1u << 10;        // send/recv API call (v5+)
constexpr uint64_t kEvKernelLaunch = 1u << 11;  // kernel launch call (v5+)
constexpr uint64_t kEvCeColl = 1u << 12;        // copy-engine collective (v6)
constexpr uint64_t kEvCeSync = 1u << 13;        // copy-engine sync (v6)
constexpr uint64_t kEvCeBatch = 1u << 14;       // copy-engine batch memop (v6)

// Event states passed to recordEventState (docs/nccl-notes.md §2.3). Only the ones NCCL 2.28/2.30 emit.
constexpr int kStateProxyStepSendGPUWait = 8;
constexpr int kStateProxyStepSendWait = 9;
constexpr int kStateProxyStepRecvWait = 10;
constexpr int kStateProxyStepRecvFlushWait = 11;
constexpr int kStateProxyStepRecvGPUWait = 12;
constexpr int kStateProxyCtrlIdle = 13;
constexpr int kStateProxyCtrlActive = 14;
constexpr int kStateProxyCtrlSleep = 15;
constexpr int kStateProxyCtrlWakeup = 16;
constexpr int kStateProxyCtrlAppend = 17;
constexpr int kStateProxyCtrlAppendEnd = 18;
constexpr int kStateProxyOpInProgress = 19;
constexpr int kStateProxyStepSendPeerWait = 20;
constexpr int kStateNetPluginUpdate = 21;
constexpr int kStateKernelChStop = 22;       // args.kernelCh.pTimer = GPU stop time; stop follows
constexpr int kStateGroupStartApiStop = 23;  // GroupApi; args pointer is NULL
constexpr int kStateGroupEndApiStart = 24;   // GroupApi; args pointer is NULL

// ---------------------------------------------------------------------------------------------
// Descriptor union members. Field names follow docs/nccl-notes.md §2.5; types are ours.

struct CollV4 {        // v4 coll and the first part of v5/v6 coll (offsets 24..96)
  uint64_t seqNumber;  // comm->seqNumber[func] before increment; 0-based (docs/nccl-notes.md §3.6)
  const char* func;    // "AllReduce", ... static strings in libnccl
  const void* sendBuff;
  void* recvBuff;
  size_t count;  // task count (AllGather/Broadcast: bytes with datatype ncclInt8)
  int root;
  const char* datatype;  // "ncclFloat32", ...
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;   // "RING", "TREE", ...
  const char* proto;  // "LL", "LL128", "SIMPLE"
};

struct P2pV4 {
  const char* func;  // "Send" or "Recv"
  void* buff;
  const char* datatype;
  size_t count;
  int peer;           // peer rank inside the communicator
  uint8_t nChannels;  // NOT filled by NCCL's v4 adapter (uninitialised)
};

struct ProxyOpDescr {
  pid_t pid;  // originating process; != getpid() means PXN (foreign pointers)
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};

struct ProxyStepDescr {
  int step;
};

struct KernelChDescr {
  uint8_t channelId;  // NCCL's real channel index 0..63
  uint64_t pTimer;    // GPU start time: raw %globaltimer ns
};

struct NetPluginDescr {
  int64_t id;  // bits 0-15 struct version, 16-31 type (IB 1<<16, socket 2<<16)
  void* data;
};

struct GroupApiDescr {
  bool graphCaptured;
  int groupDepth;  // 1: implicit group of a single call; >1: user ncclGroupStart
};

struct CollApiDescr {
  const char* func;
  size_t count;          // the user's count
  const char* datatype;  // the user's datatype
  int root;
  void* stream;  // cudaStream_t given by the user
  bool graphCaptured;
};

struct P2pApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  void* stream;
  bool graphCaptured;
};

struct KernelLaunchDescr {
  void* stream;  // the stream the plan's kernel is launched on
};

struct CollV5 {  // v4 coll plus parentGroup; parentObj is the CollApi handle
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;  // legacy Group handle
};

struct P2pV5 {  // v4 p2p plus parentGroup; parentObj is the P2pApi handle
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* parentGroup;
};

struct CeCollDescr {  // v6 only
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  const char* syncStrategy;  // "MC" or "UC"
  bool intraBatchSync;
  uint32_t batchSize;
  uint32_t numBatches;
  uint32_t ceSeqNum;
  void* stream;
};

struct CeSyncDescr {
  bool isComplete;
  int nRanks;
};

struct CeBatchDescr {
  int numOps;
  size_t totalBytes;
  bool useIntraSync;
};

// ---------------------------------------------------------------------------------------------
// Descriptors.

struct DescrV4 {  // 104 bytes
  uint8_t type;   // one kEv* bit
  void* parentObj;
  int rank;
  union {
    CollV4 coll;
    P2pV4 p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

struct DescrV5 {  // 112 bytes
  uint64_t type;  // widened in v5
  void* parentObj;
  int rank;
  union {
    GroupApiDescr groupApi;
    CollApiDescr collApi;
    P2pApiDescr p2pApi;
    KernelLaunchDescr kernelLaunch;
    CollV5 coll;
    P2pV5 p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

struct DescrV6 {  // 112 bytes; all v5 members at the same offsets
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    GroupApiDescr groupApi;
    CollApiDescr collApi;
    P2pApiDescr p2pApi;
    KernelLaunchDescr kernelLaunch;
    CollV5 coll;
    P2pV5 p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
    CeCollDescr ceColl;
    CeSyncDescr ceCollSync;
    CeBatchDescr ceCollBatch;
  };
};

// State arguments (8 bytes; every member at offset 0). Same type for v4, v5 and v6.
union StateArgs {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

// ---------------------------------------------------------------------------------------------
// Function tables: name + 5 function pointers, 48 bytes, identical slot layout (docs/nccl-notes.md §2.4).

struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes, int nranks,
                 int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, DescrV4* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgs* eStateArgs);
  Result (*finalize)(void* context);
};

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes, int nranks,
                 int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, DescrV5* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgs* eStateArgs);
  Result (*finalize)(void* context);
};

struct ProfilerV6 {
  const char* name;
  Result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes, int nranks,
                 int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, DescrV6* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, StateArgs* eStateArgs);
  Result (*finalize)(void* context);
};

// Symbol names NCCL looks up with dlsym (docs/nccl-notes.md §1.2).
constexpr const char* kSymbolV4 = "ncclProfiler_v4";
constexpr const char* kSymbolV5 = "ncclProfiler_v5";
constexpr const char* kSymbolV6 = "ncclProfiler_v6";

// ---------------------------------------------------------------------------------------------
// Layout checks: every size and offset of docs/nccl-notes.md §2.4 and §2.5.

static_assert(sizeof(bool) == 1 && sizeof(pid_t) == 4 && sizeof(void*) == 8, "LP64 expected");

static_assert(sizeof(ProfilerV4) == 48 && sizeof(ProfilerV5) == 48 && sizeof(ProfilerV6) == 48);
static_assert(offsetof(ProfilerV5, name) == 0);
static_assert(offsetof(ProfilerV5, init) == 8);
static_assert(offsetof(ProfilerV5, startEvent) == 16);
static_assert(offsetof(ProfilerV5, stopEvent) == 24);
static_assert(offsetof(ProfilerV5, recordEventState) == 32);
static_assert(offsetof(ProfilerV5, finalize) == 40);
static_assert(offsetof(ProfilerV4, finalize) == 40 && offsetof(ProfilerV6, finalize) == 40);

// v4 descriptor: 104 bytes, align 8.
static_assert(sizeof(DescrV4) == 104 && alignof(DescrV4) == 8);
static_assert(offsetof(DescrV4, type) == 0);
static_assert(offsetof(DescrV4, parentObj) == 8);
static_assert(offsetof(DescrV4, rank) == 16);
static_assert(offsetof(DescrV4, coll) == 24);
static_assert(offsetof(DescrV4, coll.seqNumber) == 24);
static_assert(offsetof(DescrV4, coll.func) == 32);
static_assert(offsetof(DescrV4, coll.sendBuff) == 40);
static_assert(offsetof(DescrV4, coll.recvBuff) == 48);
static_assert(offsetof(DescrV4, coll.count) == 56);
static_assert(offsetof(DescrV4, coll.root) == 64);
static_assert(offsetof(DescrV4, coll.datatype) == 72);
static_assert(offsetof(DescrV4, coll.nChannels) == 80);
static_assert(offsetof(DescrV4, coll.nWarps) == 81);
static_assert(offsetof(DescrV4, coll.algo) == 88);
static_assert(offsetof(DescrV4, coll.proto) == 96);
static_assert(offsetof(DescrV4, p2p.func) == 24);
static_assert(offsetof(DescrV4, p2p.buff) == 32);
static_assert(offsetof(DescrV4, p2p.datatype) == 40);
static_assert(offsetof(DescrV4, p2p.count) == 48);
static_assert(offsetof(DescrV4, p2p.peer) == 56);
static_assert(offsetof(DescrV4, p2p.nChannels) == 60);
static_assert(offsetof(DescrV4, proxyOp.pid) == 24);
static_assert(offsetof(DescrV4, proxyOp.channelId) == 28);
static_assert(offsetof(DescrV4, proxyOp.peer) == 32);
static_assert(offsetof(DescrV4, proxyOp.nSteps) == 36);
static_assert(offsetof(DescrV4, proxyOp.chunkSize) == 40);
static_assert(offsetof(DescrV4, proxyOp.isSend) == 44);
static_assert(offsetof(DescrV4, proxyStep.step) == 24);
static_assert(offsetof(DescrV4, kernelCh.channelId) == 24);
static_assert(offsetof(DescrV4, kernelCh.pTimer) == 32);
static_assert(offsetof(DescrV4, netPlugin.id) == 24);
static_assert(offsetof(DescrV4, netPlugin.data) == 32);

// v5 descriptor: 112 bytes, align 8.
static_assert(sizeof(DescrV5) == 112 && alignof(DescrV5) == 8);
static_assert(offsetof(DescrV5, type) == 0);
static_assert(offsetof(DescrV5, parentObj) == 8);
static_assert(offsetof(DescrV5, rank) == 16);
static_assert(offsetof(DescrV5, groupApi.graphCaptured) == 24);
static_assert(offsetof(DescrV5, groupApi.groupDepth) == 28);
static_assert(offsetof(DescrV5, collApi.func) == 24);
static_assert(offsetof(DescrV5, collApi.count) == 32);
static_assert(offsetof(DescrV5, collApi.datatype) == 40);
static_assert(offsetof(DescrV5, collApi.root) == 48);
static_assert(offsetof(DescrV5, collApi.stream) == 56);
static_assert(offsetof(DescrV5, collApi.graphCaptured) == 64);
static_assert(offsetof(DescrV5, p2pApi.func) == 24);
static_assert(offsetof(DescrV5, p2pApi.count) == 32);
static_assert(offsetof(DescrV5, p2pApi.datatype) == 40);
static_assert(offsetof(DescrV5, p2pApi.stream) == 48);
static_assert(offsetof(DescrV5, p2pApi.graphCaptured) == 56);
static_assert(offsetof(DescrV5, kernelLaunch.stream) == 24);
static_assert(offsetof(DescrV5, coll.seqNumber) == 24);
static_assert(offsetof(DescrV5, coll.func) == 32);
static_assert(offsetof(DescrV5, coll.sendBuff) == 40);
static_assert(offsetof(DescrV5, coll.recvBuff) == 48);
static_assert(offsetof(DescrV5, coll.count) == 56);
static_assert(offsetof(DescrV5, coll.root) == 64);
static_assert(offsetof(DescrV5, coll.datatype) == 72);
static_assert(offsetof(DescrV5, coll.nChannels) == 80);
static_assert(offsetof(DescrV5, coll.nWarps) == 81);
static_assert(offsetof(DescrV5, coll.algo) == 88);
static_assert(offsetof(DescrV5, coll.proto) == 96);
static_assert(offsetof(DescrV5, coll.parentGroup) == 104);
static_assert(offsetof(DescrV5, p2p.func) == 24);
static_assert(offsetof(DescrV5, p2p.buff) == 32);
static_assert(offsetof(DescrV5, p2p.datatype) == 40);
static_assert(offsetof(DescrV5, p2p.count) == 48);
static_assert(offsetof(DescrV5, p2p.peer) == 56);
static_assert(offsetof(DescrV5, p2p.nChannels) == 60);
static_assert(offsetof(DescrV5, p2p.parentGroup) == 64);
static_assert(offsetof(DescrV5, proxyOp.pid) == 24);
static_assert(offsetof(DescrV5, proxyOp.channelId) == 28);
static_assert(offsetof(DescrV5, proxyOp.peer) == 32);
static_assert(offsetof(DescrV5, proxyOp.nSteps) == 36);
static_assert(offsetof(DescrV5, proxyOp.chunkSize) == 40);
static_assert(offsetof(DescrV5, proxyOp.isSend) == 44);
static_assert(offsetof(DescrV5, proxyStep.step) == 24);
static_assert(offsetof(DescrV5, kernelCh.channelId) == 24);
static_assert(offsetof(DescrV5, kernelCh.pTimer) == 32);
static_assert(offsetof(DescrV5, netPlugin.id) == 24);
static_assert(offsetof(DescrV5, netPlugin.data) == 32);

// v6 descriptor: 112 bytes; the v5 members keep their offsets.
static_assert(sizeof(DescrV6) == 112 && alignof(DescrV6) == 8);
static_assert(offsetof(DescrV6, type) == 0 && offsetof(DescrV6, parentObj) == 8);
static_assert(offsetof(DescrV6, rank) == 16);
static_assert(offsetof(DescrV6, collApi.stream) == 56 && offsetof(DescrV6, collApi.graphCaptured) == 64);
static_assert(offsetof(DescrV6, kernelLaunch.stream) == 24);
static_assert(offsetof(DescrV6, coll.proto) == 96 && offsetof(DescrV6, coll.parentGroup) == 104);
static_assert(offsetof(DescrV6, p2p.parentGroup) == 64);
static_assert(offsetof(DescrV6, kernelCh.pTimer) == 32);
static_assert(offsetof(DescrV6, ceColl.seqNumber) == 24);
static_assert(offsetof(DescrV6, ceColl.func) == 32);
static_assert(offsetof(DescrV6, ceColl.sendBuff) == 40);
static_assert(offsetof(DescrV6, ceColl.recvBuff) == 48);
static_assert(offsetof(DescrV6, ceColl.count) == 56);
static_assert(offsetof(DescrV6, ceColl.root) == 64);
static_assert(offsetof(DescrV6, ceColl.datatype) == 72);
static_assert(offsetof(DescrV6, ceColl.syncStrategy) == 80);
static_assert(offsetof(DescrV6, ceColl.intraBatchSync) == 88);
static_assert(offsetof(DescrV6, ceColl.batchSize) == 92);
static_assert(offsetof(DescrV6, ceColl.numBatches) == 96);
static_assert(offsetof(DescrV6, ceColl.ceSeqNum) == 100);
static_assert(offsetof(DescrV6, ceColl.stream) == 104);
static_assert(offsetof(DescrV6, ceCollSync.isComplete) == 24);
static_assert(offsetof(DescrV6, ceCollSync.nRanks) == 28);
static_assert(offsetof(DescrV6, ceCollBatch.numOps) == 24);
static_assert(offsetof(DescrV6, ceCollBatch.totalBytes) == 32);
static_assert(offsetof(DescrV6, ceCollBatch.useIntraSync) == 40);

static_assert(sizeof(StateArgs) == 8);

}  // namespace scout::abi
