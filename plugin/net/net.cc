// The net plugin half (net.h).
#include "plugin/net/net.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "common/paths.h"
#include "plugin/core/identity.h"
#include "plugin/core/link_table.h"
#include "plugin/core/log.h"
#include "plugin/core/process.h"
#include "plugin/core/wall_clock.h"
#include "plugin/net/delegate.h"
#include "plugin/net/fault.h"
#include "plugin/net/truth.h"
#include "scout/config.h"

namespace scout::net {
namespace {

using core::log::Problem;

constexpr uint32_t kCtxMagic = 0x5343784e;     // per-init context
constexpr uint32_t kListenMagic = 0x53434c4e;  // listen comm
constexpr uint32_t kSendMagic = 0x5343534e;    // send comm
constexpr uint32_t kRecvMagic = 0x5343524e;    // recv comm
constexpr uint32_t kMrMagic = 0x53434d4e;      // memory handle
constexpr uint32_t kDeadMagic = 0xdeadbeef;    // closed (set before delete)
constexpr int kSlots = 64;                     // requests per comm (NCCL allows 32 in flight)
constexpr int kCachedSizes = 8;                // grouped receives whose sizes a request keeps
constexpr int kMaxGrouped = 64;                // grouped receives/flushes unwrapped on the stack

// The process-wide state of the net half: created at the first init of a cycle, destroyed at the
// last finalize (guarded by core::lock_init; read-only while contexts > 0).
struct Global {
  Delegate d;
  int contexts = 0;
  int nccl_version = 0;
  std::vector<FaultSpec> faults;
  std::vector<std::string> fault_text;  // describe() of each, for ground-truth lines
  std::string truth;                    // SCOUT_TRUTH
  int me = -1;                          // global rank
  int pid = 0;
  uint64_t host_hash = 0;
  std::atomic<uint32_t> next_conn{0};
};
Global* g = nullptr;

struct Ctx {
  uint32_t magic = kCtxMagic;
  void* inner = nullptr;
  uint64_t comm_hash = 0;
  bool holds_process = false;  // counted in core::Process::live_contexts
};

struct Listen {
  uint32_t magic = kListenMagic;
  void* inner = nullptr;
  Ctx* ctx = nullptr;
  int dev = 0;
  uint64_t nonce = 0;
};

struct Mr {
  uint32_t magic = kMrMagic;
  int type = 0;  // abi::kPtr*
  void* inner = nullptr;
};

enum : uint8_t { kFree = 0, kPosted = 1, kHeld = 2, kStalled = 3 };

struct Conn;
struct Request {
  Conn* conn = nullptr;
  void* inner = nullptr;  // the delegate's request; kept after completion for irecvConsumed
  int64_t start_ns = 0;
  int64_t hold_until = 0;  // delay drill: done is reported from this time on
  int16_t n = 0;           // transfers in the request: 1 send, n grouped receives, 0 a flush
  uint8_t state = kFree;
  int sizes[kCachedSizes] = {};
};

struct Conn {
  uint32_t magic = 0;  // kSendMagic / kRecvMagic
  const Delegate* d = nullptr;
  void* inner = nullptr;
  shm::LinkEntry* entry = nullptr;  // null: not recorded (no segment, table full)
  shm::LinkTableHeader* table = nullptr;
  ConnFaults f;
  int me = -1, peer = -1;
  uint64_t comm_hash = 0;
  uint32_t id = 0;
  uint64_t completed = 0;  // transfers reported done by the delegate
  uint64_t sends = 0;      // sends posted
  bool delay_noted = false, stall_noted = false, flip_noted = false;
  uint32_t cursor = 0;
  Request req[kSlots];
};

Ctx* as_ctx(void* p) {
  Ctx* c = static_cast<Ctx*>(p);
  return c != nullptr && c->magic == kCtxMagic ? c : nullptr;
}
Conn* as_conn(void* p, uint32_t magic) {
  Conn* c = static_cast<Conn*>(p);
  return c != nullptr && c->magic == magic ? c : nullptr;
}
Conn* as_any_conn(void* p) {
  Conn* c = static_cast<Conn*>(p);
  return c != nullptr && (c->magic == kSendMagic || c->magic == kRecvMagic) ? c : nullptr;
}
void* inner_mr(void* mhandle) {
  Mr* m = static_cast<Mr*>(mhandle);
  return m != nullptr && m->magic == kMrMagic ? m->inner : mhandle;
}

// The delegate's handles of `n` (<= kMaxGrouped) grouped buffers, written to `mh`; nullptr when
// NCCL passed none.
void** inner_mrs(int n, void** mhandles, void** mh) {
  if (mhandles == nullptr) return nullptr;
  for (int i = 0; i < n; ++i) mh[i] = inner_mr(mhandles[i]);
  return mh;
}

__attribute__((noinline, cold)) abi::Result bad_object(const char* where) {
  core::log::net_warn_once(Problem::kNetBadObject, "%s: an object that is not one of the net half's (ignored)", where);
  return abi::kInternalError;
}

void count_error(shm::LinkTableHeader* t) {
  if (t != nullptr) t->net_errors.fetch_add(1, std::memory_order_relaxed);
}

shm::LinkTableHeader* table_now() {
  core::Process* p = core::process();
  return p != nullptr ? p->links.header() : nullptr;
}

uint64_t random64() {
  uint64_t v = 0;
  if (::getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
    v = uint64_t(core::now_ns()) * 0x9E3779B97F4A7C15ull ^ uint64_t(::getpid());
  }
  return v == 0 ? 1 : v;
}

// Ground truth of a drill on a connection, once (docs/net-plugin.md, "Drills").
void note_truth(Conn* c, const FaultSpec* f, const char* kind, int global_rank, int peer) {
  if (g == nullptr || g->truth.empty()) return;
  TruthLine t;
  t.kind = kind;
  t.global_rank = global_rank;
  t.peer = peer;
  t.comm_hash = c->comm_hash;
  t.ms = f->kind == FaultKind::kDelay ? f->ms : 0;
  t.time_ns = core::realtime_ns();
  size_t i = size_t(f - g->faults.data());
  t.drill = i < g->fault_text.size() ? g->fault_text[i].c_str() : "";
  t.conn_id = c->id;
  if (!write_truth(g->truth, t)) {
    core::log::net_warn_once(Problem::kNetTruth, "cannot append to SCOUT_TRUTH=%s; ground truth of drills lost",
                             g->truth.c_str());
  }
}

Request* claim_slot(Conn* c) {
  for (int k = 0; k < kSlots; ++k) {
    uint32_t i = (c->cursor + uint32_t(k)) & (kSlots - 1);
    if (c->req[i].state == kFree) {
      c->cursor = i + 1;
      return &c->req[i];
    }
  }
  return nullptr;
}

// The delegate refused a post (or gave no request): NCCL sees its result and no request; the slot
// claimed for it stays free.
abi::Result refused(Conn* c, abi::Result res, void** request) {
  if (res != abi::kSuccess) count_error(c->table);
  *request = nullptr;
  return res;
}

// A post the delegate accepted as `inner`, kept in slot `r`: `n` grouped buffers (0: a flush). A
// timed post (send, receive) starts its transfer time now and counts as posted in the link table.
abi::Result hand_out(Conn* c, Request* r, void* inner, int16_t n, bool timed, void** request) {
  r->conn = c;
  r->inner = inner;
  if (timed) {
    r->start_ns = core::now_ns();
    r->hold_until = 0;
  }
  r->n = n;
  r->state = kPosted;
  if (timed && c->entry != nullptr) core::bump(c->entry->posted, 1);
  *request = r;
  return abi::kSuccess;
}

void count_fault(Conn* c, std::atomic<uint64_t> shm::LinkTableHeader::*counter) {
  if (c->table != nullptr) (c->table->*counter).fetch_add(1, std::memory_order_relaxed);
  if (c->entry != nullptr) core::bump(c->entry->faults, 1);
}

// flip drill: one bit of the middle byte of a host buffer, before the delegate sends it.
bool flip_now(Conn* c, void* data, size_t size, void* mhandle) {
  const FaultSpec* f = c->f.flip;
  Mr* m = static_cast<Mr*>(mhandle);
  if (f == nullptr || data == nullptr || size == 0 || m == nullptr || m->magic != kMrMagic || m->type != abi::kPtrHost)
    return false;
  if ((c->sends + 1) % f->every != 0) return false;
  static_cast<unsigned char*>(data)[size / 2] ^= uint8_t(1u << (c->sends % 8));
  return true;
}
void unflip(Conn* c, void* data, size_t size) {
  static_cast<unsigned char*>(data)[size / 2] ^= uint8_t(1u << (c->sends % 8));
}

abi::Result complete(Conn* c, Request* r, int64_t now, int* done, int* sizes) {
  if (c->entry != nullptr) {
    uint64_t bytes = 0;
    for (int i = 0; i < r->n && i < kCachedSizes; ++i) bytes += uint64_t(r->sizes[i] > 0 ? r->sizes[i] : 0);
    core::link_add(c->entry, bytes, now - r->start_ns, now);
  }
  if (sizes != nullptr && r->n <= kCachedSizes) std::memcpy(sizes, r->sizes, sizeof(int) * size_t(r->n));
  r->state = kFree;
  *done = 1;
  return abi::kSuccess;
}

Conn* new_conn(uint32_t magic, Ctx* ctx, void* inner, int dev, int peer, int peer_pid, uint64_t peer_host,
               uint64_t link_id) {
  Conn* c = new (std::nothrow) Conn();
  if (c == nullptr) return nullptr;
  c->magic = magic;
  c->d = &g->d;
  c->inner = inner;
  c->me = g->me;
  c->peer = peer;
  c->comm_hash = ctx != nullptr ? ctx->comm_hash : 0;
  c->id = g->next_conn.fetch_add(1, std::memory_order_relaxed) + 1;
  c->f = faults_for(g->faults, g->me, peer, magic == kSendMagic);
  core::Process* p = core::process();
  if (p != nullptr && p->links.header() != nullptr) {
    core::LinkIdentity id;
    id.source = shm::kLinkSourceNet;
    id.dir = magic == kSendMagic ? shm::kLinkSend : shm::kLinkRecv;
    id.dev = uint16_t(dev);
    id.comm_hash = c->comm_hash;
    id.peer_global_rank = peer;
    id.peer_pid = peer_pid;
    id.conn_id = c->id;
    id.link_id = link_id;
    id.peer_host_hash = peer_host;
    c->table = p->links.header();
    c->entry = p->links.claim(id, core::now_ns());
  }
  return c;
}

void destroy_global() {
  if (g == nullptr) return;
  close_delegate(&g->d);
  delete g;
  g = nullptr;
}

// Creates the global state and opens the delegate (caller holds the init lock). Returns false
// with the refusal logged once.
bool create_global(int nccl_version) {
  config::Config cfg = config::load({}, [](const std::string& m) { core::log::net_warn("%s", m.c_str()); });
  if (!cfg.enable) {
    core::note_net_state(shm::kNetDelegateFailed, nccl_version, 0, "");
    core::log::net_warn_once(Problem::kNetRefused, "SCOUT_ENABLE=0: the scout net plugin is not used");
    return false;
  }
  Global* ng = new (std::nothrow) Global();
  if (ng == nullptr) return false;
  std::string err;
  if (!open_delegate(cfg.net_delegate, &ng->d, &err)) {
    bool unset = cfg.net_delegate.empty();
    core::note_net_state(unset ? shm::kNetNoDelegate : shm::kNetDelegateFailed, nccl_version, 0, "");
    core::log::net_warn_once(Problem::kNetRefused,
                             "%s: init refused, NCCL uses its other net plugins and its own transports "
                             "(the profiler is not affected)",
                             err.c_str());
    delete ng;
    return false;
  }
  std::string ferr;
  if (!parse_faults(cfg.net_fault, &ng->faults, &ferr)) {
    core::log::net_warn_once(Problem::kNetFaultSpec, "SCOUT_NET_FAULT: %s; drills off", ferr.c_str());
  }
  for (const FaultSpec& f : ng->faults) ng->fault_text.push_back(describe(f));
  ng->truth = cfg.truth;
  core::Identity id = core::identity_from_env(cfg, {}, [](const std::string&) {});
  ng->me = id.global_rank;
  ng->pid = ::getpid();
  ng->host_hash = shm::fnv1a64(id.host);
  ng->nccl_version = nccl_version;
  g = ng;
  std::string drills;
  for (const std::string& t : ng->fault_text) drills += (drills.empty() ? "" : "; ") + t;
  core::log::net_info("wrapping %s (%s, table v%d) for NCCL's net v%d; global rank %d; drills: %s", g->d.opened.c_str(),
                      g->d.name, g->d.version, nccl_version, g->me, drills.empty() ? "none" : drills.c_str());
  return true;
}

}  // namespace

abi::Result init(void** ctx, uint64_t comm_id, abi::NetCommConfig* config, abi::Logger logfn,
                 abi::NetProfilerCallback prof, int nccl_version) {
  if (ctx == nullptr) return abi::kInvalidArgument;
  *ctx = nullptr;
  core::log::set_logger(logfn);
  core::wall_clock_init();
  core::lock_init();
  if (g == nullptr && !create_global(nccl_version)) {
    core::unlock_init();
    return abi::kInternalError;
  }
  void* inner = nullptr;
  abi::Result r = g->d.init(&inner, comm_id, config, logfn, prof);
  Ctx* c = r == abi::kSuccess ? new (std::nothrow) Ctx() : nullptr;
  if (c == nullptr) {
    if (r == abi::kSuccess) {
      if (g->d.finalize != nullptr) g->d.finalize(inner);
      r = abi::kSystemError;
    }
    core::log::net_warn("the delegate %s failed init (%d): this communicator does not use the scout net plugin",
                        g->d.opened.c_str(), r);
    if (g->contexts == 0) {
      core::note_net_state(shm::kNetDelegateFailed, nccl_version, g->d.version, g->d.opened.c_str());
      destroy_global();
    }
    core::unlock_init();
    return r;
  }
  c->inner = inner;
  c->comm_hash = comm_id;
  core::Process* p = core::process_acquire(0);
  if (p != nullptr) {
    p->live_contexts++;
    c->holds_process = true;
  }
  g->contexts++;
  core::note_net_state(shm::kNetActive, nccl_version, g->d.version, g->d.opened.c_str());
  if (shm::LinkTableHeader* t = table_now()) t->net_inits.fetch_add(1, std::memory_order_relaxed);
  *ctx = c;
  core::unlock_init();
  return abi::kSuccess;
}

abi::Result finalize(void* ctx) {
  core::lock_init();
  Ctx* c = as_ctx(ctx);
  if (c == nullptr || g == nullptr) {
    core::unlock_init();
    return bad_object("finalize");
  }
  abi::Result r = g->d.finalize != nullptr ? g->d.finalize(c->inner) : abi::kSuccess;
  c->magic = kDeadMagic;
  if (c->holds_process) {
    core::Process* p = core::process();
    if (p != nullptr && --p->live_contexts == 0) core::process_release(p);
  }
  delete c;
  if (--g->contexts == 0) destroy_global();
  core::unlock_init();
  return r;
}

abi::Result devices(int* ndev) {
  if (g == nullptr) return abi::kInternalError;
  return g->d.devices(ndev);
}

abi::Result get_properties_v11(int dev, abi::NetPropertiesV11* props) {
  if (g == nullptr) return abi::kInternalError;
  if (g->d.get_properties_v11 != nullptr) return g->d.get_properties_v11(dev, props);
  abi::NetPropertiesV12 p12;
  std::memset(&p12, 0, sizeof(p12));
  abi::Result r = g->d.get_properties_v12(dev, &p12);
  if (r != abi::kSuccess) return r;
  if (!props_v12_to_v11(p12, props)) {
    core::log::net_warn_once(Problem::kNetVProps,
                             "device %d fuses more than 4 devices (v12 delegate, v11 NCCL): the first 4 are kept", dev);
  }
  return r;
}

abi::Result get_properties_v12(int dev, abi::NetPropertiesV12* props) {
  if (g == nullptr) return abi::kInternalError;
  if (g->d.get_properties_v12 != nullptr) return g->d.get_properties_v12(dev, props);
  abi::NetPropertiesV11 p11;
  std::memset(&p11, 0, sizeof(p11));
  abi::Result r = g->d.get_properties_v11(dev, &p11);
  if (r == abi::kSuccess) props_v11_to_v12(p11, props);
  return r;
}

abi::Result listen(void* ctx, int dev, void* handle, void** listen_comm) {
  Ctx* c = as_ctx(ctx);
  if (c == nullptr || g == nullptr || handle == nullptr || listen_comm == nullptr) return bad_object("listen");
  *listen_comm = nullptr;
  unsigned char* h = static_cast<unsigned char*>(handle);
  std::memset(h + kHandleIdOffset, 0, kHandleIdBytes);
  void* inner = nullptr;
  abi::Result r = g->d.listen(c->inner, dev, handle, &inner);
  if (r != abi::kSuccess) {
    count_error(table_now());
    return r;
  }
  Listen* l = new (std::nothrow) Listen();
  if (l == nullptr) {
    g->d.close_listen(inner);
    return abi::kSystemError;
  }
  l->inner = inner;
  l->ctx = c;
  l->dev = dev;
  l->nonce = random64();
  bool free_tail = true;
  for (size_t i = kHandleIdOffset; i < abi::kNetHandleBytes; ++i) free_tail &= h[i] == 0;
  if (free_tail) {
    HandleId id{kHandleIdMagic, g->me, g->pid, 0, l->nonce, g->host_hash};
    std::memcpy(h + kHandleIdOffset, &id, sizeof(id));
  } else {
    if (shm::LinkTableHeader* t = table_now()) t->handle_full.fetch_add(1, std::memory_order_relaxed);
    core::log::net_warn_once(Problem::kNetHandleFull,
                             "the delegate's listen handle uses its last %zu bytes: peers of its connections are "
                             "unknown (counted in handle_full)",
                             kHandleIdBytes);
  }
  *listen_comm = l;
  return abi::kSuccess;
}

abi::Result connect(void* ctx, int dev, void* handle, void** send_comm, abi::NetDeviceHandle** dev_comm) {
  Ctx* c = as_ctx(ctx);
  if (c == nullptr || g == nullptr || handle == nullptr || send_comm == nullptr) return bad_object("connect");
  *send_comm = nullptr;
  HandleId id;
  std::memcpy(&id, static_cast<const unsigned char*>(handle) + kHandleIdOffset, sizeof(id));
  void* inner = nullptr;
  abi::Result r = g->d.connect(c->inner, dev, handle, &inner, dev_comm);
  if (r != abi::kSuccess) {
    count_error(table_now());
    return r;
  }
  if (inner == nullptr) return abi::kSuccess;  // not connected yet: NCCL calls again
  bool known = id.magic == kHandleIdMagic;
  Conn* k = new_conn(kSendMagic, c, inner, dev, known ? id.global_rank : -1, known ? id.pid : 0,
                     known ? id.host_hash : 0, known ? id.nonce : 0);
  if (k == nullptr) {
    g->d.close_send(inner);
    return abi::kSystemError;
  }
  *send_comm = k;
  return abi::kSuccess;
}

abi::Result accept(void* listen_comm, void** recv_comm, abi::NetDeviceHandle** dev_comm) {
  Listen* l = static_cast<Listen*>(listen_comm);
  if (l == nullptr || l->magic != kListenMagic || g == nullptr || recv_comm == nullptr) return bad_object("accept");
  *recv_comm = nullptr;
  void* inner = nullptr;
  abi::Result r = g->d.accept(l->inner, &inner, dev_comm);
  if (r != abi::kSuccess) {
    count_error(table_now());
    return r;
  }
  if (inner == nullptr) return abi::kSuccess;
  Conn* k = new_conn(kRecvMagic, l->ctx, inner, l->dev, -1, 0, 0, l->nonce);
  if (k == nullptr) {
    g->d.close_recv(inner);
    return abi::kSystemError;
  }
  *recv_comm = k;
  return abi::kSuccess;
}

abi::Result close_listen(void* listen_comm) {
  Listen* l = static_cast<Listen*>(listen_comm);
  if (l == nullptr || l->magic != kListenMagic || g == nullptr) return bad_object("closeListen");
  abi::Result r = g->d.close_listen(l->inner);
  l->magic = kDeadMagic;
  delete l;
  return r;
}

namespace {
abi::Result close_conn(void* comm, uint32_t magic, const char* where) {
  Conn* c = as_conn(comm, magic);
  if (c == nullptr) return bad_object(where);
  abi::Result r = magic == kSendMagic ? c->d->close_send(c->inner) : c->d->close_recv(c->inner);
  if (c->entry != nullptr) core::link_close(c->entry, core::now_ns());
  c->magic = kDeadMagic;
  delete c;
  return r;
}

abi::Result reg_any(void* comm, int type, void** mhandle, abi::Result (*call)(Conn*, void**, void*), void* arg) {
  Conn* c = as_any_conn(comm);
  if (c == nullptr || mhandle == nullptr) return bad_object("regMr");
  *mhandle = nullptr;
  void* inner = nullptr;
  abi::Result r = call(c, &inner, arg);
  if (r != abi::kSuccess) {
    count_error(c->table);
    return r;
  }
  Mr* m = new (std::nothrow) Mr();
  if (m == nullptr) {
    c->d->dereg_mr(c->inner, inner);
    return abi::kSystemError;
  }
  m->type = type;
  m->inner = inner;
  *mhandle = m;
  return abi::kSuccess;
}
}  // namespace

abi::Result close_send(void* send_comm) { return close_conn(send_comm, kSendMagic, "closeSend"); }
abi::Result close_recv(void* recv_comm) { return close_conn(recv_comm, kRecvMagic, "closeRecv"); }

abi::Result reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  struct A {
    void* data;
    size_t size;
    int type;
  } a{data, size, type};
  return reg_any(
      comm, type, mhandle,
      [](Conn* c, void** out, void* arg) {
        A* x = static_cast<A*>(arg);
        return c->d->reg_mr(c->inner, x->data, x->size, x->type, out);
      },
      &a);
}

