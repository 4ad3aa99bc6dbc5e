// An independent Inspector-like profiler plugin for scout's tests: the second profiler plugin that
// scout forwards to (SCOUT_PROFILER_DELEGATE; docs/plugin.md "A second profiler plugin"). It
// behaves as NVIDIA's Inspector is documented to (docs/nccl-notes.md §5.1): it asks for Coll |
// KernelCh (plus P2p), keeps a collective alive until NCCL stopped it and every channel's
// KernelCh stopped, takes its time as the longest channel's GPU time, and writes what it measured
// to its own output file. It also checks that every context, parent and handle it is given is one
// of its own (a registry of live objects, looked up before any use, so a misrouted value is
// counted, never followed).
//
// Output: $INSPECTISH_DUMP_DIR (default ".")/inspectish.<pid>.jsonl, one JSON object per line:
//   {"op":"AllReduce","comm":"0x..","rank":R,"nranks":N,"seq":S,"bytes":B,"channels":C,"gpu_ns":T,"abi":V}
//   {"finalize":"0x..","rank":R,"ops":N,"foreign":F,"others":O,"others_stopped":P,"abi":V}
// F: values it was given that were not its own. $INSPECTISH_EXTRA_MASK adds event types to its
// mask; events of those types get a handle of their own, O counts their starts, P their stops.
//
// Built three times (Makefile):
//   libnccl-profiler-inspectish.so       exports ncclProfiler_v5 only (as Inspector does)
//   libnccl-profiler-inspectish-all.so   (PD_ALL_VERSIONS) exports v4, v5 and v6
//   libnccl-profiler-noop.so             (PD_NOOP) v5; asks for $PD_MASK (default Coll | KernelCh),
//                                        returns one static handle for every event and does nothing
//                                        else: the forwarding cost in plugin_cost_bench.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>

#include "scout/nccl_profiler_abi.h"

