#include "test/sim/fabric.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "test/sim/futex.h"
#include "test/sim/workload.h"

namespace scout::sim {
namespace {

struct FabricHeader {
  uint64_t magic;
  uint64_t bytes;
  int32_t nranks;
  int32_t n_comms;
};

constexpr uint64_t round64(uint64_t v) { return (v + 63) & ~uint64_t(63); }

}  // namespace

FabricLayout FabricLayout::plan(const Layout& layout, const SimOptions& o) {
  FabricLayout fl;
  fl.nranks = layout.world_size();
  const auto& specs = layout.comms();
  fl.comms.resize(specs.size());
  std::vector<uint64_t> stage(specs.size(), 0), result(specs.size(), 0), msg(specs.size(), 0);
  for (size_t c = 0; c < specs.size(); ++c) {
    int n = specs[c].nranks();
    fl.comms[c].nranks = n;
    fl.comms[c].pair.assign(static_cast<size_t>(n) * n, -1);
  }
  // Step 0 holds every kind of call a rank makes (later steps are subsets of it).
  for (int g = 0; g < layout.world_size(); ++g) {
    for (const Action& a : step_actions(layout, o, g, 0)) {
      if (!a.is_op()) continue;
      const CommSpec* s = layout.comm_of(g, a.comm);
      if (!s) continue;
      int n = s->nranks();
      int me = s->rank_of(g);
      CommRegion& r = fl.comms[s->id];
      if (a.kind == ActionKind::kColl) {
        stage[s->id] = std::max(stage[s->id], action_send_elems(a, n, true) * kFloatBytes);
        if (a.func == Func::kAllReduce) result[s->id] = std::max(result[s->id], a.count * kFloatBytes);
      } else if (a.kind == ActionKind::kSend) {
        r.pair[static_cast<size_t>(me) * n + a.peer] = 0;
        msg[s->id] = std::max(msg[s->id], a.count * kFloatBytes);
      } else if (a.kind == ActionKind::kAlltoAll) {
        for (int p = 0; p < n; ++p) r.pair[static_cast<size_t>(me) * n + p] = 0;
        msg[s->id] = std::max(msg[s->id], a.count * kFloatBytes);
      }
    }
  }
  uint64_t off = round64(sizeof(FabricHeader));
  fl.status_off = off;
  off += round64(sizeof(RankStatus) * fl.nranks);
  for (size_t c = 0; c < specs.size(); ++c) {
    CommRegion& r = fl.comms[c];
    int n = r.nranks;
    r.barrier_off = off;
    off += round64(sizeof(Barrier));
    r.stage_bytes = round64(stage[c]);  // the largest input one rank stages
    r.result_bytes = round64(result[c]);
    r.coll_stride = round64(sizeof(CollSlotHdr)) + round64(sizeof(uint64_t) * n) + r.stage_bytes * n + r.result_bytes;
    r.coll_off = off;
    off += r.coll_stride * kSlotDepth;
    int n_mbox = 0;
    for (int& p : r.pair)
      if (p == 0) p = n_mbox++;
    r.mbox_slot_bytes = round64(msg[c]);
    r.mbox_stride = round64(sizeof(MailboxHdr)) + r.mbox_slot_bytes * kSlotDepth;
    r.mbox_off = off;
    off += r.mbox_stride * n_mbox;
  }
  fl.bytes = off;
  return fl;
}

std::unique_ptr<Fabric> Fabric::create(const FabricLayout& fl, std::string* error) {
  int fd = ::memfd_create("scout-sim-fabric", 0);  // no MFD_CLOEXEC: workers inherit it
  if (fd < 0) {
    *error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  if (::ftruncate(fd, static_cast<off_t>(fl.bytes)) != 0) {
    *error = std::string("ftruncate fabric: ") + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  auto f = attach(fd, fl, nullptr);
  if (!f) {
    *error = std::string("mmap fabric: ") + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  auto* h = reinterpret_cast<FabricHeader*>(f->base_);
  h->bytes = fl.bytes;
  h->nranks = fl.nranks;
  h->n_comms = static_cast<int32_t>(fl.comms.size());
  h->magic = kFabricMagic;
  return f;
}

std::unique_ptr<Fabric> Fabric::attach(int fd, const FabricLayout& fl, std::string* error) {
  void* p = ::mmap(nullptr, fl.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    if (error) *error = std::string("mmap fabric: ") + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<Fabric> f(new Fabric());
  f->fl_ = fl;
  f->fd_ = fd;
  f->base_ = static_cast<char*>(p);
  if (error) {  // attaching to the launcher's fabric: check it is the one we expect
    auto* h = reinterpret_cast<FabricHeader*>(f->base_);
    if (h->magic != kFabricMagic || h->bytes != fl.bytes || h->nranks != fl.nranks) {
      *error = "fabric header does not match the job's layout";
      return nullptr;
    }
  }
  return f;
}

Fabric::~Fabric() {
  if (base_) ::munmap(base_, fl_.bytes);
  if (fd_ >= 0) ::close(fd_);
}

RankStatus* Fabric::rank_status(int g) { return reinterpret_cast<RankStatus*>(at(fl_.status_off)) + g; }

Barrier* Fabric::barrier(int comm) { return reinterpret_cast<Barrier*>(at(fl_.comms[comm].barrier_off)); }

CollSlotHdr* Fabric::coll_slot(int comm, int slot) {
  const CommRegion& r = fl_.comms[comm];
  return reinterpret_cast<CollSlotHdr*>(at(r.coll_off + r.coll_stride * slot));
}

uint64_t* Fabric::slot_counts(int comm, int slot) {
  return reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(coll_slot(comm, slot)) + round64(sizeof(CollSlotHdr)));
}

char* Fabric::staging(int comm, int slot, int rank) {
  const CommRegion& r = fl_.comms[comm];
  return reinterpret_cast<char*>(coll_slot(comm, slot)) + round64(sizeof(CollSlotHdr)) +
         round64(sizeof(uint64_t) * r.nranks) + r.stage_bytes * rank;
}

char* Fabric::result(int comm, int slot) {
  const CommRegion& r = fl_.comms[comm];
  return staging(comm, slot, 0) + r.stage_bytes * r.nranks;
}

MailboxHdr* Fabric::mailbox(int comm, int from, int to) {
  const CommRegion& r = fl_.comms[comm];
  if (from < 0 || to < 0 || from >= r.nranks || to >= r.nranks) return nullptr;
  int idx = r.pair[static_cast<size_t>(from) * r.nranks + to];
  if (idx < 0) return nullptr;
  return reinterpret_cast<MailboxHdr*>(at(r.mbox_off + r.mbox_stride * idx));
}

char* Fabric::mailbox_data(int comm, int from, int to, int slot) {
  const CommRegion& r = fl_.comms[comm];
  return reinterpret_cast<char*>(mailbox(comm, from, to)) + round64(sizeof(MailboxHdr)) + r.mbox_slot_bytes * slot;
}

void barrier_wait(Barrier* b, int n, uint64_t* round) {
  uint64_t target = (*round + 1) * static_cast<uint64_t>(n);
  uint64_t a = b->arrived.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (a == target)
    publish(&b->epoch);
  else
    wait_for(&b->epoch, [&] { return b->arrived.load(std::memory_order_acquire) >= target; });
  ++*round;
}

}  // namespace scout::sim