abi::Result reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  if (g == nullptr || g->d.reg_mr_dmabuf == nullptr) return abi::kInternalError;
  struct A {
    void* data;
    size_t size;
    int type;
    uint64_t offset;
    int fd;
  } a{data, size, type, offset, fd};
  return reg_any(
      comm, type, mhandle,
      [](Conn* c, void** out, void* arg) {
        A* x = static_cast<A*>(arg);
        return c->d->reg_mr_dmabuf(c->inner, x->data, x->size, x->type, x->offset, x->fd, out);
      },
      &a);
}

abi::Result dereg_mr(void* comm, void* mhandle) {
  Conn* c = as_any_conn(comm);
  Mr* m = static_cast<Mr*>(mhandle);
  if (c == nullptr || m == nullptr || m->magic != kMrMagic) return bad_object("deregMr");
  abi::Result r = c->d->dereg_mr(c->inner, m->inner);
  m->magic = kDeadMagic;
  delete m;
  return r;
}

abi::Result get_device_mr(void* comm, void* mhandle, void** dptr_mhandle) {
  Conn* c = as_any_conn(comm);
  if (c == nullptr || c->d->get_device_mr == nullptr) return bad_object("getDeviceMr");
  return c->d->get_device_mr(c->inner, inner_mr(mhandle), dptr_mhandle);
}

