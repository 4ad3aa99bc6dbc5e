// A small external net plugin for scout's tests: the delegate the net plugin half wraps
// (docs/net-plugin.md, "Tests"). Loopback only, host memory only, every call non-blocking as
// NCCL's proxy thread requires (docs/nccl-notes.md §6.2): connect and accept return a NULL comm
// until the connection is up, isend/irecv queue a request that test() progresses; messages of a
// connection complete in order. Between processes a connection is TCP on 127.0.0.1 (16-byte
// header: size, tag; an 8-byte hello after connect); when the listener is in the connecting
// process itself, it is an in-memory channel instead (a send is copied into the posted receive),
// which is what the per-transfer benchmark measures.
//
// Built twice (Makefile): libnccl-net-scouttest.so exports ncclNetPlugin_v12 and _v11 with every
// optional slot set; libnccl-net-scouttest-min.so (SCOUTTEST_MIN) exports only _v11 with the
// optional slots NULL, iflush included: a host-only plugin (ptrSupport NCCL_PTR_HOST) that NCCL
// itself runs, since it flushes only receives into GPU memory (src/transport/net.cc). Property values are distinctive so that a test can tell them from zeros.
// Counters of calls are readable through the exported function scouttest_net_counters (C ABI)
// so the tests can see what reached the delegate.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

#include "scout/nccl_net_abi.h"

namespace {

using namespace scout;

constexpr uint32_t kHandleMagic = 0x54534e53;  // "SNST"
constexpr uint64_t kHello = 0x6f6c6c6548534e53ull;
constexpr int kReqs = 64;

// What the listener writes into the handle (24 bytes, far from scout's last 32), and the
// connector's non-blocking progress, which NCCL lets a plugin keep in the handle it passes back.
struct Handle {
  uint32_t magic;
  uint16_t port;
  uint16_t stage;  // connector: 0 start, 1 connecting, 2 sending hello
  uint32_t addr;
  int32_t fd;
  uint32_t sent;
  uint32_t pad;
};
static_assert(sizeof(Handle) == 24);

struct Ctx {
  uint64_t comm_id;
  abi::NetAttr attr;
};

struct Comm;
struct Channel;

struct Listen {
  int fd = -1;
  uint16_t port = 0;
  int conn = -1;     // accepted, hello not yet read
  uint32_t got = 0;  // hello bytes read
  uint64_t hello = 0;
  Channel* pending = nullptr;  // an in-process connect waiting for accept
};

// Listens of this process by port (in-process connections; setup calls only).
std::mutex g_listen_mu;
std::map<uint16_t, Listen*> g_listens;

struct Mr {
  void* data;
  size_t size;
};

struct Comm;
struct Req {
  Comm* comm = nullptr;
  bool used = false, done = false, flush = false;
  char* buf = nullptr;
  size_t cap = 0;   // send: size; recv: posted size
  size_t size = 0;  // bytes of the message
  int tag = 0;
  char hdr[16] = {};
  size_t hdr_off = 0, data_off = 0;
};

struct Comm {
  int fd = -1;              // TCP
  Channel* chan = nullptr;  // in-process
  bool send = false;
  bool failed = false;
  Req reqs[kReqs];
  Req* queue[kReqs] = {};
  uint32_t head = 0, tail = 0;  // FIFO of posted transfers
};

// An in-process connection: the two ends' FIFOs, matched head to head under one mutex.
struct Channel {
  std::mutex mu;
  Comm* send = nullptr;
  Comm* recv = nullptr;
  int ends = 2;  // comms still open (the last close frees the channel)
};

// Copies sends into receives, head to head (caller holds ch->mu).
void match(Channel* ch) {
  Comm* s = ch->send;
  Comm* r = ch->recv;
  if (s == nullptr || r == nullptr) return;
  while (s->head != s->tail && r->head != r->tail) {
    Req* a = s->queue[s->head % kReqs];
    Req* b = r->queue[r->head % kReqs];
    if (a->size > b->cap) {
      s->failed = r->failed = true;
      return;
    }
    std::memcpy(b->buf, a->buf, a->size);
    b->size = a->size;
    a->done = b->done = true;
    s->head++;
    r->head++;
  }
}

std::atomic<uint64_t> g_counters[8];  // init, isend, irecv, test, regMr, closeSend, closeRecv, finalize
enum { kInit, kIsend, kIrecv, kTest, kRegMr, kCloseSend, kCloseRecv, kFinalize };
void count(int i) { g_counters[i].fetch_add(1, std::memory_order_relaxed); }

// Moves bytes for the request at the head of the queue; true when it is complete.
bool advance(Comm* c, Req* r) {
  if (r->flush) return true;
  if (c->send) {
    while (r->hdr_off < 16) {
      ssize_t n = ::send(c->fd, r->hdr + r->hdr_off, 16 - r->hdr_off, MSG_NOSIGNAL);
      if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
        c->failed = true;
        return false;
      }
      r->hdr_off += size_t(n);
    }
    while (r->data_off < r->size) {
      ssize_t n = ::send(c->fd, r->buf + r->data_off, r->size - r->data_off, MSG_NOSIGNAL);
      if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
        c->failed = true;
        return false;
      }
      r->data_off += size_t(n);
    }
    return true;
  }
  while (r->hdr_off < 16) {
    ssize_t n = ::recv(c->fd, r->hdr + r->hdr_off, 16 - r->hdr_off, 0);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
      c->failed = true;
      return false;
    }
    r->hdr_off += size_t(n);
    if (r->hdr_off == 16) {
      uint64_t sz;
      std::memcpy(&sz, r->hdr, 8);
      if (sz > r->cap) {  // the sender sent more than was posted: a protocol error
        c->failed = true;
        return false;
      }
      r->size = size_t(sz);
    }
  }
  while (r->data_off < r->size) {
    ssize_t n = ::recv(c->fd, r->buf + r->data_off, r->size - r->data_off, 0);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
      c->failed = true;
      return false;
    }
    r->data_off += size_t(n);
  }
  return true;
}

