// Opening the delegate net plugin (delegate.h).
#include "plugin/net/delegate.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "plugin/core/library.h"

namespace scout::net {
namespace {

template <class Table>
void copy_common(const Table* t, Delegate* d) {
  d->name = t->name != nullptr ? t->name : "";
  d->init = t->init;
  d->devices = t->devices;
  d->listen = t->listen;
  d->connect = t->connect;
  d->accept = t->accept;
  d->reg_mr = t->regMr;
  d->reg_mr_dmabuf = t->regMrDmaBuf;
  d->dereg_mr = t->deregMr;
  d->isend = t->isend;
  d->irecv = t->irecv;
  d->iflush = t->iflush;
  d->test = t->test;
  d->close_send = t->closeSend;
  d->close_recv = t->closeRecv;
  d->close_listen = t->closeListen;
  d->get_device_mr = t->getDeviceMr;
  d->irecv_consumed = t->irecvConsumed;
  d->finalize = t->finalize;
  d->set_net_attr = t->setNetAttr;
}

}  // namespace

bool open_delegate(const std::string& spec, Delegate* out, std::string* error) {
  *out = Delegate{};
  if (spec.empty()) {
    *error = "SCOUT_NET_DELEGATE is not set";
    return false;
  }
  std::string err;
  std::string opened;
  void* h = core::open_library(spec, "libnccl-net-", &opened, &err);
  if (h == nullptr) {
    *error = "cannot open the delegate '" + spec + "': " + err;
    return false;
  }
  int version = 12;
  void* sym = ::dlsym(h, abi::kNetSymbolV12);
  if (sym == nullptr) {
    version = 11;
    sym = ::dlsym(h, abi::kNetSymbolV11);
  }
  if (sym == nullptr) {
    ::dlclose(h);
    *error = "the delegate " + opened + " exports neither ncclNetPlugin_v12 nor ncclNetPlugin_v11";
    return false;
  }
  // dlopen of scout's own path returns scout's handle: its table then lies in this library.
  uintptr_t self = core::library_of(reinterpret_cast<const void*>(&open_delegate));
  if (self != 0 && core::library_of(sym) == self) {
    ::dlclose(h);
    *error = "the delegate " + opened + " is scout itself (set SCOUT_NET_DELEGATE to another net plugin)";
    return false;
  }
  Delegate d;
  d.dl = h;
  d.version = version;
  d.opened = opened;
  if (version == 12) {
    const auto* t = static_cast<const abi::NetV12*>(sym);
    copy_common(t, &d);
    d.get_properties_v12 = t->getProperties;
    d.make_vdevice_v12 = t->makeVDevice;
  } else {
    const auto* t = static_cast<const abi::NetV11*>(sym);
    copy_common(t, &d);
    d.get_properties_v11 = t->getProperties;
    d.make_vdevice_v11 = t->makeVDevice;
  }
  bool props = d.get_properties_v11 != nullptr || d.get_properties_v12 != nullptr;
  if (d.init == nullptr || d.devices == nullptr || !props || d.listen == nullptr || d.connect == nullptr ||
      d.accept == nullptr || d.reg_mr == nullptr || d.dereg_mr == nullptr || d.isend == nullptr || d.irecv == nullptr ||
      d.test == nullptr || d.close_send == nullptr || d.close_recv == nullptr || d.close_listen == nullptr) {
    ::dlclose(h);
    *error = "the delegate " + opened + " has a null mandatory function in its v" + std::to_string(version) + " table";
    return false;
  }
  *out = std::move(d);
  return true;
}

void close_delegate(Delegate* d) {
  if (d->dl != nullptr) ::dlclose(d->dl);
  *d = Delegate{};
}

namespace {
template <class A, class B>
void copy_fields(const A& in, B* out) {
  out->name = in.name;
  out->pciPath = in.pciPath;
  out->guid = in.guid;
  out->ptrSupport = in.ptrSupport;
  out->regIsGlobal = in.regIsGlobal;
  out->forceFlush = in.forceFlush;
  out->speed = in.speed;
  out->port = in.port;
  out->latency = in.latency;
  out->maxComms = in.maxComms;
  out->maxRecvs = in.maxRecvs;
  out->netDeviceType = in.netDeviceType;
  out->netDeviceVersion = in.netDeviceVersion;
  out->maxP2pBytes = in.maxP2pBytes;
  out->maxCollBytes = in.maxCollBytes;
  out->maxMultiRequestSize = in.maxMultiRequestSize;
}
}  // namespace

void vprops_v11_to_v12(const abi::NetVDevicePropsV11& in, abi::NetVDevicePropsV12* out) {
  std::memset(out, 0, sizeof(*out));
  out->ndevs = std::clamp(in.ndevs, 0, 4);
  for (int i = 0; i < out->ndevs; ++i) out->devs[i] = in.devs[i];
}

bool vprops_v12_to_v11(const abi::NetVDevicePropsV12& in, abi::NetVDevicePropsV11* out) {
  std::memset(out, 0, sizeof(*out));
  int n = std::clamp(in.ndevs, 0, 8);
  out->ndevs = std::min(n, 4);
  for (int i = 0; i < out->ndevs; ++i) out->devs[i] = in.devs[i];
  return n <= 4;
}

void props_v11_to_v12(const abi::NetPropertiesV11& in, abi::NetPropertiesV12* out) {
  std::memset(out, 0, sizeof(*out));
  copy_fields(in, out);
  vprops_v11_to_v12(in.vProps, &out->vProps);
  out->railId = -1;
  out->planeId = -1;
}

bool props_v12_to_v11(const abi::NetPropertiesV12& in, abi::NetPropertiesV11* out) {
  std::memset(out, 0, sizeof(*out));
  copy_fields(in, out);
  return vprops_v12_to_v11(in.vProps, &out->vProps);
}

}  // namespace scout::net
