// Forwarding to a delegate profiler plugin (forward.h).
#include "plugin/abi/forward.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "plugin/abi/scout_calls.h"
#include "plugin/core/delegate.h"
#include "plugin/core/events.h"
#include "plugin/core/log.h"
#include "plugin/core/process.h"
#include "scout/config.h"

namespace scout::abi_hook {

struct Delegation {
  core::dlg::Table t;
  void* dl = nullptr;
  std::string opened;
  int mask = 0;                       // the delegate's activation mask: it writes (and may keep) this int
  std::atomic<int> mask_seen{0};      // the value last merged into NCCL's mask
  int* nccl_mask = nullptr;           // NCCL's process-wide mask (the same for every init)
  std::atomic<uint64_t> routes{0};    // event types the delegate receives (dlg::routed_types)
  std::atomic<uint16_t> scout_salt{0};  // scout's handle salt of this load cycle (0: none yet)
  core::dlg::Joins joins;
  int live = 0;  // contexts handed to NCCL (guarded by g_mu)
};

std::atomic<Delegation*> g_delegation{nullptr};

namespace {

using core::dlg::Split;

std::mutex g_mu;      // init and finalize
bool g_tried = false;  // the delegate was looked for in this load cycle (guarded by g_mu)

// The types scout records, whoever else asked for them (core/events.h).
constexpr uint64_t kScoutTypes = abi::kEvGroupApi | abi::kEvCollApi | abi::kEvP2pApi | abi::kEvKernelLaunch |
                                 abi::kEvGroup | abi::kEvColl | abi::kEvP2p | abi::kEvKernelCh | abi::kEvCeColl;
// Types scout ignores: they reach it only because the delegate asked for them.
constexpr uint64_t kScoutIgnores = abi::kEvProxyCtrl | abi::kEvNetPlugin | abi::kEvCeSync | abi::kEvCeBatch;

bool scout_takes(uint64_t type, const Split& parent) {
  if (type & kScoutTypes) return true;
  if (type == abi::kEvProxyOp) {
    core::Process* p = core::process();
    return p != nullptr && p->proxy.enabled() && core::ProxyWindows::is_open(p->proxy.current());
  }
  if (type == abi::kEvProxyStep) return parent.scout != nullptr;
  return (type & kScoutIgnores) == 0;  // an unknown type: scout counts it
}

// The delegate changed its mask after init (or a ProxyStep window's close took one of its bits):
// NCCL's mask gets the delegate's bits again, and loses the ones the delegate dropped that scout
// does not ask for itself.
__attribute__((noinline)) void sync_mask(Delegation* g, int want) {
  int seen = g->mask_seen.exchange(want, std::memory_order_relaxed);
  if (g->nccl_mask == nullptr) return;
  int dropped = seen & ~want & ~core::kActivationMask;
  if (core::Process* p = core::process(); p != nullptr && core::ProxyWindows::is_open(p->proxy.current())) {
    dropped &= ~core::kProxyMaskBits;
  }
  if (dropped != 0) __atomic_fetch_and(g->nccl_mask, ~dropped, __ATOMIC_RELAXED);
  __atomic_fetch_or(g->nccl_mask, want, __ATOMIC_RELAXED);
  g->routes.store(core::dlg::routed_types(want, g->t.version), std::memory_order_relaxed);
}

// At every API call (GroupApi; Group under v4): two relaxed loads and a compare.
inline void check_mask(Delegation* g) {
  const int want = __atomic_load_n(&g->mask, __ATOMIC_RELAXED);
  if (want != g->mask_seen.load(std::memory_order_relaxed) ||
      (g->nccl_mask != nullptr && (__atomic_load_n(g->nccl_mask, __ATOMIC_RELAXED) & want) != want)) {
    sync_mask(g, want);
  }
}

// Opens the delegate named by SCOUT_PROFILER_DELEGATE (caller holds g_mu). nullptr when none is
// set or it cannot be used (said once through NCCL's logger).
Delegation* open_delegation(int version) {
  config::Config cfg = config::load();
  if (cfg.profiler_delegate.empty()) return nullptr;
  auto* g = new (std::nothrow) Delegation;
  if (g == nullptr) return nullptr;
  std::string error;
  if (!core::dlg::open_delegate(cfg.profiler_delegate, version, &g->t, &g->dl, &g->opened, &error)) {
    core::log::warn("SCOUT_PROFILER_DELEGATE: %s; scout records alone", error.c_str());
    delete g;
    return nullptr;
  }
  if (!g->joins.init()) {
    core::log::warn("SCOUT_PROFILER_DELEGATE: out of memory for joined handles; scout records alone");
    ::dlclose(g->dl);
    delete g;
    return nullptr;
  }
  core::log::info("forwarding every profiler callback to %s (its ncclProfiler_v%d table \"%s\")", g->opened.c_str(),
                  g->t.version, g->t.name);
  return g;
}

// The last context is finalized: the delegate is closed (NCCL may dlclose scout next).
void close_delegation(Delegation* g) {
  g_delegation.store(nullptr, std::memory_order_release);
  if (uint64_t n = g->joins.stale(); n > 0) {
    core::log::info("%llu joined handles came back after their slot was reused; neither plugin saw them",
                    static_cast<unsigned long long>(n));
  }
  g->joins.release();
  ::dlclose(g->dl);
  delete g;
  g_tried = false;
}

uint16_t scout_salt(Delegation* g) {
  if (core::Process* p = core::process()) return p->salt;
  return g->scout_salt.load(std::memory_order_relaxed);
}

// parentGroup of a Coll or P2p descriptor (the legacy Group handle), or nullptr.
void** parent_group(abi::DescrV6* d) {
  if (d->type == abi::kEvColl) return &d->coll.parentGroup;
  if (d->type == abi::kEvP2p) return &d->p2p.parentGroup;
  return nullptr;
}

}  // namespace

void fwd_init(int version, void** ctx, uint64_t hash, int* mask, const char* name, int nnodes, int nranks, int rank,
              abi::Logger logfn) {
  if (ctx == nullptr) return;
  *ctx = nullptr;
  core::log::set_logger(logfn);
  std::lock_guard<std::mutex> lk(g_mu);
  Delegation* g = g_delegation.load(std::memory_order_relaxed);
  if (g == nullptr && !g_tried) {
    g_tried = true;
    g = open_delegation(version);
    if (g != nullptr) g_delegation.store(g, std::memory_order_release);
  }
  if (g == nullptr) {
    scout_init(version, ctx, hash, mask, name, nnodes, nranks, rank, logfn, 0);
    return;
  }
  void* dctx = nullptr;
  if (g->t.version == 4) {
    g->t.init_v4(&dctx, &g->mask, name, hash, nnodes, nranks, rank, logfn);
  } else {
    g->t.init_v5(&dctx, hash, &g->mask, name, nnodes, nranks, rank, logfn);
  }
  const int dmask = __atomic_load_n(&g->mask, __ATOMIC_RELAXED);
  if (mask != nullptr) g->nccl_mask = mask;
  void* sctx = nullptr;
  scout_init(version, &sctx, hash, mask, name, nnodes, nranks, rank, logfn, dmask);
  if (mask != nullptr) __atomic_fetch_or(mask, dmask, __ATOMIC_RELAXED);
  g->mask_seen.store(dmask, std::memory_order_relaxed);
  g->routes.store(core::dlg::routed_types(dmask, g->t.version), std::memory_order_relaxed);
  if (core::Process* p = core::process()) g->scout_salt.store(p->salt, std::memory_order_relaxed);
  void* joined = g->joins.join_context(sctx, dctx);
  if (joined == nullptr && sctx != nullptr) {
    // More live communicators than joined-context slots: this one is scout's alone.
    core::log::warn("more than %u communicators recorded by both plugins: the delegate does not see this one",
                    core::dlg::kCtxSlots);
    g->t.finalize(dctx);
    joined = sctx;
  }
  *ctx = joined;
  if (joined != nullptr) g->live++;
}

void fwd_start(int version, void* ctx, void** out, abi::DescrV6* d) {
  if (out == nullptr) return;
  *out = nullptr;
  Delegation* g = g_delegation.load(std::memory_order_acquire);
  if (d == nullptr || g == nullptr) return;
  const uint64_t type = d->type;
  if (type == abi::kEvGroupApi) check_mask(g);
  const uint16_t salt = scout_salt(g);
  const Split c = g->joins.split_context(ctx, salt);
  const Split par = g->joins.split(d->parentObj, salt);
  void** pg = parent_group(d);
  const Split grp = pg != nullptr ? g->joins.split(*pg, salt) : Split{};
  void* sh = nullptr;
  void* dh = nullptr;
  if (scout_takes(type, par)) {
    abi::DescrV6 sd;
    abi::DescrV6* use = d;
    if (par.scout != d->parentObj || (pg != nullptr && grp.scout != *pg)) {
      std::memcpy(&sd, d, sizeof(sd));
      sd.parentObj = par.scout;
      if (void** spg = parent_group(&sd)) *spg = grp.scout;
      use = &sd;
    }
    if (version == 6) {
      scout_start_v6(c.scout, &sh, use);
    } else {
      scout_start_v5(c.scout, &sh, reinterpret_cast<abi::DescrV5*>(use));
    }
  }
  if ((type & g->routes.load(std::memory_order_relaxed)) != 0) {
    abi::DescrV6 dd;
    std::memcpy(&dd, d, sizeof(dd));
    dd.parentObj = par.del;
    if (void** dpg = parent_group(&dd)) *dpg = grp.del;
    switch (g->t.version) {
      case 6: g->t.start_v6(c.del, &dh, &dd); break;
      case 5: g->t.start_v5(c.del, &dh, reinterpret_cast<abi::DescrV5*>(&dd)); break;
      default: {
        abi::DescrV4 d4;
        if (core::dlg::descr_to_v4(*reinterpret_cast<abi::DescrV5*>(&dd), grp.del, &d4)) g->t.start_v4(c.del, &dh, &d4);
        break;
      }
    }
  }
  *out = g->joins.join(sh, dh);
}

void fwd_start_v4(void* ctx, void** out, abi::DescrV4* d) {
  if (out == nullptr) return;
  *out = nullptr;
  Delegation* g = g_delegation.load(std::memory_order_acquire);
  if (d == nullptr || g == nullptr) return;
  const uint64_t type = d->type;
  if (type == abi::kEvGroup) check_mask(g);
  const uint16_t salt = scout_salt(g);
  const Split c = g->joins.split_context(ctx, salt);
  const Split par = g->joins.split(d->parentObj, salt);
  void* sh = nullptr;
  void* dh = nullptr;
  if (scout_takes(type, par)) {
    if (par.scout == d->parentObj) {
      scout_start_v4(c.scout, &sh, d);
    } else {
      abi::DescrV4 sd;
      std::memcpy(&sd, d, sizeof(sd));
      sd.parentObj = par.scout;
      scout_start_v4(c.scout, &sh, &sd);
    }
  }
  if ((type & g->routes.load(std::memory_order_relaxed)) != 0 && g->t.start_v4 != nullptr) {
    abi::DescrV4 dd;
    std::memcpy(&dd, d, sizeof(dd));
    dd.parentObj = par.del;
    g->t.start_v4(c.del, &dh, &dd);
  }
  *out = g->joins.join(sh, dh);
}

void fwd_stop(int version, void* handle) {
  Delegation* g = g_delegation.load(std::memory_order_acquire);
  if (g == nullptr || handle == nullptr) return;
  const Split h = g->joins.split(handle, scout_salt(g));
  if (h.scout != nullptr) scout_stop(version, h.scout);
  if (h.del != nullptr) g->t.stop(h.del);
}

void fwd_record(int version, void* handle, int state, abi::StateArgs* args) {
  Delegation* g = g_delegation.load(std::memory_order_acquire);
  if (g == nullptr || handle == nullptr) return;
  const Split h = g->joins.split(handle, scout_salt(g));
  if (h.scout != nullptr) scout_record(version, h.scout, state, args);
  if (h.del != nullptr) g->t.record(h.del, state, args);
}

void fwd_finalize(int version, void* ctx) {
  std::lock_guard<std::mutex> lk(g_mu);
  Delegation* g = g_delegation.load(std::memory_order_relaxed);
  if (g == nullptr) {
    scout_finalize(version, ctx);
    return;
  }
  const Split c = g->joins.split_context(ctx, scout_salt(g));
  if (c.scout != nullptr) scout_finalize(version, c.scout);
  if (c.del != nullptr) g->t.finalize(c.del);
  g->joins.free_context(ctx);
  if (ctx != nullptr && (c.scout != nullptr || c.del != nullptr) && --g->live <= 0) close_delegation(g);
}

int delegate_version() {
  Delegation* g = g_delegation.load(std::memory_order_acquire);
  return g != nullptr ? g->t.version : 0;
}

uint64_t delegate_stale_handles() {
  Delegation* g = g_delegation.load(std::memory_order_acquire);
  return g != nullptr ? g->joins.stale() : 0;
}

}  // namespace scout::abi_hook