void progress(Comm* c) {
  if (c->chan != nullptr) {
    std::lock_guard<std::mutex> lk(c->chan->mu);
    match(c->chan);
    return;
  }
  while (c->head != c->tail && !c->failed) {
    Req* r = c->queue[c->head % kReqs];
    if (!advance(c, r)) return;
    r->done = true;
    c->head++;
  }
}

Req* new_req(Comm* c) {
  if (c->tail - c->head >= kReqs) return nullptr;
  for (Req& r : c->reqs) {
    if (!r.used) {
      r = Req{};
      r.comm = c;
      r.used = true;
      return &r;
    }
  }
  return nullptr;
}

abi::Result t_init(void** ctx, uint64_t comm_id, abi::NetCommConfig*, abi::Logger, abi::NetProfilerCallback) {
  count(kInit);
  Ctx* c = new (std::nothrow) Ctx{comm_id, {}};
  if (c == nullptr) return abi::kSystemError;
  *ctx = c;
  return abi::kSuccess;
}

abi::Result t_devices(int* ndev) {
  *ndev = 1;
  return abi::kSuccess;
}

template <class P>
void fill_props(int dev, P* p) {
  std::memset(p, 0, sizeof(*p));
#ifdef SCOUTTEST_MIN
  p->name = const_cast<char*>("scouttest-min0");
#else
  p->name = const_cast<char*>("scouttest0");
#endif
  p->pciPath = nullptr;  // a loopback interface has no PCI device
  p->guid = 0x5c0e7e570000ull + uint64_t(dev);
  p->ptrSupport = abi::kPtrHost;
  p->regIsGlobal = 0;
  p->forceFlush = 0;
  p->speed = 12345;
  p->port = 7;
  p->latency = 1.5f;
  p->maxComms = 4096;
  p->maxRecvs = 1;
  p->netDeviceType = abi::kNetDeviceHost;
  p->netDeviceVersion = 0;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = size_t(1) << 40;
  p->maxCollBytes = size_t(1) << 40;
  p->maxMultiRequestSize = 1;
}

abi::Result t_props11(int dev, abi::NetPropertiesV11* p) {
  if (dev != 0) return abi::kInvalidArgument;
  fill_props(dev, p);
  return abi::kSuccess;
}

