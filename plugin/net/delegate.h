// The external net plugin the net half wraps: opened from SCOUT_NET_DELEGATE, never from
// NCCL_NET_PLUGIN (which names scout itself), with the newest table it exports
// (docs/net-plugin.md, "The delegate"; docs/nccl-notes.md §6.5).
#pragma once

#include <string>

#include "scout/nccl_net_abi.h"

namespace scout::net {

// The delegate's functions, copied from its table. The property-dependent slots exist in the
// delegate's own version only (the other one is null); every other slot has the same type in
// v11 and v12. Optional slots are null when the delegate's are.
struct Delegate {
  void* dl = nullptr;     // dlopen handle
  int version = 0;        // 11 or 12: the table found
  std::string opened;     // the name dlopen succeeded with
  const char* name = "";  // the table's name
  abi::Result (*init)(void**, uint64_t, abi::NetCommConfig*, abi::Logger, abi::NetProfilerCallback) = nullptr;
  abi::Result (*devices)(int*) = nullptr;
  abi::Result (*get_properties_v11)(int, abi::NetPropertiesV11*) = nullptr;
  abi::Result (*get_properties_v12)(int, abi::NetPropertiesV12*) = nullptr;
  abi::Result (*listen)(void*, int, void*, void**) = nullptr;
  abi::Result (*connect)(void*, int, void*, void**, abi::NetDeviceHandle**) = nullptr;
  abi::Result (*accept)(void*, void**, abi::NetDeviceHandle**) = nullptr;
  abi::Result (*reg_mr)(void*, void*, size_t, int, void**) = nullptr;
  abi::Result (*reg_mr_dmabuf)(void*, void*, size_t, int, uint64_t, int, void**) = nullptr;
  abi::Result (*dereg_mr)(void*, void*) = nullptr;
  abi::Result (*isend)(void*, void*, size_t, int, void*, void*, void**) = nullptr;
  abi::Result (*irecv)(void*, int, void**, size_t*, int*, void**, void**, void**) = nullptr;
  abi::Result (*iflush)(void*, int, void**, int*, void**, void**) = nullptr;
  abi::Result (*test)(void*, int*, int*) = nullptr;
  abi::Result (*close_send)(void*) = nullptr;
  abi::Result (*close_recv)(void*) = nullptr;
  abi::Result (*close_listen)(void*) = nullptr;
  abi::Result (*get_device_mr)(void*, void*, void**) = nullptr;
  abi::Result (*irecv_consumed)(void*, int, void*) = nullptr;
  abi::Result (*make_vdevice_v11)(int*, abi::NetVDevicePropsV11*) = nullptr;
  abi::Result (*make_vdevice_v12)(int*, abi::NetVDevicePropsV12*) = nullptr;
  abi::Result (*finalize)(void*) = nullptr;
  abi::Result (*set_net_attr)(void*, abi::NetAttr*) = nullptr;

  bool has_make_vdevice() const { return make_vdevice_v11 != nullptr || make_vdevice_v12 != nullptr; }
};

// Opens the delegate named by `spec` (the value of SCOUT_NET_DELEGATE) as NCCL opens a net
// plugin name (docs/nccl-notes.md §6.1): dlopen(spec, RTLD_NOW | RTLD_LOCAL); if that fails and
// `spec` has no '/' and is not "lib*.so", dlopen("libnccl-net-<spec>.so"). Then looks up
// ncclNetPlugin_v12, then ncclNetPlugin_v11. Fails (false, one line in *error, nothing left
// open) when `spec` is empty, nothing opens, the library has neither table, a mandatory slot
// is null (every slot NCCL calls on each connection; iflush and the newer slots are optional,
// docs/net-plugin.md "The delegate"), or the library is scout itself (its table lies in this very library).
bool open_delegate(const std::string& spec, Delegate* out, std::string* error);

// dlclose()s the delegate and clears `d`.
void close_delegate(Delegate* d);

// Property conversion between versions (docs/net-plugin.md, "Versions"): every common field is
// copied; v11 -> v12 sets railId and planeId to -1 (undefined); v12 -> v11 keeps the first 4
// virtual devices (returns false when it had more, so the caller can log it).
void props_v11_to_v12(const abi::NetPropertiesV11& in, abi::NetPropertiesV12* out);
bool props_v12_to_v11(const abi::NetPropertiesV12& in, abi::NetPropertiesV11* out);
void vprops_v11_to_v12(const abi::NetVDevicePropsV11& in, abi::NetVDevicePropsV12* out);
bool vprops_v12_to_v11(const abi::NetVDevicePropsV12& in, abi::NetVDevicePropsV11* out);

}  // namespace scout::net