abi::Result isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  Conn* c = as_conn(send_comm, kSendMagic);
  if (c == nullptr || request == nullptr) return bad_object("isend");
  Request* r = claim_slot(c);
  if (r == nullptr) {  // more in flight than NCCL ever posts: "try again later"
    *request = nullptr;
    return abi::kSuccess;
  }
  bool flipped = c->f.flip != nullptr && flip_now(c, data, size, mhandle);
  void* inner = nullptr;
  abi::Result res = c->d->isend(c->inner, data, size, tag, inner_mr(mhandle), phandle, &inner);
  if (res != abi::kSuccess || inner == nullptr) {
    if (flipped) unflip(c, data, size);
    return refused(c, res, request);
  }
  if (flipped) {
    count_fault(c, &shm::LinkTableHeader::fault_flipped);
    if (!c->flip_noted) {
      c->flip_noted = true;
      note_truth(c, c->f.flip, "linksdc", c->peer, c->me);  // the receiver R gets the bad bit
    }
  }
  c->sends++;
  return hand_out(c, r, inner, 1, true, request);
}

abi::Result irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                  void** request) {
  Conn* c = as_conn(recv_comm, kRecvMagic);
  if (c == nullptr || request == nullptr || n < 0 || n > kMaxGrouped) return bad_object("irecv");
  Request* r = claim_slot(c);
  if (r == nullptr) {
    *request = nullptr;
    return abi::kSuccess;
  }
  void* mh[kMaxGrouped];
  void* inner = nullptr;
  abi::Result res = c->d->irecv(c->inner, n, data, sizes, tags, inner_mrs(n, mhandles, mh), phandles, &inner);
  if (res != abi::kSuccess || inner == nullptr) return refused(c, res, request);
  return hand_out(c, r, inner, int16_t(n), true, request);
}