#ifndef SCOUTTEST_MIN
abi::Result t_props12(int dev, abi::NetPropertiesV12* p) {
  if (dev != 0) return abi::kInvalidArgument;
  fill_props(dev, p);
  p->railId = 3;
  p->planeId = 1;
  return abi::kSuccess;
}
#endif

abi::Result t_listen(void*, int dev, void* handle, void** listen_comm) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return abi::kSystemError;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return abi::kSystemError;
  }
  Handle h{kHandleMagic, a.sin_port, 0, a.sin_addr.s_addr, -1, 0, 0};
  std::memcpy(handle, &h, sizeof(h));
  Listen* l = new (std::nothrow) Listen();
  if (l == nullptr) {
    ::close(fd);
    return abi::kSystemError;
  }
  l->fd = fd;
  l->port = a.sin_port;
  {
    std::lock_guard<std::mutex> lk(g_listen_mu);
    g_listens[l->port] = l;
  }
  *listen_comm = l;
  return abi::kSuccess;
}

abi::Result t_connect(void*, int, void* handle, void** send_comm, abi::NetDeviceHandle**) {
  *send_comm = nullptr;
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic) return abi::kInvalidArgument;
  if (h.stage == 0) {  // the listener in this process: an in-memory channel
    std::lock_guard<std::mutex> lk(g_listen_mu);
    auto it = g_listens.find(h.port);
    if (it != g_listens.end() && it->second->pending == nullptr) {
      Channel* ch = new (std::nothrow) Channel();
      Comm* c = new (std::nothrow) Comm();
      if (ch == nullptr || c == nullptr) {
        delete ch;
        delete c;
        return abi::kSystemError;
      }
      c->chan = ch;
      c->send = true;
      ch->send = c;
      it->second->pending = ch;
      h.stage = 3;
      std::memcpy(handle, &h, sizeof(h));
      *send_comm = c;
      return abi::kSuccess;
    }
  }
  if (h.stage == 0) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return abi::kSystemError;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = h.port;
    a.sin_addr.s_addr = h.addr;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 && errno != EINPROGRESS) {
      ::close(fd);
      return abi::kSystemError;
    }
    h.fd = fd;
    h.stage = 1;
  }
  if (h.stage == 1) {
    pollfd p{h.fd, POLLOUT, 0};
    if (::poll(&p, 1, 0) == 1) {
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(h.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        ::close(h.fd);
        return abi::kSystemError;
      }
      h.stage = 2;
    }
  }
  if (h.stage == 2) {
    while (h.sent < 8) {
      ssize_t n = ::send(h.fd, reinterpret_cast<const char*>(&kHello) + h.sent, 8 - h.sent, MSG_NOSIGNAL);
      if (n <= 0) {
        if (n < 0 && errno == EAGAIN) break;
        ::close(h.fd);
        return abi::kSystemError;
      }
      h.sent += uint32_t(n);
    }
    if (h.sent == 8) {
      Comm* c = new (std::nothrow) Comm();
      if (c == nullptr) return abi::kSystemError;
      c->fd = h.fd;
      c->send = true;
      h.stage = 3;
      *send_comm = c;
    }
  }
  std::memcpy(handle, &h, sizeof(h));
  return abi::kSuccess;
}