namespace {

using namespace scout;

#ifdef PD_NOOP

int g_static_handle;
int g_static_ctx;
int* g_mask = nullptr;   // the int it was given at init (it may change it later, as NCCL allows)
int g_later = -1;        // $PD_MASK_LATER: written into that int at the 100th event
int g_events = 0;

template <class Descr>
abi::Result noop_start(void*, void** h, Descr*) {
  *h = &g_static_handle;
  if (g_later >= 0 && ++g_events == 100 && g_mask != nullptr) __atomic_store_n(g_mask, g_later, __ATOMIC_RELAXED);
  return abi::kSuccess;
}
abi::Result noop_stop(void*) { return abi::kSuccess; }
abi::Result noop_record(void*, int, abi::StateArgs*) { return abi::kSuccess; }
abi::Result noop_fini(void*) { return abi::kSuccess; }
abi::Result noop_init(void** ctx, uint64_t, int* mask, const char*, int, int, int, abi::Logger) {
  const char* m = std::getenv("PD_MASK");
  *mask = m != nullptr ? int(std::strtol(m, nullptr, 0)) : int(abi::kEvColl | abi::kEvKernelCh);
  const char* later = std::getenv("PD_MASK_LATER");
  g_later = later != nullptr ? int(std::strtol(later, nullptr, 0)) : -1;
  g_mask = mask;
  *ctx = &g_static_ctx;
  return abi::kSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
abi::ProfilerV5 ncclProfiler_v5 = {"noop", noop_init, noop_start<abi::DescrV5>, noop_stop, noop_record, noop_fini};
}

#else

constexpr uint64_t kMagicComm = 0x4d4d4f4349534e49ull;  // "INSICOMM"
constexpr uint64_t kMagicOp = 0x504f4349534e49ull;
constexpr uint64_t kMagicCh = 0x48434349534e49ull;
constexpr int kMaxChannels = 64;

constexpr uint64_t kMagicOther = 0x52544f4349534e49ull;

struct Comm {
  uint64_t magic = kMagicComm;
  uint64_t hash = 0;
  int rank = 0, nranks = 0, abi = 0;
  uint64_t ops = 0, foreign = 0, others = 0, others_stopped = 0;
};

// An event of an $INSPECTISH_EXTRA_MASK type.
struct Other {
  uint64_t magic = kMagicOther;
  Comm* comm = nullptr;
};

struct Op;
struct Channel {
  uint64_t magic = kMagicCh;
  Op* op = nullptr;
  uint64_t gpu_start = 0, gpu_stop = 0;
};

struct Op {
  uint64_t magic = kMagicOp;
  Comm* comm = nullptr;
  bool p2p = false;
  std::string func;
  uint64_t seq = 0, bytes = 0;
  int channels = 0, started = 0, done = 0;
  int refs = 1;  // NCCL's stop
  bool stopped = false;
  uint64_t longest = 0;
  Channel ch[kMaxChannels];
};

std::mutex g_mu;  // every object below; the plugin is a test fixture, not a fast path
std::unordered_set<const void*> g_live;
FILE* g_out = nullptr;
int g_comms = 0;
bool g_p2p = true;
int g_extra_mask = 0;
uint64_t g_foreign_unowned = 0;  // foreign values seen with no communicator to charge

bool live(const void* p) { return p != nullptr && g_live.count(p) != 0; }

size_t type_size(const char* dt) {
  if (dt == nullptr) return 1;
  std::string s(dt);
  if (s.find("64") != std::string::npos) return 8;
  if (s.find("32") != std::string::npos || s == "ncclInt" || s == "ncclFloat") return 4;
  if (s.find("16") != std::string::npos || s == "ncclHalf") return 2;
  return 1;
}

void open_output() {
  if (g_out != nullptr) return;
  const char* dir = std::getenv("INSPECTISH_DUMP_DIR");
  std::string path = std::string(dir != nullptr && *dir ? dir : ".") + "/inspectish." + std::to_string(::getpid()) +
                     ".jsonl";
  g_out = std::fopen(path.c_str(), "a");
  const char* p2p = std::getenv("INSPECTISH_P2P");
  g_p2p = p2p == nullptr || std::strcmp(p2p, "0") != 0;
  const char* extra = std::getenv("INSPECTISH_EXTRA_MASK");
  g_extra_mask = extra != nullptr ? int(std::strtol(extra, nullptr, 0)) : 0;
}

// The op is done when NCCL stopped it and every channel's KernelCh stopped.
void maybe_finish(Op* op) {
  if (!op->stopped || op->done < op->channels || op->started < op->channels) return;
  if (--op->refs > 0) return;
  Comm* c = op->comm;
  c->ops++;
  if (g_out != nullptr) {
    std::fprintf(g_out,
                 "{\"op\":\"%s\",\"comm\":\"0x%016" PRIx64 "\",\"rank\":%d,\"nranks\":%d,\"seq\":%" PRIu64
                 ",\"bytes\":%" PRIu64 ",\"channels\":%d,\"gpu_ns\":%" PRIu64 ",\"abi\":%d}\n",
                 op->func.c_str(), c->hash, c->rank, c->nranks, op->seq, op->bytes, op->channels, op->longest, c->abi);
  }
  g_live.erase(op);
  for (auto& ch : op->ch) g_live.erase(&ch);
  delete op;
}

abi::Result init_common(int abi_version, void** ctx, uint64_t hash, int* mask, int nranks, int rank) {
  std::lock_guard<std::mutex> lk(g_mu);
  open_output();
  auto* c = new (std::nothrow) Comm;
  if (c == nullptr) {
    *ctx = nullptr;
    return abi::kSuccess;
  }
  c->hash = hash;
  c->rank = rank;
  c->nranks = nranks;
  c->abi = abi_version;
  g_live.insert(c);
  g_comms++;
  *ctx = c;
  *mask = int(abi::kEvColl | abi::kEvKernelCh | (g_p2p ? abi::kEvP2p : 0)) | g_extra_mask;
  return abi::kSuccess;
}

abi::Result init_v5(void** ctx, uint64_t hash, int* mask, const char*, int, int nranks, int rank, abi::Logger) {
  return init_common(5, ctx, hash, mask, nranks, rank);
}
[[maybe_unused]] abi::Result init_v6(void** ctx, uint64_t hash, int* mask, const char*, int, int nranks, int rank, abi::Logger) {
  return init_common(6, ctx, hash, mask, nranks, rank);
}
[[maybe_unused]] abi::Result init_v4(void** ctx, int* mask, const char*, uint64_t hash, int, int nranks, int rank, abi::Logger) {
  return init_common(4, ctx, hash, mask, nranks, rank);
}

void foreign(Comm* c) {
  if (c != nullptr) {
    c->foreign++;
  } else {
    g_foreign_unowned++;
  }
}

// Coll/P2p (fields shared by the v4 and v5 layouts are passed in) and KernelCh.
void start_op(void* ctx, void** h, bool p2p, const char* func, uint64_t seq, size_t count, const char* dt, int nch) {
  Comm* c = live(ctx) && static_cast<Comm*>(ctx)->magic == kMagicComm ? static_cast<Comm*>(ctx) : nullptr;
  if (c == nullptr) {
    if (ctx != nullptr) foreign(nullptr);
    return;
  }
  if (p2p && !g_p2p) return;
  auto* op = new (std::nothrow) Op;
  if (op == nullptr) return;
  op->comm = c;
  op->p2p = p2p;
  op->func = func != nullptr ? func : "?";
  op->seq = seq;
  op->bytes = uint64_t(count) * type_size(dt);
  op->channels = nch > kMaxChannels ? kMaxChannels : nch;
  g_live.insert(op);
  *h = op;
}

void start_kernel_ch(void* ctx, void** h, void* parent, uint8_t channel, uint64_t ptimer) {
  if (parent == nullptr) return;  // an op it did not track
  if (!live(parent) || static_cast<Op*>(parent)->magic != kMagicOp) {
    foreign(live(ctx) ? static_cast<Comm*>(ctx) : nullptr);
    return;
  }
  Op* op = static_cast<Op*>(parent);
  Channel& ch = op->ch[channel % kMaxChannels];
  ch.op = op;
  ch.gpu_start = ptimer;
  op->started++;
  g_live.insert(&ch);
  *h = &ch;
}

// Any other type: the context must still be its own; a type of $INSPECTISH_EXTRA_MASK gets a handle.
void start_other(void* ctx, void** h, uint64_t type) {
  if (ctx != nullptr && !live(ctx)) {
    foreign(nullptr);
    return;
  }
  if (ctx == nullptr || (type & uint64_t(unsigned(g_extra_mask))) == 0) return;
  auto* o = new (std::nothrow) Other;
  if (o == nullptr) return;
  o->comm = static_cast<Comm*>(ctx);
  o->comm->others++;
  g_live.insert(o);
  *h = o;
}

abi::Result start_v5_locked(void* ctx, void** h, const abi::DescrV5* d) {
  switch (d->type) {
    case abi::kEvColl:
      start_op(ctx, h, false, d->coll.func, d->coll.seqNumber, d->coll.count, d->coll.datatype, d->coll.nChannels);
      break;
    case abi::kEvP2p: start_op(ctx, h, true, d->p2p.func, 0, d->p2p.count, d->p2p.datatype, d->p2p.nChannels); break;
    case abi::kEvKernelCh: start_kernel_ch(ctx, h, d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer); break;
    default: start_other(ctx, h, d->type); break;
  }
  return abi::kSuccess;
}

abi::Result start_v5(void* ctx, void** h, abi::DescrV5* d) {
  if (h == nullptr) return abi::kSuccess;
  *h = nullptr;
  if (d == nullptr) return abi::kSuccess;
  std::lock_guard<std::mutex> lk(g_mu);
  return start_v5_locked(ctx, h, d);
}

[[maybe_unused]] abi::Result start_v6(void* ctx, void** h, abi::DescrV6* d) {
  return start_v5(ctx, h, reinterpret_cast<abi::DescrV5*>(d));  // same layout for v5 types
}

[[maybe_unused]] abi::Result start_v4(void* ctx, void** h, abi::DescrV4* d) {
  if (h == nullptr) return abi::kSuccess;
  *h = nullptr;
  if (d == nullptr) return abi::kSuccess;
  std::lock_guard<std::mutex> lk(g_mu);
  switch (d->type) {
    case abi::kEvColl:
      start_op(ctx, h, false, d->coll.func, d->coll.seqNumber, d->coll.count, d->coll.datatype, d->coll.nChannels);
      break;
    case abi::kEvP2p: start_op(ctx, h, true, d->p2p.func, 0, d->p2p.count, d->p2p.datatype, 1); break;
    case abi::kEvKernelCh: start_kernel_ch(ctx, h, d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer); break;
    default: start_other(ctx, h, d->type); break;
  }
  return abi::kSuccess;
}

abi::Result stop(void* h) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (h == nullptr) return abi::kSuccess;
  if (!live(h)) {
    foreign(nullptr);
    return abi::kSuccess;
  }
  const uint64_t magic = *static_cast<const uint64_t*>(h);
  if (magic == kMagicOp) {
    Op* op = static_cast<Op*>(h);
    op->stopped = true;
    maybe_finish(op);
  } else if (magic == kMagicOther) {
    Other* o = static_cast<Other*>(h);
    if (live(o->comm)) o->comm->others_stopped++;
    g_live.erase(o);
    delete o;
  } else if (magic == kMagicCh) {
    Channel* ch = static_cast<Channel*>(h);
    Op* op = ch->op;
    g_live.erase(ch);
    op->done++;
    if (ch->gpu_stop > ch->gpu_start && ch->gpu_stop - ch->gpu_start > op->longest) {
      op->longest = ch->gpu_stop - ch->gpu_start;
    }
    maybe_finish(op);
  }
  return abi::kSuccess;
}

