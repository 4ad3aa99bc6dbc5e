// Our own minimal declarations of the CUDA driver API entry points scout uses, resolved at run
// time with dlsym (no link-time CUDA dependency, no NVIDIA header text). Types, values and
// versioned symbol names are facts of the public driver ABI (CUDA 12/13, LP64):
// handles are pointers, CUdeviceptr is a 64-bit integer, enums are int, CUresult 0 = success.
#pragma once

#include <cstddef>
#include <cstdint>

namespace scout::fp::gpu::cu {

using Result = int;          // CUresult
using Device = int;          // CUdevice
using Context = void*;       // CUcontext
using Module = void*;        // CUmodule
using Function = void*;      // CUfunction
using Stream = void*;        // CUstream
using Event = void*;         // CUevent
using DevicePtr = uint64_t;  // CUdeviceptr
struct Uuid {
  unsigned char bytes[16];
};  // CUuuid

constexpr Result kSuccess = 0;
constexpr Result kErrorNotReady = 600;

constexpr int kAttrMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr unsigned kMemHostAllocPortable = 0x01;   // CU_MEMHOSTALLOC_PORTABLE
constexpr unsigned kMemHostAllocDeviceMap = 0x02;  // CU_MEMHOSTALLOC_DEVICEMAP
constexpr int kCaptureStatusNone = 0;              // CU_STREAM_CAPTURE_STATUS_NONE
constexpr int kCaptureModeRelaxed = 2;             // CU_STREAM_CAPTURE_MODE_RELAXED
constexpr unsigned kStreamNonBlocking = 0x1;       // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDefault = 0x0;

// The function table; each entry named after the driver symbol it is resolved from.
struct Api {
  Result (*Init)(unsigned flags);                                           // cuInit
  Result (*DriverGetVersion)(int* version);                                 // cuDriverGetVersion
  Result (*GetErrorString)(Result error, const char** str);                 // cuGetErrorString
  Result (*DeviceGet)(Device* dev, int ordinal);                            // cuDeviceGet
  Result (*DeviceGetCount)(int* count);                                     // cuDeviceGetCount
  Result (*DeviceGetAttribute)(int* value, int attrib, Device dev);         // cuDeviceGetAttribute
  Result (*DeviceGetUuid)(Uuid* uuid, Device dev);                          // cuDeviceGetUuid_v2
  Result (*DevicePrimaryCtxRetain)(Context* ctx, Device dev);               // cuDevicePrimaryCtxRetain
  Result (*CtxGetCurrent)(Context* ctx);                                    // cuCtxGetCurrent
  Result (*CtxSetCurrent)(Context ctx);                                     // cuCtxSetCurrent
  Result (*CtxGetDevice)(Device* dev);                                      // cuCtxGetDevice
  Result (*CtxSynchronize)();                                               // cuCtxSynchronize
  Result (*ModuleLoadData)(Module* mod, const void* image);                 // cuModuleLoadData
  Result (*ModuleGetFunction)(Function* fn, Module mod, const char* name);  // cuModuleGetFunction
  Result (*LaunchKernel)(Function fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shared_bytes, Stream stream, void** params,
                         void** extra);                                         // cuLaunchKernel
  Result (*MemHostAlloc)(void** p, size_t bytes, unsigned flags);               // cuMemHostAlloc
  Result (*MemHostGetDevicePointer)(DevicePtr* dev, void* p, unsigned flags);   // cuMemHostGetDevicePointer_v2
  Result (*MemFreeHost)(void* p);                                               // cuMemFreeHost
  Result (*MemAlloc)(DevicePtr* dev, size_t bytes);                             // cuMemAlloc_v2
  Result (*MemFree)(DevicePtr dev);                                             // cuMemFree_v2
  Result (*MemsetD8)(DevicePtr dev, unsigned char value, size_t n);             // cuMemsetD8_v2
  Result (*MemcpyHtoD)(DevicePtr dst, const void* src, size_t n);               // cuMemcpyHtoD_v2
  Result (*MemcpyDtoH)(void* dst, DevicePtr src, size_t n);                     // cuMemcpyDtoH_v2
  Result (*MemcpyDtoDAsync)(DevicePtr dst, DevicePtr src, size_t n, Stream s);  // cuMemcpyDtoDAsync_v2
  Result (*StreamIsCapturing)(Stream stream, int* status);                      // cuStreamIsCapturing
  Result (*ThreadExchangeStreamCaptureMode)(int* mode);                         // cuThreadExchangeStreamCaptureMode
  Result (*StreamCreate)(Stream* stream, unsigned flags);                       // cuStreamCreate
  Result (*StreamSynchronize)(Stream stream);                                   // cuStreamSynchronize
  Result (*EventCreate)(Event* ev, unsigned flags);                             // cuEventCreate
  Result (*EventRecord)(Event ev, Stream stream);                               // cuEventRecord
  Result (*EventSynchronize)(Event ev);                                         // cuEventSynchronize
  Result (*EventElapsedTime)(float* ms, Event start, Event end);                // cuEventElapsedTime
  Result (*EventDestroy)(Event ev);                                             // cuEventDestroy_v2
};

// Loads libcuda.so.1 and fills `api` (every entry non-null) and calls cuInit(0). Returns false
// and sets *why on any failure; the library stays loaded for the process lifetime once it
// succeeded (the driver does not support being unloaded while contexts exist).
bool load_driver(Api* api, const char** why);

// Text of a CUresult ("CUDA_ERROR_..." description), or "unknown CUDA error".
const char* error_text(const Api& api, Result r);

}  // namespace scout::fp::gpu::cu
