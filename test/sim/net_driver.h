// NCCL 2.28.9's side of the net plugin ABI (docs/nccl-notes.md §6.1-6.2), for scout-sim and the
// tests: loads a net plugin as NCCL does and drives one v11 table the way NCCL's proxy thread
// drives it: non-blocking connect/accept retried until both comms exist, host memory registered
// with regMr, isend/irecv retried while they return a NULL request, test() polled until done,
// then deregMr and close. Nothing here blocks inside a plugin call; the loops poll.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "scout/nccl_net_abi.h"

namespace scout::sim {

// A loaded net plugin library.
struct LoadedNet {
  void* handle = nullptr;
  const abi::NetV11* v11 = nullptr;
  const abi::NetV12* v12 = nullptr;
  std::string opened;  // the name dlopen succeeded with
  std::string error;   // why nothing was loaded
  bool ok() const { return v11 != nullptr || v12 != nullptr; }
};

// Resolves the first entry of `env_value` (NCCL_NET_PLUGIN's value; nullptr or "" -> nothing: the
// sim has no libnccl-net.so) as NCCL does: "none" -> nothing; X -> dlopen(X), then, if X has no
// '/' and is not "lib*.so", dlopen("libnccl-net-X.so"). Looks up ncclNetPlugin_v11 and _v12.
LoadedNet load_net_plugin(const char* env_value);
void unload_net_plugin(LoadedNet* n);

// One connection between two contexts of one table: `send` was made by connect on the sending
// side, `recv` by accept on the listening side; `smr`/`rmr` register the buffers of each side.
struct NetLink {
  void* listen = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  void* smr = nullptr;
  void* rmr = nullptr;
  unsigned char handle[abi::kNetHandleBytes] = {};  // the listen handle, as exchanged
};

// Listening side of a connection: listen on `ctx` (device 0); the handle to exchange is in
// l->handle. Returns the plugin's result.
abi::Result net_listen(const abi::NetV11* t, void* ctx, NetLink* l);
// Calls connect (sending side, on its own copy of the handle) and accept (listening side) until
// both comms exist or `timeout_s` passes; either side may be null when driven by two processes
// (then only that side is progressed). False with *error on a plugin error or timeout.
bool net_establish(const abi::NetV11* t, void* send_ctx, NetLink* l, bool do_send, bool do_recv, double timeout_s,
                   std::string* error);
// regMr of host buffers on whichever comms exist.
abi::Result net_register(const abi::NetV11* t, NetLink* l, void* send_buf, size_t send_bytes, void* recv_buf,
                         size_t recv_bytes);

// One request in flight.
struct NetReq {
  void* req = nullptr;
  int done = 0;
  int size = 0;  // bytes test() reported
};
// Posts an isend/irecv, retrying a NULL request until `timeout_s` (false on error or timeout).
bool net_post_send(const abi::NetV11* t, NetLink* l, void* buf, size_t size, int tag, NetReq* r, double timeout_s);
bool net_post_recv(const abi::NetV11* t, NetLink* l, void* buf, size_t cap, int tag, NetReq* r, double timeout_s);
// test() once; false on a plugin error.
bool net_poll(const abi::NetV11* t, NetReq* r);
// A whole transfer within one process: irecv, isend, then both tested until done. *received is
// what the receive's test reported. False with *error on failure or timeout.
bool net_transfer(const abi::NetV11* t, NetLink* l, void* send_buf, size_t size, void* recv_buf, size_t cap, int tag,
                  double timeout_s, int* received, std::string* error);
// deregMr and close of whatever exists.
void net_close(const abi::NetV11* t, NetLink* l);

}  // namespace scout::sim