abi::Result t_accept(void* listen_comm, void** recv_comm, abi::NetDeviceHandle**) {
  *recv_comm = nullptr;
  Listen* l = static_cast<Listen*>(listen_comm);
  {
    std::lock_guard<std::mutex> lk(g_listen_mu);
    if (l->pending != nullptr) {
      Comm* c = new (std::nothrow) Comm();
      if (c == nullptr) return abi::kSystemError;
      c->chan = l->pending;
      {
        std::lock_guard<std::mutex> clk(c->chan->mu);
        c->chan->recv = c;
      }
      l->pending = nullptr;
      *recv_comm = c;
      return abi::kSuccess;
    }
  }
  if (l->conn < 0) {
    int fd = ::accept4(l->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return errno == EAGAIN || errno == EINTR ? abi::kSuccess : abi::kSystemError;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    l->conn = fd;
  }
  while (l->got < 8) {
    ssize_t n = ::recv(l->conn, reinterpret_cast<char*>(&l->hello) + l->got, 8 - l->got, 0);
    if (n <= 0) {
      if (n < 0 && errno == EAGAIN) return abi::kSuccess;
      return abi::kSystemError;
    }
    l->got += uint32_t(n);
  }
  if (l->hello != kHello) return abi::kRemoteError;
  Comm* c = new (std::nothrow) Comm();
  if (c == nullptr) return abi::kSystemError;
  c->fd = l->conn;
  l->conn = -1;
  l->got = 0;
  *recv_comm = c;
  return abi::kSuccess;
}

abi::Result t_reg_mr(void*, void* data, size_t size, int type, void** mhandle) {
  count(kRegMr);
  if (type != abi::kPtrHost) return abi::kInternalError;  // host memory only
  Mr* m = new (std::nothrow) Mr{data, size};
  if (m == nullptr) return abi::kSystemError;
  *mhandle = m;
  return abi::kSuccess;
}

abi::Result t_dereg_mr(void*, void* mhandle) {
  delete static_cast<Mr*>(mhandle);
  return abi::kSuccess;
}

abi::Result t_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void*, void** request) {
  count(kIsend);
  Comm* c = static_cast<Comm*>(send_comm);
  *request = nullptr;
  if (mhandle == nullptr || c->failed) return abi::kInternalError;
  Req* r = new_req(c);
  if (r == nullptr) return abi::kSuccess;  // try again later
  r->buf = static_cast<char*>(data);
  r->size = size;
  r->tag = tag;
  uint64_t sz = size;
  int64_t t = tag;
  std::memcpy(r->hdr, &sz, 8);
  std::memcpy(r->hdr + 8, &t, 8);
  if (c->chan != nullptr) {
    std::lock_guard<std::mutex> lk(c->chan->mu);
    c->queue[c->tail++ % kReqs] = r;
    match(c->chan);
  } else {
    c->queue[c->tail++ % kReqs] = r;
    progress(c);
  }
  *request = r;
  return abi::kSuccess;
}

abi::Result t_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**,
                    void** request) {
  count(kIrecv);
  Comm* c = static_cast<Comm*>(recv_comm);
  *request = nullptr;
  if (n != 1 || mhandles == nullptr || mhandles[0] == nullptr || c->failed) return abi::kInternalError;
  Req* r = new_req(c);
  if (r == nullptr) return abi::kSuccess;
  r->buf = static_cast<char*>(data[0]);
  r->cap = sizes[0];
  r->tag = tags != nullptr ? tags[0] : 0;
  if (c->chan != nullptr) {
    std::lock_guard<std::mutex> lk(c->chan->mu);
    c->queue[c->tail++ % kReqs] = r;
    match(c->chan);
  } else {
    c->queue[c->tail++ % kReqs] = r;
  }
  *request = r;
  return abi::kSuccess;
}

#ifndef SCOUTTEST_MIN
abi::Result t_iflush(void* recv_comm, int, void**, int*, void**, void** request) {
  Comm* c = static_cast<Comm*>(recv_comm);
  Req* r = new_req(c);
  *request = nullptr;
  if (r == nullptr) return abi::kSuccess;
  r->flush = true;
  r->done = true;  // host memory: nothing to flush
  *request = r;
  return abi::kSuccess;
}
#endif

abi::Result t_test(void* request, int* done, int* sizes) {
  count(kTest);
  Req* r = static_cast<Req*>(request);
  Comm* c = r->comm;
  bool d = false;
  if (c->chan != nullptr) {  // the other end may match from its own thread: read under the lock
    std::lock_guard<std::mutex> lk(c->chan->mu);
    if (!r->done) match(c->chan);
    d = r->done;
  } else {
    if (!r->done) progress(c);
    d = r->done;
  }
  if (c->failed) return abi::kRemoteError;
  *done = d ? 1 : 0;
  if (d) {
    if (sizes != nullptr && !r->flush) sizes[0] = int(r->size);
    r->used = false;
  }
  return abi::kSuccess;
}

