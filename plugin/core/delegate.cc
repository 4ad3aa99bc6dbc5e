// The delegate profiler plugin: opening, routing and joined handles (delegate.h).
#include "plugin/core/delegate.h"

#include <dlfcn.h>
#include <sys/random.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <new>

#include "plugin/core/clock.h"
#include "plugin/core/library.h"
#include "plugin/core/v4_adapter.h"

namespace scout::core::dlg {
namespace {

bool iequals(const std::string& a, const char* b) {
  if (a.size() != std::strlen(b)) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

template <class T>
bool complete(const T* t) {
  return t->init != nullptr && t->startEvent != nullptr && t->stopEvent != nullptr && t->recordEventState != nullptr &&
         t->finalize != nullptr;
}

uint16_t draw_salt() {
  uint16_t s = 0;
  if (::getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s)) {
    const uint64_t mix = uint64_t(now_ns()) ^ (uint64_t(::getpid()) << 21);
    s = uint16_t(mix ^ (mix >> 16) ^ (mix >> 32));
  }
  return s == 0 ? 0x5c0u : s;
}

constexpr uint64_t kSeqMask = kPayloadMask;  // 44 bits of the join counter in the handle
constexpr int kCtxSlotBits = 12;
static_assert((1u << kCtxSlotBits) == kCtxSlots);

}  // namespace

bool open_delegate(const std::string& spec, int nccl_version, Table* out, void** dl, std::string* opened,
                   std::string* error) {
  *out = Table{};
  *dl = nullptr;
  if (spec.empty() || iequals(spec, "none")) {
    *error = spec.empty() ? "SCOUT_PROFILER_DELEGATE is empty" : "SCOUT_PROFILER_DELEGATE=none names no plugin";
    return false;
  }
  std::string err;
  std::string name;
  void* h = open_library(spec, "libnccl-profiler-", &name, &err);
  if (h == nullptr) {
    *error = "cannot open the delegate '" + spec + "': " + err;
    return false;
  }
  // NCCL's order (docs/nccl-notes.md §1.2), from the version NCCL itself uses down to v4.
  const void* sym = nullptr;
  int version = 0;
  for (int v = nccl_version; v >= 4 && sym == nullptr; --v) {
    const char* s = v == 6 ? abi::kSymbolV6 : v == 5 ? abi::kSymbolV5 : abi::kSymbolV4;
    sym = ::dlsym(h, s);
    version = v;
  }
  if (sym == nullptr) {
    *error = "the delegate '" + name + "' exports no ncclProfiler_v" +
             (nccl_version == 4   ? std::string("4")
              : nccl_version == 5 ? std::string("5 or _v4")
                                  : std::string("6, _v5 or _v4")) +
             " table (this NCCL calls profiler ABI v" + std::to_string(nccl_version) + ")";
    ::dlclose(h);
    return false;
  }
  if (library_of(sym) != 0 && library_of(sym) == library_of(reinterpret_cast<const void*>(&open_delegate))) {
    *error = "the delegate '" + name + "' is scout itself";
    ::dlclose(h);
    return false;
  }
  Table t;
  t.version = version;
  bool ok = false;
  if (version == 4) {
    const auto* p = static_cast<const abi::ProfilerV4*>(sym);
    ok = complete(p);
    t.name = p->name;
    t.init_v4 = p->init;
    t.start_v4 = p->startEvent;
    t.stop = p->stopEvent;
    t.record = p->recordEventState;
    t.finalize = p->finalize;
  } else if (version == 5) {
    const auto* p = static_cast<const abi::ProfilerV5*>(sym);
    ok = complete(p);
    t.name = p->name;
    t.init_v5 = p->init;
    t.start_v5 = p->startEvent;
    t.stop = p->stopEvent;
    t.record = p->recordEventState;
    t.finalize = p->finalize;
  } else {
    const auto* p = static_cast<const abi::ProfilerV6*>(sym);
    ok = complete(p);
    t.name = p->name;
    t.init_v5 = p->init;
    t.start_v6 = p->startEvent;
    t.stop = p->stopEvent;
    t.record = p->recordEventState;
    t.finalize = p->finalize;
  }
  if (!ok) {
    *error =
        "the delegate '" + name + "' has a NULL function in its ncclProfiler_v" + std::to_string(version) + " table";
    ::dlclose(h);
    return false;
  }
  if (t.name == nullptr) t.name = "";
  *out = t;
  *dl = h;
  *opened = name;
  return true;
}

uint64_t routed_types(int mask_in, int version) {
  using namespace abi;
  const uint64_t m = uint64_t(unsigned(mask_in));
  const uint64_t net_children = kEvProxyOp | kEvProxyStep | kEvKernelCh | kEvNetPlugin;
  const uint64_t ce = kEvCeColl | kEvCeSync | kEvCeBatch;
  uint64_t t = m;
  // The gates of docs/nccl-notes.md §2.2.
  if (m & (0xfffu & ~kEvProxyCtrl)) t |= kEvGroupApi;
  if (m & (kEvCollApi | kEvColl | net_children | ce)) t |= kEvCollApi;
  if (m & ce) t |= kEvGroupApi;
  if (m & (kEvP2pApi | kEvP2p | net_children)) t |= kEvP2pApi;
  if (m & (kEvGroup | kEvColl | kEvP2p | net_children)) t |= kEvGroup;
  if (m & (kEvColl | net_children)) t |= kEvColl;
  if (m & (kEvP2p | net_children)) t |= kEvP2p;
  if (m & (kEvProxyStep | kEvNetPlugin)) t |= kEvProxyOp;
  if (m & kEvNetPlugin) t |= kEvProxyStep;
  if (m & (kEvCeSync | kEvCeBatch)) t |= kEvCeColl;
  const uint64_t known = version >= 6 ? 0x7fffu : version == 5 ? 0xfffu : 0xffu;
  return t & known;
}

bool descr_to_v4(const abi::DescrV5& in, void* coll_parent_group, abi::DescrV4* out) {
  std::memset(out, 0, sizeof(*out));
  if (in.type > 0xff) return false;
  out->type = uint8_t(in.type);
  out->parentObj = in.parentObj;
  out->rank = in.rank;
  if (!copy_shared_members(in.type, in, out)) return false;
  if (in.type == abi::kEvColl || in.type == abi::kEvP2p) out->parentObj = coll_parent_group;
  if (in.type == abi::kEvP2p) out->p2p.nChannels = in.p2p.nChannels;
  return true;
}

bool Joins::init() {
  release();
  slots_ = new (std::nothrow) Slot[kPairSlots];
  ctx_ = new (std::nothrow) CtxSlot[kCtxSlots];
  if (slots_ == nullptr || ctx_ == nullptr) {
    release();
    return false;
  }
  salt_ = draw_salt();
  next_.store(1, std::memory_order_relaxed);
  stale_.store(0, std::memory_order_relaxed);
  return true;
}

void Joins::release() {
  delete[] slots_;
  delete[] ctx_;
  slots_ = nullptr;
  ctx_ = nullptr;
}

// A seqlock per slot: the sequence number is cleared, the halves written, then the number set.
void* Joins::join_slow(void* s, void* d) {
  const uint64_t n = next_.fetch_add(1, std::memory_order_relaxed) & kSeqMask;
  Slot& sl = slots_[n & (kPairSlots - 1)];
  sl.seq.store(0, std::memory_order_relaxed);
  // Release stores (not a fence, which ThreadSanitizer cannot model): a reader that sees a new
  // half also sees the cleared sequence number when it loads it again.
  sl.s.store(s, std::memory_order_release);
  sl.d.store(d, std::memory_order_release);
  sl.seq.store(n, std::memory_order_release);
  return to_ptr(encode(salt_, static_cast<HandleType>(kJoinedEvent), n));
}

Split Joins::split_slow(uint64_t v) const {
  const uint64_t n = v & kPayloadMask;
  const Slot& sl = slots_[n & (kPairSlots - 1)];
  if (n == 0 || sl.seq.load(std::memory_order_acquire) != n) {
    stale_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  // Acquire loads keep the second sequence check after both halves are read.
  Split out{sl.s.load(std::memory_order_acquire), sl.d.load(std::memory_order_acquire)};
  if (sl.seq.load(std::memory_order_relaxed) != n) {
    stale_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  return out;
}

void* Joins::join_context(void* s, void* d) {
  if (d == nullptr) return s;
  if (s == nullptr) return d;
  for (uint32_t i = 0; i < kCtxSlots; ++i) {
    CtxSlot& c = ctx_[i];
    if (c.s.load(std::memory_order_relaxed) != nullptr || c.d.load(std::memory_order_relaxed) != nullptr) continue;
    uint32_t gen = c.gen.load(std::memory_order_relaxed) + 1;
    if (gen == 0) gen = 1;
    c.gen.store(gen, std::memory_order_relaxed);
    c.s.store(s, std::memory_order_relaxed);
    c.d.store(d, std::memory_order_relaxed);
    return to_ptr(encode(salt_, static_cast<HandleType>(kJoinedContext), (uint64_t(gen) << kCtxSlotBits) | i));
  }
  return nullptr;  // every slot in use: the caller keeps scout's context alone
}

Split Joins::split_context(void* ctx, uint16_t scout_salt) const {
  const uint64_t v = reinterpret_cast<uintptr_t>(ctx);
  if (v == 0) return {};
  if (uint16_t(v >> kSaltShift) == salt_ && ((v >> kTypeShift) & 0xf) == kJoinedContext && ctx_ != nullptr) {
    const uint32_t i = uint32_t(v & (kCtxSlots - 1));
    const uint32_t gen = uint32_t((v & kPayloadMask) >> kCtxSlotBits);
    const CtxSlot& c = ctx_[i];
    Split out{c.s.load(std::memory_order_relaxed), c.d.load(std::memory_order_relaxed)};
    if (c.gen.load(std::memory_order_relaxed) != gen) return {};
    return out;
  }
  if (scout_salt != 0 && decode(ctx, scout_salt).type != HandleType::kInvalid) return {ctx, nullptr};
  return {nullptr, ctx};
}

void Joins::free_context(void* ctx) {
  const uint64_t v = reinterpret_cast<uintptr_t>(ctx);
  if (ctx_ == nullptr || uint16_t(v >> kSaltShift) != salt_ || ((v >> kTypeShift) & 0xf) != kJoinedContext) return;
  CtxSlot& c = ctx_[v & (kCtxSlots - 1)];
  if (c.gen.load(std::memory_order_relaxed) != uint32_t((v & kPayloadMask) >> kCtxSlotBits)) return;
  c.s.store(nullptr, std::memory_order_relaxed);
  c.d.store(nullptr, std::memory_order_relaxed);
}

}  // namespace scout::core::dlg
