#include "test/support/net_workload.h"

#include <algorithm>
#include <string>

#include "test/support/mix64.h"

namespace scout::testing {

namespace {
// NCCL function ids (scout::shm::Func): AllReduce, AllGather, ReduceScatter, Broadcast, Reduce.
constexpr uint8_t kFuncs[] = {4, 2, 3, 0, 1};
}  // namespace

NetWorkload::NetWorkload(int nodes, int ranks_per_node, int funcs, int64_t period_ns)
    : nodes_(nodes), ranks_per_node_(ranks_per_node), funcs_(std::clamp(funcs, 1, 5)), period_(period_ns) {}

uint64_t NetWorkload::comm_hash(int l) const { return mix64(0xd9000000ull + uint64_t(l)); }
uint8_t NetWorkload::func_at(int i) const { return kFuncs[i]; }

namespace {
uint64_t meta_hash(uint64_t comm, uint8_t func, uint64_t count) { return mix64(comm ^ (uint64_t(func) << 56) ^ count); }
bool recv_agrees(uint8_t func) { return func == 4 || func == 2 || func == 0; }
}  // namespace

uint64_t NetWorkload::meta_of(uint64_t comm, uint8_t func, uint64_t seq) const {
  return meta_hash(comm, func, count_of(seq));
}
uint64_t NetWorkload::fp_of(uint64_t comm, uint8_t func, uint64_t seq) const {
  return mix64(comm * 31 + func * 7 + seq * 1000003);
}

uint64_t NetWorkload::comm_completed(int l, int64_t t) const {
  uint64_t c = progress_at(t);
  for (const auto& [g, seq] : stop_) {
    if (g % ranks_per_node_ == l) c = std::min(c, seq);
  }
  return c;
}

uint64_t NetWorkload::rank_enqueued(int g, int64_t t) const {
  const int l = g % ranks_per_node_;
  uint64_t completed = comm_completed(l, t);
  auto it = stop_.find(g);
  if (it != stop_.end()) return std::min(progress_at(t), it->second);
  // A rank waiting in a stopped communicator has enqueued the op it waits in.
  return completed < progress_at(t) ? completed + 1 : completed;
}

NetWorkload::Node::Node(const NetWorkload* job, int node, int64_t offset) : job_(job), node_(node), offset_(offset) {}

std::vector<net::StreamView> NetWorkload::Node::streams() {
  const int64_t now = t_.load();
  std::vector<net::StreamView> out;
  if (job_->nodes_ < 2) return out;  // one node: nothing crosses the network
  if (now < hidden_until_) return out;
  for (int l = 0; l < job_->ranks_per_node_; ++l) {
    const int g = node_ * job_->ranks_per_node_ + l;
    for (int f = 0; f < job_->funcs_; ++f) {
      net::StreamView s;
      s.comm_hash = job_->comm_hash(l);
      s.func = kFuncs[f];
      s.nranks = job_->nodes_;
      s.comm_name = "dp" + std::to_string(l);
      s.completed = job_->comm_completed(l, now);
      s.enqueued = job_->rank_enqueued(g, now);
      net::RankProgressView p;
      p.comm_rank = node_;
      p.global_rank = g;
      p.enqueued = s.enqueued;
      p.started = s.enqueued;
      p.completed = s.completed;
      p.last_event_ns = now + offset_;
      s.ranks.push_back(p);
      out.push_back(std::move(s));
    }
  }
  return out;
}

bool NetWorkload::Node::op(uint64_t comm, uint8_t func, uint64_t seq, std::vector<net::RankOpView>* out) {
  const int64_t now = t_.load();
  for (int l = 0; l < job_->ranks_per_node_; ++l) {
    if (job_->comm_hash(l) != comm) continue;
    const uint64_t done = job_->comm_completed(l, now);
    if (seq >= done || seq + job_->retain_ < done) return false;
    const int g = node_ * job_->ranks_per_node_ + l;
    net::RankOpView r;
    r.comm_rank = node_;
    r.global_rank = g;
    uint64_t count = job_->count_of(seq);
    if (auto it = job_->meta_fault_.find(g); it != job_->meta_fault_.end() && seq >= it->second) count /= 2;
    r.meta = meta_hash(comm, func, count);
    if (recv_agrees(func)) {
      r.fp_recv = job_->fp_of(comm, func, seq);
      if (auto it = job_->fp_fault_.find(g); it != job_->fp_fault_.end() && seq >= it->second) r.fp_recv ^= 0x1000;
      if (job_->fp_once_.count({g, seq})) r.fp_recv ^= 0x2000;
    }
    const int64_t start = int64_t(seq) * job_->period_ - job_->period_ / 2;
    int64_t late = 0;
    if (auto it = job_->delay_.find(g); it != job_->delay_.end()) late = it->second;
    r.arrival_ns = start + late + offset_;
    r.end_ns = int64_t(seq + 1) * job_->period_ - 1000 + offset_;
    r.gap_ns = job_->period_ / 2 + late;  // its previous operation ended half a period before it was due
    shm::RecordSnapshot& rec = r.rec;
    rec.index = seq;
    rec.key = seq;
    rec.kind = shm::kKindColl;
    rec.func = func;
    rec.datatype = rec.api_datatype = shm::kTypeFloat32;
    rec.count = rec.api_count = count;
    rec.bytes = count * 4;
    rec.api_ns = rec.enqueue_ns = start - 1000 + offset_;
    rec.state = shm::kStateComplete;
    rec.gpu_start_ns = r.arrival_ns;
    rec.gpu_end_ns = rec.complete_ns = r.end_ns;
    if (recv_agrees(func)) {
      rec.fp_recv_status = shm::kFpDone;
      rec.fp_recv = r.fp_recv;
      rec.fp_bytes = rec.bytes;
      rec.fp_version = 1;
    }
    out->push_back(r);
    return true;
  }
  return false;
}

net::WaitSnapshot NetWorkload::Node::wait_snapshot() {
  const int64_t now = t_.load();
  net::WaitSnapshot w;
  if (job_->nodes_ < 2) return w;
  for (int l = 0; l < job_->ranks_per_node_; ++l) {
    const int g = node_ * job_->ranks_per_node_ + l;
    w.procs.push_back(
        {g, l, "node" + std::to_string(node_), 1000 + g, "GPU-" + std::to_string(g), l, 0, now + offset_, 0});
    net::CommWaitView c;
    c.comm_hash = job_->comm_hash(l);
    c.nranks = job_->nodes_;
    c.name = "dp" + std::to_string(l);
    c.nnodes = job_->nodes_;
    const uint64_t done = job_->comm_completed(l, now), enq = job_->rank_enqueued(g, now);
    c.last_progress_ns = int64_t(done) * job_->period_ + offset_;
    net::MemberView m;
    m.comm_rank = node_;
    m.proc = l;
    m.init_ns = offset_ + 1;
    for (int f = 0; f < job_->funcs_; ++f) {
      m.issued[kFuncs[f]] = m.started[kFuncs[f]] = enq;
      m.completed[kFuncs[f]] = done;
      if (enq <= done) continue;
      shm::RecordSnapshot rec;  // waits inside operation `done`
      rec.index = done * 8 + uint64_t(f);
      rec.key = done;
      rec.kind = shm::kKindColl;
      rec.func = kFuncs[f];
      rec.datatype = rec.api_datatype = shm::kTypeFloat32;
      rec.count = rec.api_count = job_->count_of(done);
      rec.api_ns = rec.enqueue_ns = int64_t(done) * job_->period_ + offset_;
      rec.gpu_start_ns = rec.enqueue_ns + 1000;
      rec.state = shm::kStateRunning;
      m.records.push_back(rec);
    }
    c.members.push_back(std::move(m));
    w.comms.push_back(std::move(c));
  }
  return w;
}

net::RankIdentity NetWorkload::Node::identity(int g) {
  return {g, "node" + std::to_string(g / job_->ranks_per_node_), 1000 + g, "GPU-" + std::to_string(g)};
}

}  // namespace scout::testing