abi::Result iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) {
  Conn* c = as_conn(recv_comm, kRecvMagic);
  if (c == nullptr || request == nullptr || n < 0 || n > kMaxGrouped || c->d->iflush == nullptr)
    return bad_object("iflush");
  Request* r = claim_slot(c);
  if (r == nullptr) {
    *request = nullptr;
    return abi::kSuccess;
  }
  void* mh[kMaxGrouped];
  void* inner = nullptr;
  abi::Result res = c->d->iflush(c->inner, n, data, sizes, inner_mrs(n, mhandles, mh), &inner);
  if (res != abi::kSuccess || inner == nullptr) return refused(c, res, request);
  return hand_out(c, r, inner, 0, false, request);
}

abi::Result test(void* request, int* done, int* sizes) {
  Request* r = static_cast<Request*>(request);
  if (r == nullptr || done == nullptr) return bad_object("test");
  Conn* c = r->conn;
  if (c == nullptr || (c->magic != kSendMagic && c->magic != kRecvMagic)) return bad_object("test");
  switch (r->state) {
    case kPosted: {
      if (r->n == 0 || r->n > kCachedSizes) {  // a flush, or more grouped receives than kept
        abi::Result res = c->d->test(r->inner, done, sizes);
        if (res != abi::kSuccess) {
          count_error(c->table);
          return res;
        }
        if (*done) {
          if (r->n != 0 && c->entry != nullptr) {
            int64_t now = core::now_ns();
            uint64_t bytes = 0;
            for (int i = 0; sizes != nullptr && i < r->n; ++i) bytes += uint64_t(sizes[i] > 0 ? sizes[i] : 0);
            core::link_add(c->entry, bytes, now - r->start_ns, now);
          }
          r->state = kFree;
        }
        return abi::kSuccess;
      }
      int d = 0;
      abi::Result res = c->d->test(r->inner, &d, r->sizes);
      if (res != abi::kSuccess) {
        count_error(c->table);
        return res;
      }
      if (!d) {
        *done = 0;
        return abi::kSuccess;
      }
      int64_t now = core::now_ns();
      c->completed++;
      if (c->f.stall != nullptr && c->completed > c->f.stall->after) {
        r->state = kStalled;
        count_fault(c, &shm::LinkTableHeader::fault_stalled);
        if (!c->stall_noted) {
          c->stall_noted = true;
          note_truth(c, c->f.stall, "stall", c->me, c->peer);
        }
        *done = 0;
        return abi::kSuccess;
      }
      if (c->f.delay != nullptr) {
        int64_t hold = r->start_ns + c->f.delay->ms * 1000000;
        count_fault(c, &shm::LinkTableHeader::fault_delayed);
        if (!c->delay_noted) {
          c->delay_noted = true;
          // One line per link, from the end that is not R (fault.h): the link {me, peer}.
          if (c->me != c->f.delay->peer && c->peer >= 0) note_truth(c, c->f.delay, "slowlink", c->me, c->peer);
        }
        if (now < hold) {
          r->hold_until = hold;
          r->state = kHeld;
          *done = 0;
          return abi::kSuccess;
        }
      }
      return complete(c, r, now, done, sizes);
    }
    case kHeld: {
      int64_t now = core::now_ns();
      if (now < r->hold_until) {
        *done = 0;
        return abi::kSuccess;
      }
      return complete(c, r, now, done, sizes);
    }
    case kStalled: *done = 0; return abi::kSuccess;
    default: return bad_object("test");  // a request already reported done
  }
}

