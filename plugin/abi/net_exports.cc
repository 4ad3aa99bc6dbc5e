// The net plugin half's ABI boundary: the ncclNetPlugin_v11 (NCCL 2.28) and ncclNetPlugin_v12
// (2.30) tables NCCL looks up with dlsym (docs/nccl-notes.md §6.1), named "scout". Thin on
// purpose: each entry point is noexcept, catches everything (one WARN for an escaped exception,
// then kInternalError: unlike the profiler, a net plugin's results are checked by NCCL) and
// forwards to plugin/net/net.h, which the tests call too.
//
// NULL slots are mirrored: after the first successful init the optional slots of both tables
// (regMrDmaBuf, getDeviceMr, irecvConsumed, makeVDevice, setNetAttr) are set to NULL where the
// delegate's are NULL, so NCCL's NULL tests see the delegate's choice (docs/nccl-notes.md §6.2).
#include "plugin/core/log.h"
#include "plugin/net/net.h"
#include "scout/nccl_net_abi.h"

namespace {

using namespace scout;
using core::log::Problem;

abi::Result caught(const char* where) noexcept {
  try {
    core::log::net_warn_once(Problem::kNetException, "internal error in %s (exception caught)", where);
  } catch (...) {}
  return abi::kInternalError;
}

#define SCOUT_NET_TRY(where, call) \
  try {                            \
    return call;                   \
  } catch (...) { return caught(where); }

template <int V>
abi::Result init(void** ctx, uint64_t id, abi::NetCommConfig* cfg, abi::Logger log,
                 abi::NetProfilerCallback prof) noexcept;

abi::Result devices(int* n) noexcept {SCOUT_NET_TRY("devices", net::devices(n))} abi::Result
    props11(int dev, abi::NetPropertiesV11* p) noexcept {
        SCOUT_NET_TRY("getProperties", net::get_properties_v11(dev, p))} abi::Result
    props12(int dev, abi::NetPropertiesV12* p) noexcept {
        SCOUT_NET_TRY("getProperties", net::get_properties_v12(dev, p))} abi::Result
    listen(void* ctx, int dev, void* h,
           void** lc) noexcept {SCOUT_NET_TRY("listen", net::listen(ctx, dev, h, lc))} abi::Result
    connect(void* ctx, int dev, void* h, void** sc, abi::NetDeviceHandle** dc) noexcept {
        SCOUT_NET_TRY("connect", net::connect(ctx, dev, h, sc, dc))} abi::Result
    accept(void* lc, void** rc,
           abi::NetDeviceHandle** dc) noexcept {SCOUT_NET_TRY("accept", net::accept(lc, rc, dc))} abi::Result
    reg_mr(void* c, void* data, size_t size, int type,
           void** mh) noexcept {SCOUT_NET_TRY("regMr", net::reg_mr(c, data, size, type, mh))} abi::Result
    reg_mr_dmabuf(void* c, void* data, size_t size, int type, uint64_t off, int fd, void** mh) noexcept {
        SCOUT_NET_TRY("regMrDmaBuf", net::reg_mr_dmabuf(c, data, size, type, off, fd, mh))} abi::Result
    dereg_mr(void* c, void* mh) noexcept {SCOUT_NET_TRY("deregMr", net::dereg_mr(c, mh))} abi::Result
    isend(void* sc, void* data, size_t size, int tag, void* mh, void* ph,
          void** req) noexcept {SCOUT_NET_TRY("isend", net::isend(sc, data, size, tag, mh, ph, req))} abi::Result
    irecv(void* rc, int n, void** data, size_t* sizes, int* tags, void** mh, void** ph,
          void** req) noexcept {SCOUT_NET_TRY("irecv", net::irecv(rc, n, data, sizes, tags, mh, ph, req))} abi::Result
    iflush(void* rc, int n, void** data, int* sizes, void** mh,
           void** req) noexcept {SCOUT_NET_TRY("iflush", net::iflush(rc, n, data, sizes, mh, req))} abi::Result
    test(void* req, int* done, int* sizes) noexcept {SCOUT_NET_TRY("test", net::test(req, done, sizes))} abi::Result
    close_send(void* sc) noexcept {SCOUT_NET_TRY("closeSend", net::close_send(sc))} abi::Result
    close_recv(void* rc) noexcept {SCOUT_NET_TRY("closeRecv", net::close_recv(rc))} abi::Result
    close_listen(void* lc) noexcept {SCOUT_NET_TRY("closeListen", net::close_listen(lc))} abi::Result
    get_device_mr(void* c, void* mh,
                  void** dptr) noexcept {SCOUT_NET_TRY("getDeviceMr", net::get_device_mr(c, mh, dptr))} abi::Result
    irecv_consumed(void* rc, int n,
                   void* req) noexcept {SCOUT_NET_TRY("irecvConsumed", net::irecv_consumed(rc, n, req))} abi::Result
    make_vdevice11(int* d, abi::NetVDevicePropsV11* p) noexcept {
        SCOUT_NET_TRY("makeVDevice", net::make_vdevice_v11(d, p))} abi::Result
    make_vdevice12(int* d, abi::NetVDevicePropsV12* p) noexcept {
        SCOUT_NET_TRY("makeVDevice", net::make_vdevice_v12(d, p))} abi::Result
    finalize(void* ctx) noexcept {SCOUT_NET_TRY("finalize", net::finalize(ctx))} abi::Result
    set_net_attr(void* ctx, abi::NetAttr* a) noexcept {
  SCOUT_NET_TRY("setNetAttr", net::set_net_attr(ctx, a))
}

#undef SCOUT_NET_TRY

}  // namespace

