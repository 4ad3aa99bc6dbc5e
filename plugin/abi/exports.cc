// Placeholder ABI tables; replaced by the event-handling implementation.
#include "scout/nccl_profiler_abi.h"

using namespace scout::abi;

namespace {
Result init_v5(void** ctx, uint64_t, int*, const char*, int, int, int, Logger) { *ctx = nullptr; return kSuccess; }
Result init_v4(void** ctx, int*, const char*, uint64_t, int, int, int, Logger) { *ctx = nullptr; return kSuccess; }
Result start_v4(void*, void** h, DescrV4*) { *h = nullptr; return kSuccess; }
Result start_v5(void*, void** h, DescrV5*) { *h = nullptr; return kSuccess; }
Result start_v6(void*, void** h, DescrV6*) { *h = nullptr; return kSuccess; }
Result stop(void*) { return kSuccess; }
Result record(void*, int, StateArgs*) { return kSuccess; }
Result fini(void*) { return kSuccess; }
}  // namespace

extern "C" {
__attribute__((visibility("default"))) ProfilerV4 ncclProfiler_v4 = {"scout", init_v4, start_v4, stop, record, fini};
__attribute__((visibility("default"))) ProfilerV5 ncclProfiler_v5 = {"scout", init_v5, start_v5, stop, record, fini};
__attribute__((visibility("default"))) ProfilerV6 ncclProfiler_v6 = {"scout", init_v5, start_v6, stop, record, fini};
}