abi::Result close_comm(void* comm, int counter) {
  count(counter);
  Comm* c = static_cast<Comm*>(comm);
  if (c->fd >= 0) ::close(c->fd);
  if (Channel* ch = c->chan) {
    bool last = false;
    {
      std::lock_guard<std::mutex> lk(ch->mu);
      (c->send ? ch->send : ch->recv) = nullptr;
      last = --ch->ends == 0;
    }
    if (last) delete ch;
  }
  delete c;
  return abi::kSuccess;
}
abi::Result t_close_send(void* c) { return close_comm(c, kCloseSend); }
abi::Result t_close_recv(void* c) { return close_comm(c, kCloseRecv); }

abi::Result t_close_listen(void* listen_comm) {
  Listen* l = static_cast<Listen*>(listen_comm);
  {
    std::lock_guard<std::mutex> lk(g_listen_mu);
    g_listens.erase(l->port);
  }
  if (l->pending != nullptr) {  // connected, never accepted: the send end holds the channel alone
    std::lock_guard<std::mutex> lk(l->pending->mu);
    l->pending->ends--;
  }
  if (l->fd >= 0) ::close(l->fd);
  if (l->conn >= 0) ::close(l->conn);
  delete l;
  return abi::kSuccess;
}

abi::Result t_finalize(void* ctx) {
  count(kFinalize);
  delete static_cast<Ctx*>(ctx);
  return abi::kSuccess;
}

#ifndef SCOUTTEST_MIN
abi::Result t_reg_mr_dmabuf(void*, void*, size_t, int, uint64_t, int, void**) { return abi::kInternalError; }
abi::Result t_get_device_mr(void*, void*, void** dptr) {
  *dptr = nullptr;
  return abi::kSuccess;
}
abi::Result t_irecv_consumed(void*, int, void*) { return abi::kSuccess; }
template <class V>
abi::Result t_make_vdevice(int* d, V* props) {
  if (props->ndevs != 1 || props->devs[0] != 0) return abi::kInvalidArgument;
  *d = 0;
  return abi::kSuccess;
}
abi::Result t_set_net_attr(void* ctx, abi::NetAttr* attr) {
  static_cast<Ctx*>(ctx)->attr = *attr;
  return abi::kSuccess;
}
#endif

}  // namespace

extern "C" {
#ifdef SCOUTTEST_MIN
__attribute__((visibility("default"))) abi::NetV11 ncclNetPlugin_v11 = {
    "scouttest-min", t_init,     t_devices, t_props11, t_listen,   t_connect, t_accept,     t_reg_mr,
    nullptr,         t_dereg_mr, t_isend,   t_irecv,   nullptr,    t_test,    t_close_send, t_close_recv,
    t_close_listen,  nullptr,    nullptr,   nullptr,   t_finalize, nullptr};
#else
__attribute__((visibility("default"))) abi::NetV11 ncclNetPlugin_v11 = {
    "scouttest",  t_init,         t_devices,       t_props11,        t_listen,
    t_connect,    t_accept,       t_reg_mr,        t_reg_mr_dmabuf,  t_dereg_mr,
    t_isend,      t_irecv,        t_iflush,        t_test,           t_close_send,
    t_close_recv, t_close_listen, t_get_device_mr, t_irecv_consumed, t_make_vdevice<abi::NetVDevicePropsV11>,
    t_finalize,   t_set_net_attr};
__attribute__((visibility("default"))) abi::NetV12 ncclNetPlugin_v12 = {
    "scouttest",  t_init,         t_devices,       t_props12,        t_listen,
    t_connect,    t_accept,       t_reg_mr,        t_reg_mr_dmabuf,  t_dereg_mr,
    t_isend,      t_irecv,        t_iflush,        t_test,           t_close_send,
    t_close_recv, t_close_listen, t_get_device_mr, t_irecv_consumed, t_make_vdevice<abi::NetVDevicePropsV12>,
    t_finalize,   t_set_net_attr};
#endif

// Calls that reached the delegate, for tests: out[0..8) = init, isend, irecv, test, regMr,
// closeSend, closeRecv, finalize.
__attribute__((visibility("default"))) void scouttest_net_counters(uint64_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = g_counters[i].load(std::memory_order_relaxed);
}
}