abi::Result irecv_consumed(void* recv_comm, int n, void* request) {
  Conn* c = as_conn(recv_comm, kRecvMagic);
  Request* r = static_cast<Request*>(request);
  if (c == nullptr || r == nullptr || r->conn != c || c->d->irecv_consumed == nullptr)
    return bad_object("irecvConsumed");
  return c->d->irecv_consumed(c->inner, n, r->inner);
}

abi::Result make_vdevice_v11(int* d, abi::NetVDevicePropsV11* props) {
  if (g == nullptr || !g->d.has_make_vdevice()) return abi::kInternalError;
  if (g->d.make_vdevice_v11 != nullptr) return g->d.make_vdevice_v11(d, props);
  abi::NetVDevicePropsV12 p12;
  vprops_v11_to_v12(*props, &p12);
  return g->d.make_vdevice_v12(d, &p12);
}

abi::Result make_vdevice_v12(int* d, abi::NetVDevicePropsV12* props) {
  if (g == nullptr || !g->d.has_make_vdevice()) return abi::kInternalError;
  if (g->d.make_vdevice_v12 != nullptr) return g->d.make_vdevice_v12(d, props);
  abi::NetVDevicePropsV11 p11;
  if (!vprops_v12_to_v11(*props, &p11)) return abi::kInvalidArgument;  // more than a v11 delegate can fuse
  return g->d.make_vdevice_v11(d, &p11);
}

abi::Result set_net_attr(void* ctx, abi::NetAttr* attr) {
  Ctx* c = as_ctx(ctx);
  if (c == nullptr || g == nullptr || g->d.set_net_attr == nullptr) return bad_object("setNetAttr");
  return g->d.set_net_attr(c->inner, attr);
}

OptionalSlots optional_slots() {
  OptionalSlots s;
  if (g == nullptr) return s;
  s.iflush = g->d.iflush != nullptr;
  s.reg_mr_dmabuf = g->d.reg_mr_dmabuf != nullptr;
  s.get_device_mr = g->d.get_device_mr != nullptr;
  s.irecv_consumed = g->d.irecv_consumed != nullptr;
  s.make_vdevice = g->d.has_make_vdevice();
  s.set_net_attr = g->d.set_net_attr != nullptr;
  return s;
}

}  // namespace scout::net
