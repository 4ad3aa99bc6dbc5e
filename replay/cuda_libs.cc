#include "replay/cuda_libs.h"

#include <dlfcn.h>

#include <initializer_list>

namespace scout::replay::cudalib {
namespace {

struct Entry {
  void** slot;
  const char* name;
};

void* open_first(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

// Resolves every entry; false (and the library closed) if one is missing.
bool resolve(void* lib, std::initializer_list<Entry> entries, const char* what, std::string* missing) {
  for (const Entry& e : entries) {
    *e.slot = dlsym(lib, e.name);
    if (!*e.slot) {
      *missing += std::string(missing->empty() ? "" : "; ") + what + " lacks " + e.name;
      dlclose(lib);
      return false;
    }
  }
  return true;
}

template <class F>
Entry E(F** slot, const char* name) {
  return {reinterpret_cast<void**>(slot), name};
}

// An entry that may be missing (an error text): left null then. `lib` stays open (resolve kept it).
template <class F>
void optional(void* lib, F** slot, const char* name) {
  *reinterpret_cast<void**>(slot) = dlsym(lib, name);
}

}  // namespace

void load_libs(Libs* L) {
  const char* why = nullptr;
  L->have_cu = cu::load_driver(&L->cu, &why);
  if (!L->have_cu) L->missing = why ? why : "libcuda.so.1 not usable";
  if (L->have_cu) {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    L->have_cu =
        lib && resolve(lib,
                       {E(&L->drv.MemGetInfo, "cuMemGetInfo_v2"), E(&L->drv.DeviceGetName, "cuDeviceGetName"),
                        E(&L->drv.CtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange"),
                        E(&L->drv.StreamCreateWithPriority, "cuStreamCreateWithPriority"),
                        E(&L->drv.StreamDestroy, "cuStreamDestroy_v2"), E(&L->drv.StreamQuery, "cuStreamQuery"),
                        E(&L->drv.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")},
                       "libcuda.so.1", &L->missing);
  }
  if (void* lib = open_first({"libcublasLt.so.13", "libcublasLt.so"})) {
    L->have_blas = resolve(
        lib,
        {E(&L->blas.Create, "cublasLtCreate"), E(&L->blas.Destroy, "cublasLtDestroy"),
         E(&L->blas.GetVersion, "cublasLtGetVersion"), E(&L->blas.MatmulDescCreate, "cublasLtMatmulDescCreate"),
         E(&L->blas.MatmulDescDestroy, "cublasLtMatmulDescDestroy"),
         E(&L->blas.MatrixLayoutCreate, "cublasLtMatrixLayoutCreate"),
         E(&L->blas.MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy"),
         E(&L->blas.MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate"),
         E(&L->blas.MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy"),
         E(&L->blas.MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute"),
         E(&L->blas.MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic"), E(&L->blas.Matmul, "cublasLtMatmul")},
        "libcublasLt", &L->missing);
    if (L->have_blas) optional(lib, &L->blas.GetStatusString, "cublasLtGetStatusString");
  } else {
    L->missing += std::string(L->missing.empty() ? "" : "; ") + "libcublasLt.so.13 not found";
  }
  if (void* lib = open_first({"libnccl.so.2", "libnccl.so"})) {
    L->have_nccl =
        resolve(lib,
                {E(&L->nccl.GetVersion, "ncclGetVersion"), E(&L->nccl.CommInitAll, "ncclCommInitAll"),
                 E(&L->nccl.CommDestroy, "ncclCommDestroy"), E(&L->nccl.CommAbort, "ncclCommAbort"),
                 E(&L->nccl.GroupStart, "ncclGroupStart"), E(&L->nccl.GroupEnd, "ncclGroupEnd"),
                 E(&L->nccl.AllReduce, "ncclAllReduce"), E(&L->nccl.Send, "ncclSend"), E(&L->nccl.Recv, "ncclRecv"),
                 E(&L->nccl.GetUniqueId, "ncclGetUniqueId"), E(&L->nccl.CommInitRankConfig, "ncclCommInitRankConfig"),
                 E(&L->nccl.CommGetAsyncError, "ncclCommGetAsyncError")},
                "libnccl", &L->missing);
    if (L->have_nccl) optional(lib, &L->nccl.GetErrorString, "ncclGetErrorString");
  } else {
    L->missing += std::string(L->missing.empty() ? "" : "; ") + "libnccl.so.2 not found";
  }
  if (void* lib = open_first({"libcupti.so.13", "libcupti.so"})) {
    L->have_cupti =
        resolve(lib,
                {E(&L->cupti.GetVersion, "cuptiGetVersion"), E(&L->cupti.ActivityEnable, "cuptiActivityEnable"),
                 E(&L->cupti.ActivityDisable, "cuptiActivityDisable"),
                 E(&L->cupti.ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks"),
                 E(&L->cupti.ActivityFlushAll, "cuptiActivityFlushAll"),
                 E(&L->cupti.ActivityGetNextRecord, "cuptiActivityGetNextRecord")},
                "libcupti", &L->missing);
    if (L->have_cupti) optional(lib, &L->cupti.GetResultString, "cuptiGetResultString");
  } else {
    L->missing += std::string(L->missing.empty() ? "" : "; ") + "libcupti.so.13 not found";
  }
}

}  // namespace scout::replay::cudalib