// Non-const globals with default visibility: dlsym must find them, and init rewrites their
// optional slots (docs/nccl-notes.md §1.2 explains the linkage rule for the profiler tables).
extern "C" {
__attribute__((visibility("default"))) scout::abi::NetV11 ncclNetPlugin_v11 = {
    "scout",       init<11>,      devices,        props11,        listen,   connect,     accept,     reg_mr,
    reg_mr_dmabuf, dereg_mr,      isend,          irecv,          iflush,   test,        close_send, close_recv,
    close_listen,  get_device_mr, irecv_consumed, make_vdevice11, finalize, set_net_attr};
__attribute__((visibility("default"))) scout::abi::NetV12 ncclNetPlugin_v12 = {
    "scout",       init<12>,      devices,        props12,        listen,   connect,     accept,     reg_mr,
    reg_mr_dmabuf, dereg_mr,      isend,          irecv,          iflush,   test,        close_send, close_recv,
    close_listen,  get_device_mr, irecv_consumed, make_vdevice12, finalize, set_net_attr};
}

namespace {

template <class T, class MakeV>
void mirror(T& t, const net::OptionalSlots& s, MakeV make_v) {
  t.iflush = s.iflush ? iflush : nullptr;
  t.regMrDmaBuf = s.reg_mr_dmabuf ? reg_mr_dmabuf : nullptr;
  t.getDeviceMr = s.get_device_mr ? get_device_mr : nullptr;
  t.irecvConsumed = s.irecv_consumed ? irecv_consumed : nullptr;
  t.makeVDevice = s.make_vdevice ? make_v : nullptr;
  t.setNetAttr = s.set_net_attr ? set_net_attr : nullptr;
}

template <int V>
abi::Result init(void** ctx, uint64_t id, abi::NetCommConfig* cfg, abi::Logger log,
                 abi::NetProfilerCallback prof) noexcept {
  try {
    abi::Result r = net::init(ctx, id, cfg, log, prof, V);
    if (r == abi::kSuccess) {
      net::OptionalSlots s = net::optional_slots();
      mirror(ncclNetPlugin_v11, s, make_vdevice11);
      mirror(ncclNetPlugin_v12, s, make_vdevice12);
    }
    return r;
  } catch (...) {
    if (ctx != nullptr) *ctx = nullptr;
    return caught("init");
  }
}

}  // namespace
