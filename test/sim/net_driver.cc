// NCCL's side of the net plugin ABI (net_driver.h).
#include "test/sim/net_driver.h"

#include <dlfcn.h>
#include <strings.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace scout::sim {
namespace {

using Clock = std::chrono::steady_clock;

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

Clock::time_point deadline(double s) { return Clock::now() + std::chrono::microseconds(int64_t(s * 1e6)); }

// Between polls of a call that is not ready yet: yield, then sleep briefly once it takes long
// (the emulated processes share the host's cores).
void backoff(int* spins) {
  if (++*spins < 64) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

LoadedNet load_net_plugin(const char* env_value) {
  LoadedNet n;
  if (env_value == nullptr || env_value[0] == '\0') {
    n.error = "NCCL_NET_PLUGIN is not set";
    return n;
  }
  std::string name = env_value;
  name = name.substr(0, name.find(','));  // the first entry of a list
  if (::strcasecmp(name.c_str(), "none") == 0) {
    n.error = "disabled";
    return n;
  }
  void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string opened = name;
  if (h == nullptr && name.find('/') == std::string::npos && !(name.rfind("lib", 0) == 0 && ends_with(name, ".so"))) {
    opened = "libnccl-net-" + name + ".so";
    h = ::dlopen(opened.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (h == nullptr) {
    const char* e = ::dlerror();
    n.error = std::string("could not open net plugin: ") + (e != nullptr ? e : "dlopen failed");
    return n;
  }
  n.v11 = static_cast<const abi::NetV11*>(::dlsym(h, abi::kNetSymbolV11));
  n.v12 = static_cast<const abi::NetV12*>(::dlsym(h, abi::kNetSymbolV12));
  if (!n.ok()) {
    ::dlclose(h);
    n.error = "net plugin " + opened + " has no ncclNetPlugin_v11";
    return n;
  }
  n.handle = h;
  n.opened = opened;
  return n;
}

void unload_net_plugin(LoadedNet* n) {
  if (n->handle != nullptr) ::dlclose(n->handle);
  *n = LoadedNet{};
}

abi::Result net_listen(const abi::NetV11* t, void* ctx, NetLink* l) {
  std::memset(l->handle, 0, sizeof(l->handle));
  return t->listen(ctx, 0, l->handle, &l->listen);
}

bool net_establish(const abi::NetV11* t, void* send_ctx, NetLink* l, bool do_send, bool do_recv, double timeout_s,
                   std::string* error) {
  unsigned char copy[abi::kNetHandleBytes];
  std::memcpy(copy, l->handle, sizeof(copy));  // the connecting side's copy (NCCL's bootstrap)
  auto end = deadline(timeout_s);
  int spins = 0;
  abi::NetDeviceHandle* dev = nullptr;
  while ((do_send && l->send == nullptr) || (do_recv && l->recv == nullptr)) {
    if (do_send && l->send == nullptr) {
      abi::Result r = t->connect(send_ctx, 0, copy, &l->send, &dev);
      if (r != abi::kSuccess) {
        *error = "connect returned " + std::to_string(r);
        return false;
      }
    }
    if (do_recv && l->recv == nullptr) {
      abi::Result r = t->accept(l->listen, &l->recv, &dev);
      if (r != abi::kSuccess) {
        *error = "accept returned " + std::to_string(r);
        return false;
      }
    }
    if (Clock::now() > end) {
      *error = "connection not established in time";
      return false;
    }
    backoff(&spins);
  }
  return true;
}

abi::Result net_register(const abi::NetV11* t, NetLink* l, void* send_buf, size_t send_bytes, void* recv_buf,
                         size_t recv_bytes) {
  if (l->send != nullptr) {
    abi::Result r = t->regMr(l->send, send_buf, send_bytes, abi::kPtrHost, &l->smr);
    if (r != abi::kSuccess) return r;
  }
  if (l->recv != nullptr) return t->regMr(l->recv, recv_buf, recv_bytes, abi::kPtrHost, &l->rmr);
  return abi::kSuccess;
}

bool net_post_send(const abi::NetV11* t, NetLink* l, void* buf, size_t size, int tag, NetReq* r, double timeout_s) {
  *r = NetReq{};
  auto end = deadline(timeout_s);
  int spins = 0;
  for (;;) {
    // phandle: NCCL passes a pointer to its per-step event handle, never NULL (docs/nccl-notes.md §6.3).
    static thread_local void* phandle = nullptr;
    if (t->isend(l->send, buf, size, tag, l->smr, &phandle, &r->req) != abi::kSuccess) return false;
    if (r->req != nullptr) return true;
    if (Clock::now() > end) return false;
    backoff(&spins);
  }
}

bool net_post_recv(const abi::NetV11* t, NetLink* l, void* buf, size_t cap, int tag, NetReq* r, double timeout_s) {
  *r = NetReq{};
  auto end = deadline(timeout_s);
  int spins = 0;
  for (;;) {
    void* data[1] = {buf};
    size_t sizes[1] = {cap};
    int tags[1] = {tag};
    void* mh[1] = {l->rmr};
    static thread_local void* phandle = nullptr;
    void* ph[1] = {&phandle};
    if (t->irecv(l->recv, 1, data, sizes, tags, mh, ph, &r->req) != abi::kSuccess) return false;
    if (r->req != nullptr) return true;
    if (Clock::now() > end) return false;
    backoff(&spins);
  }
}

bool net_poll(const abi::NetV11* t, NetReq* r) {
  if (r->done || r->req == nullptr) return true;
  int size = 0;
  if (t->test(r->req, &r->done, &size) != abi::kSuccess) return false;
  if (r->done) {
    r->size = size;
    r->req = nullptr;
  }
  return true;
}

bool net_transfer(const abi::NetV11* t, NetLink* l, void* send_buf, size_t size, void* recv_buf, size_t cap, int tag,
                  double timeout_s, int* received, std::string* error) {
  NetReq rr, sr;
  if (!net_post_recv(t, l, recv_buf, cap, tag, &rr, timeout_s)) {
    *error = "irecv failed";
    return false;
  }
  if (!net_post_send(t, l, send_buf, size, tag, &sr, timeout_s)) {
    *error = "isend failed";
    return false;
  }
  auto end = deadline(timeout_s);
  int spins = 0;
  while (!rr.done || !sr.done) {
    if (!net_poll(t, &sr) || !net_poll(t, &rr)) {
      *error = "test failed";
      return false;
    }
    if (rr.done && sr.done) break;
    if (Clock::now() > end) {
      *error = "transfer not done in time";
      return false;
    }
    backoff(&spins);
  }
  *received = rr.size;
  return true;
}

void net_close(const abi::NetV11* t, NetLink* l) {
  if (l->smr != nullptr) t->deregMr(l->send, l->smr);
  if (l->rmr != nullptr) t->deregMr(l->recv, l->rmr);
  if (l->send != nullptr) t->closeSend(l->send);
  if (l->recv != nullptr) t->closeRecv(l->recv);
  if (l->listen != nullptr) t->closeListen(l->listen);
  *l = NetLink{};
}

}  // namespace scout::sim
