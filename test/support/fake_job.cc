#include "test/support/fake_job.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "common/names.h"
#include "common/paths.h"

namespace scout::testing {

using namespace scout::shm;

FakeJob::FakeJob(const std::string& dir, const std::string& job, int nprocs, const std::string& host,
                 uint32_t ring_capacity, uint32_t max_comms, int first_rank)
    : dead_(std::make_shared<std::set<int>>()), first_rank_(first_rank) {
  std::string stage = dir + "/.stage";
  ::mkdir(stage.c_str(), 0700);
  for (int p = 0; p < nprocs; ++p) {
    SegmentIdentity id;
    id.job = job;
    id.host = host;
    id.gpu = "GPU-" + std::to_string(p);
    id.global_rank = first_rank + p;
    id.local_rank = first_rank + p;
    id.world_size = nprocs;
    id.cuda_dev = p;
    id.plugin_version = "test";
    std::string err;
    auto w = SegmentWriter::create(stage, id, max_comms, ring_capacity, &err);
    if (!w) throw std::runtime_error("FakeJob: " + err);
    std::string path = dir + "/" + segment_name(job, host, pid(p));
    if (::rename(w->path().c_str(), path.c_str()) != 0) throw std::runtime_error("FakeJob: rename failed");
    w->header()->owner_pid = pid(p);
    w->header()->owner_start_ticks = 0;
    segs_.push_back(std::move(w));
    paths_.push_back(path);
  }
  ::rmdir(stage.c_str());
}

FakeJob::~FakeJob() = default;

int FakeJob::add_comm(uint64_t hash, const std::vector<int>& members, const std::string& name, int nranks,
                      const std::vector<int>& comm_ranks, int nnodes) {
  CommInfo c;
  c.hash = hash;
  c.members = members;
  int n = nranks > 0 ? nranks : int(members.size());
  for (int r = 0; r < int(members.size()); ++r) {
    int rank = comm_ranks.empty() ? r : comm_ranks[r];
    RingWriter* ring = segs_[members[r]]->open_ring(hash, n, rank, nnodes, name.c_str(), members[r]);
    if (!ring) throw std::runtime_error("FakeJob: no free ring");
    c.rings.push_back(ring);
  }
  comms_.push_back(c);
  return int(comms_.size()) - 1;
}

FakeRec FakeJob::enqueue(int comm, int rank, const OpSpec& s) {
  RingWriter* ring = comms_[comm].rings[rank];
  FakeRec r;
  r.rec = ring->begin(&r.index);
  OpRecord* o = r.rec;
  o->key = s.key;
  o->kind = s.kind;
  o->func = s.func;
  o->datatype = s.datatype;
  o->api_datatype = s.datatype;
  o->algo = kAlgoRing;
  o->proto = kProtoSimple;
  o->n_channels = s.n_channels;
  o->n_warps = 8;
  o->flags = s.flags;
  o->peer = s.peer;
  o->count = s.count;
  o->api_count = s.count;
  o->bytes = s.count * shm::datatype_size(s.datatype);
  o->api_ns = s.enqueue_ns;
  o->launch_ns = s.enqueue_ns;
  o->enqueue_ns = s.enqueue_ns;
  o->thread = 1;
  o->state.store(kStateEnqueued, std::memory_order_relaxed);
  RingWriter::publish(o, r.index);
  return r;
}

void FakeJob::start(const FakeRec& r, int64_t gpu_start_ns) {
  r.rec->gpu_start_ns.store(gpu_start_ns, std::memory_order_relaxed);
  r.rec->ch_started.store(r.rec->n_channels, std::memory_order_relaxed);
  r.rec->state.store(kStateRunning, std::memory_order_release);
}

void FakeJob::complete(const FakeRec& r, int64_t gpu_end_ns) {
  r.rec->gpu_end_ns.store(gpu_end_ns, std::memory_order_relaxed);
  r.rec->complete_ns.store(gpu_end_ns + 1000, std::memory_order_relaxed);
  r.rec->ch_stopped.store(r.rec->n_channels, std::memory_order_relaxed);
  r.rec->state.store(kStateComplete, std::memory_order_release);
}

void FakeJob::fp_recv(const FakeRec& r, uint64_t value, uint32_t nan, uint32_t inf) {
  r.rec->fp_recv = value;
  r.rec->recv_nan = nan;
  r.rec->recv_inf = inf;
  r.rec->fp_bytes = r.rec->bytes;
  r.rec->fp_version = 1;
  r.rec->fp_recv_word.store(fp_word(r.index, kFpDone), std::memory_order_release);
}

void FakeJob::fp_send(const FakeRec& r, uint64_t value, uint32_t nan, uint32_t inf) {
  r.rec->fp_send = value;
  r.rec->send_nan = nan;
  r.rec->send_inf = inf;
  r.rec->fp_bytes = r.rec->bytes;
  r.rec->fp_version = 1;
  r.rec->fp_send_word.store(fp_word(r.index, kFpDone), std::memory_order_release);
}

void FakeJob::fp_pending(const FakeRec& r) {
  r.rec->fp_recv_word.store(fp_word(r.index, kFpPending), std::memory_order_release);
}

void FakeJob::collective(int comm, const FakeColl& c) {
  int n = nranks(comm);
  int64_t last = 0;
  std::vector<int64_t> starts(n);
  for (int r = 0; r < n; ++r) {
    starts[r] = c.start.empty() ? c.t0 + 10'000 : c.start[r];
    last = std::max(last, starts[r]);
  }
  for (int r = 0; r < n; ++r) {
    OpSpec s;
    s.func = c.func;
    s.key = c.seq;
    s.datatype = c.datatype;
    s.count = c.counts.empty() ? c.count : c.counts[r];
    s.peer = c.root;
    s.enqueue_ns = c.t0;
    FakeRec rec = enqueue(comm, r, s);
    if (!c.send_nan.empty()) fp_send(rec, 0x5e4d000000000000ull + r, c.send_nan[r], 0);
    start(rec, starts[r]);
    complete(rec, last + c.duration_ns);
    if (!c.fp_recv.empty()) fp_recv(rec, c.fp_recv[r]);
  }
}

void FakeJob::p2p(int comm, int src, int dst, uint64_t k, int64_t t0, int64_t start_ns, int64_t duration_ns,
                  uint64_t bytes) {
  OpSpec s;
  s.kind = kKindSend;
  s.func = kFuncSend;
  s.key = k;
  s.datatype = kTypeUint8;
  s.count = bytes;
  s.peer = dst;
  s.enqueue_ns = t0;
  s.n_channels = 1;
  FakeRec a = enqueue(comm, src, s);
  s.kind = kKindRecv;
  s.func = kFuncRecv;
  s.peer = src;
  FakeRec b = enqueue(comm, dst, s);
  start(a, start_ns);
  start(b, start_ns);
  complete(a, start_ns + duration_ns);
  complete(b, start_ns + duration_ns);
}

void FakeJob::kill(int proc, bool finalized) {
  dead_->insert(pid(proc));
  if (finalized) segs_[proc]->header()->closed_ns.store(kT0, std::memory_order_relaxed);
}

bool FakeJob::alive(int p) const { return !dead_->count(p); }

std::function<bool(int, uint64_t)> FakeJob::liveness() const {
  auto dead = dead_;
  return [dead](int p, uint64_t) { return !dead->count(p); };
}

void history(FakeJob& job, int comm, int n, int64_t t) {
  for (int s = 0; s < n; ++s) {
    FakeColl c;
    c.seq = uint64_t(s);
    c.t0 = t + s * 10 * kMs;
    job.collective(comm, c);
  }
}

FakeColl allreduce_with(uint64_t seq, std::vector<uint64_t> fp) {
  FakeColl c;
  c.seq = seq;
  c.t0 = kT0 + int64_t(seq) * 10 * kMs;
  c.fp_recv = std::move(fp);
  return c;
}

FakeRec op(FakeJob& job, int comm, int rank, uint8_t func, uint64_t seq, int64_t t, bool started) {
  OpSpec s;
  s.func = func;
  s.key = seq;
  s.enqueue_ns = t;
  FakeRec r = job.enqueue(comm, rank, s);
  if (started) FakeJob::start(r, t + 10'000);
  return r;
}

}  // namespace scout::testing
