// Our own declarations of the cuBLASLt, NCCL and CUPTI entry points scout-replay uses, plus the
// few driver calls the plugin's table (plugin/gpu/cuda_api.h) lacks, all resolved at run time
// with dlopen/dlsym: scout-replay builds and runs without any of them. Types and values are facts
// of the public ABIs (LP64; CUDA 13.0, cuBLAS 13.1, NCCL 2.28.9, CUPTI 13.0): handles are
// pointers, enums are int, status 0 = success. Sources are named at each value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "plugin/gpu/cuda_api.h"

namespace scout::replay::cudalib {

namespace cu = scout::fp::gpu::cu;

// ---- driver calls beyond plugin/gpu/cuda_api.h
struct DriverExtra {
  cu::Result (*MemGetInfo)(size_t* free_bytes, size_t* total_bytes);                    // cuMemGetInfo_v2
  cu::Result (*DeviceGetName)(char* name, int len, cu::Device dev);                     // cuDeviceGetName
  cu::Result (*CtxGetStreamPriorityRange)(int* least, int* greatest);                   // cuCtxGetStreamPriorityRange
  cu::Result (*StreamCreateWithPriority)(cu::Stream* s, unsigned flags, int priority);  // cuStreamCreateWithPriority
  cu::Result (*StreamDestroy)(cu::Stream s);                                            // cuStreamDestroy_v2
  cu::Result (*StreamQuery)(cu::Stream s);                // cuStreamQuery: 0 done, kNotReady still running
  cu::Result (*DevicePrimaryCtxRelease)(cu::Device dev);  // cuDevicePrimaryCtxRelease_v2
};
constexpr int kNotReady = 600;  // CUDA_ERROR_NOT_READY

// ---- cuBLASLt (cublasLt.h of cuBLAS 13.1)
using LtHandle = void*;
using LtDesc = void*;
using LtLayout = void*;
using LtPref = void*;
// cublasLtMatmulAlgo_t: 64 opaque bytes (8 x uint64).
struct LtAlgo {
  uint64_t data[8];
};
// cublasLtMatmulHeuristicResult_t: algo, workspaceSize, state, wavesCount, reserved[4] (96 bytes).
struct LtHeuristic {
  LtAlgo algo;
  size_t workspace_size;
  int state;
  float waves_count;
  int reserved[4];
};
static_assert(sizeof(LtHeuristic) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes");
constexpr int kComputeType32F = 68;        // CUBLAS_COMPUTE_32F
constexpr int kDataR32F = 0;               // CUDA_R_32F
constexpr int kDataR16F = 2;               // CUDA_R_16F
constexpr int kDataR16BF = 14;             // CUDA_R_16BF
constexpr int kPrefMaxWorkspaceBytes = 1;  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64)

struct Blas {
  int (*Create)(LtHandle* h);                                            // cublasLtCreate
  int (*Destroy)(LtHandle h);                                            // cublasLtDestroy
  size_t (*GetVersion)();                                                // cublasLtGetVersion
  int (*MatmulDescCreate)(LtDesc* d, int compute_type, int scale_type);  // cublasLtMatmulDescCreate
  int (*MatmulDescDestroy)(LtDesc d);                                    // cublasLtMatmulDescDestroy
  int (*MatrixLayoutCreate)(LtLayout* l, int type, uint64_t rows, uint64_t cols,
                            int64_t ld);     // cublasLtMatrixLayoutCreate
  int (*MatrixLayoutDestroy)(LtLayout l);    // cublasLtMatrixLayoutDestroy
  int (*MatmulPreferenceCreate)(LtPref* p);  // cublasLtMatmulPreferenceCreate
  int (*MatmulPreferenceDestroy)(LtPref p);  // cublasLtMatmulPreferenceDestroy
  int (*MatmulPreferenceSetAttribute)(LtPref p, int attr, const void* buf, size_t size);  // ...SetAttribute
  int (*MatmulAlgoGetHeuristic)(LtHandle h, LtDesc d, LtLayout a, LtLayout b, LtLayout c, LtLayout dd, LtPref p,
                                int requested, LtHeuristic* results, int* returned);  // cublasLtMatmulAlgoGetHeuristic
  int (*Matmul)(LtHandle h, LtDesc d, const void* alpha, const void* a, LtLayout al, const void* b, LtLayout bl,
                const void* beta, const void* c, LtLayout cl, void* dd, LtLayout dl, const LtAlgo* algo,
                void* workspace, size_t workspace_bytes, cu::Stream s);  // cublasLtMatmul
  const char* (*GetStatusString)(int status);  // cublasLtGetStatusString (optional: null when absent)
};

// ---- NCCL (nccl.h of NCCL 2.28.9)
using NcclComm = void*;
struct NcclUniqueId {
  char internal[128];  // NCCL_UNIQUE_ID_BYTES
};
constexpr int kNcclFloat32 = 7;     // ncclFloat32
constexpr int kNcclSum = 0;         // ncclSum
constexpr int kNcclSuccess = 0;     // ncclSuccess
constexpr int kNcclInProgress = 7;  // ncclInProgress (a non-blocking call still running)
// ncclConfig_t of NCCL 2.28 (ncclConfig_v22800): `size`, `magic` and `version` as
// NCCL_CONFIG_INITIALIZER sets them; every other field "undefined" (INT_MIN / null: NCCL's
// default) except `blocking`.
struct NcclConfig {
  size_t size = sizeof(NcclConfig);
  unsigned int magic = 0xcafebeef;
  unsigned int version = 22809;  // NCCL_VERSION(2, 28, 9)
  int blocking = kUndefInt;
  int cga_cluster_size = kUndefInt, min_ctas = kUndefInt, max_ctas = kUndefInt;
  const char* net_name = nullptr;
  int split_share = kUndefInt, traffic_class = kUndefInt;
  const char* comm_name = nullptr;
  int collnet_enable = kUndefInt, cta_policy = kUndefInt, shrink_share = kUndefInt, nvls_ctas = kUndefInt;
  int n_channels_per_net_peer = kUndefInt, nvlink_centric_sched = kUndefInt;
  static constexpr int kUndefInt = -2147483647 - 1;  // NCCL_CONFIG_UNDEF_INT (INT_MIN)
};
struct Nccl {
  int (*GetVersion)(int* version);                                    // ncclGetVersion
  int (*CommInitAll)(NcclComm* comms, int ndev, const int* devlist);  // ncclCommInitAll
  int (*CommDestroy)(NcclComm c);                                     // ncclCommDestroy
  int (*CommAbort)(NcclComm c);                                       // ncclCommAbort
  int (*GroupStart)();                                                // ncclGroupStart
  int (*GroupEnd)();                                                  // ncclGroupEnd
  int (*AllReduce)(const void* send, void* recv, size_t count, int dtype, int op, NcclComm c, cu::Stream s);
  int (*Send)(const void* buf, size_t count, int dtype, int peer, NcclComm c, cu::Stream s);  // ncclSend
  int (*Recv)(void* buf, size_t count, int dtype, int peer, NcclComm c, cu::Stream s);        // ncclRecv
  int (*GetUniqueId)(NcclUniqueId* id);                                                       // ncclGetUniqueId
  int (*CommInitRankConfig)(NcclComm* c, int nranks, NcclUniqueId id, int rank, NcclConfig* config);
  int (*CommGetAsyncError)(NcclComm c, int* async_error);  // ncclCommGetAsyncError
  const char* (*GetErrorString)(int result);               // ncclGetErrorString (optional: null when absent)
};

// ---- CUPTI activity API (cupti_activity.h of CUPTI 13.0)
constexpr int kActivityConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (never KERNEL = 3)
constexpr int kCuptiMaxLimitReached = 12;      // CUPTI_ERROR_MAX_LIMIT_REACHED (end of buffer)
constexpr uint32_t kFlushForced = 1;           // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
// Offsets in the kernel record (CUpti_ActivityKernel10): kind (uint32) at 0, start and end
// (uint64 ns, CLOCK_REALTIME on Linux) at 16 and 24, deviceId (uint32) at 40.
constexpr size_t kKernelRecStart = 16, kKernelRecEnd = 24, kKernelRecDevice = 40;
using BufferRequested = void (*)(uint8_t** buffer, size_t* size, size_t* max_records);
using BufferCompleted = void (*)(void* ctx, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid_size);
struct Cupti {
  int (*GetVersion)(uint32_t* version);                                         // cuptiGetVersion
  int (*ActivityEnable)(int kind);                                              // cuptiActivityEnable
  int (*ActivityDisable)(int kind);                                             // cuptiActivityDisable
  int (*ActivityRegisterCallbacks)(BufferRequested req, BufferCompleted done);  // cuptiActivityRegisterCallbacks
  int (*ActivityFlushAll)(uint32_t flag);                                       // cuptiActivityFlushAll
  int (*ActivityGetNextRecord)(uint8_t* buffer, size_t valid, void** record);   // cuptiActivityGetNextRecord
  int (*GetResultString)(int result, const char** text);  // cuptiGetResultString (optional: null when absent)
};

// Every library scout-replay may use; a library that failed to load leaves its have_* false and
// says why in `missing` (its recipes are then skipped with that reason).
struct Libs {
  cu::Api cu{};
  DriverExtra drv{};
  bool have_cu = false;
  Blas blas{};
  bool have_blas = false;
  Nccl nccl{};
  bool have_nccl = false;
  Cupti cupti{};
  bool have_cupti = false;
  std::string missing;  // "libcublasLt.so.13 not found; ..."
};

// dlopens libcuda.so.1, libcublasLt.so.13 (else .so), libnccl.so.2 and libcupti.so.13 (else .so).
void load_libs(Libs* out);

}  // namespace scout::replay::cudalib