abi::Result record(void* h, int state, abi::StateArgs* args) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (h == nullptr) return abi::kSuccess;
  if (!live(h)) {
    foreign(nullptr);
    return abi::kSuccess;
  }
  if (state == abi::kStateKernelChStop && args != nullptr && *static_cast<const uint64_t*>(h) == kMagicCh) {
    static_cast<Channel*>(h)->gpu_stop = args->kernelCh.pTimer;
  }
  return abi::kSuccess;
}

abi::Result fini(void* ctx) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (!live(ctx) || static_cast<Comm*>(ctx)->magic != kMagicComm) {
    foreign(nullptr);
    return abi::kSuccess;
  }
  Comm* c = static_cast<Comm*>(ctx);
  if (g_out != nullptr) {
    std::fprintf(g_out,
                 "{\"finalize\":\"0x%016" PRIx64 "\",\"rank\":%d,\"ops\":%" PRIu64 ",\"foreign\":%" PRIu64
                 ",\"others\":%" PRIu64 ",\"others_stopped\":%" PRIu64 ",\"abi\":%d}\n",
                 c->hash, c->rank, c->ops, c->foreign + g_foreign_unowned, c->others, c->others_stopped, c->abi);
    g_foreign_unowned = 0;
    std::fflush(g_out);
  }
  g_live.erase(c);
  delete c;
  if (--g_comms == 0 && g_out != nullptr) {
    std::fclose(g_out);
    g_out = nullptr;
  }
  return abi::kSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
abi::ProfilerV5 ncclProfiler_v5 = {"Inspectish", init_v5, start_v5, stop, record, fini};
#ifdef PD_ALL_VERSIONS
__attribute__((visibility("default")))
abi::ProfilerV4 ncclProfiler_v4 = {"Inspectish", init_v4, start_v4, stop, record, fini};
__attribute__((visibility("default")))
abi::ProfilerV6 ncclProfiler_v6 = {"Inspectish", init_v6, start_v6, stop, record, fini};
#endif
}

#endif
