#include "test/sim/nccl_api.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/segment_reader.h"
#include "test/sim/profiler_driver.h"
#include "test/sim/tuning.h"

namespace scout::sim {

NcclApi::Pending& NcclApi::pending_for(Communicator& comm) {
  for (Pending& p : pending_)
    if (p.comm == &comm) return p;
  pending_.push_back(Pending{&comm, {}, {}});
  return pending_.back();
}

void NcclApi::stop_forever(Func func, Communicator& comm, uint64_t key, int key_peer) {
  rc_->write_truth(truth_event(comm, FaultKind::kHang, func, key, key_peer, step_, static_cast<int64_t>(op_)));
  if (rc_->status) rc_->status->state.store(kRankHung, std::memory_order_release);
  // The rank never calls the API again; its earlier work keeps running on the proxy threads.
  for (;;) ::pause();
}

void NcclApi::stall_in_call(Func func, Communicator& comm, uint64_t key, int key_peer) {
  rc_->write_truth(
      truth_event(comm, FaultKind::kEnqueueStall, func, key, key_peer, step_, static_cast<int64_t>(op_) - 1));
  if (rc_->status) rc_->status->state.store(kRankHung, std::memory_order_release);
  // Alive, inside the call: nothing is enqueued or launched, the call never returns.
  for (;;) ::pause();
}

OpFaults NcclApi::begin_op(Func f, Communicator& comm, uint64_t key, int key_peer) {
  OpFaults faults = rc_->faults.at_op(op_);
  if (faults.hang) stop_forever(f, comm, key, key_peer);
  if (faults.straggler && rc_->first_time(faults.straggler)) {
    TruthEvent e = truth_event(comm, FaultKind::kStraggler, f, key, key_peer, step_, static_cast<int64_t>(op_));
    e.ms = faults.straggle_ms;
    rc_->write_truth(e);
  }
  return faults;
}

void NcclApi::group_start() { group_start_internal(); }

void NcclApi::group_end() { group_end_internal(); }

void NcclApi::group_api_begin(Communicator& comm) {
  // ncclProfilerStartGroupApiEvent: the mask is re-read at every API call.
  api_mask_ = rc_->load_mask();
  if (rc_->prof->loaded() && (api_mask_ & gate::kGroupApi) && profiler_group_depth_ == 0) {
    abi::DescrV5 d = blank_descr(abi::kEvGroupApi, nullptr, comm.rank());
    d.groupApi.graphCaptured = false;
    d.groupApi.groupDepth = group_depth_;
    rc_->prof->start(comm.context(), &group_api_, d);
    profiler_group_depth_ = group_depth_;
    group_api_state_ = 1;
  }
  // GroupStartApiStop, once per group.
  if (group_api_state_ == 1) {
    group_api_state_ = 2;
    rc_->prof->record(group_api_, abi::kStateGroupStartApiStop, nullptr);
  }
}

void NcclApi::coll(Func f, const float* send, float* recv, uint64_t count, int root, Communicator& comm) {
  // optype: the training code calls another collective here, on the same buffers: an AllReduce
  // of count c becomes an AllGather of c/n per rank (same receive bytes); any other collective
  // becomes an AllReduce of its count.
  const Func intended = f;
  const uint64_t intended_count = count;
  if (rc_->faults.at_op(op_).optype) {
    if (f == Func::kAllReduce) {
      f = Func::kAllGather;
      count = std::max<uint64_t>(count / comm.nranks(), 1);
    } else {
      f = Func::kAllReduce;
      if (!send) send = recv;  // a Broadcast receiver: in place
    }
  }
  OpFaults faults = begin_op(f, comm, comm.api_seq[static_cast<int>(f)], -1);
  if (faults.skip) {
    // The call is never made: no event, no seqNumber; the rank goes on with its next call.
    TruthEvent e = truth_event(comm, FaultKind::kSkip, f, comm.api_seq[static_cast<int>(f)], -1, step_,
                               static_cast<int64_t>(op_));
    rc_->write_truth(e);
    ++op_;
    if (rc_->status) rc_->status->ops.store(op_, std::memory_order_relaxed);
    return;
  }
  const uint64_t op = op_++;
  if (rc_->status) rc_->status->ops.store(op_, std::memory_order_relaxed);
  const uint64_t key = comm.api_seq[static_cast<int>(f)]++;
  auto truth = [&](FaultKind k) { return truth_event(comm, k, f, key, -1, step_, static_cast<int64_t>(op)); };
  if (faults.nan && send) {
    // The training code hands NCCL a buffer holding a NaN.
    uint64_t in_n = f == Func::kReduceScatter ? count * comm.nranks() : count;
    uint64_t element = in_n / 2;
    const_cast<float*>(send)[element] = std::numeric_limits<float>::quiet_NaN();
    TruthEvent e = truth(FaultKind::kNan);
    e.detail = "\"element\":" + std::to_string(element);
    rc_->write_truth(e);
  }
  if (faults.optype) {
    TruthEvent e = truth(FaultKind::kOptype);
    e.detail = std::string("\"func\":\"") + func_name(intended) + "\",\"count\":" + std::to_string(intended_count) +
               ",\"issued\":\"" + func_name(f) + "\",\"issued_count\":" + std::to_string(count);
    rc_->write_truth(e);
  }
  if (faults.dtype) {
    TruthEvent e = truth(FaultKind::kDtype);
    e.detail = std::string("\"datatype\":\"") + kFloat32Name + "\",\"issued\":\"" + kInt32Name + "\"";
    rc_->write_truth(e);
  }
  if (faults.desync) {
    uint64_t wrong = count - count / 2;
    TruthEvent e = truth(FaultKind::kDesync);
    e.detail = "\"count\":" + std::to_string(count) + ",\"issued\":" + std::to_string(wrong);
    rc_->write_truth(e);
    count = wrong;
  }

  group_start_internal();
  group_api_begin(comm);
  Task t;
  void* started = nullptr;
  if (rc_->prof->loaded() && (api_mask_ & gate::kCollApi)) {
    abi::DescrV5 d = blank_descr(abi::kEvCollApi, group_api_, comm.rank());
    d.collApi.func = func_name(f);
    d.collApi.count = count;
    d.collApi.datatype = faults.dtype ? kInt32Name : kFloat32Name;
    d.collApi.root = root >= 0 ? root : 0;
    d.collApi.stream = comm.stream();
    d.collApi.graphCaptured = false;
    rc_->prof->start(comm.context(), &coll_api_, d);
    started = coll_api_;
  }
  if (faults.enqueuestall) stall_in_call(f, comm, key, -1);
  t.api_handle = coll_api_;
  t.group_api_handle = group_api_;
  t.k.func = f;
  t.k.send = send;
  t.k.recv = recv;
  t.k.count = count;
  t.k.peer = root;
  t.k.mask = api_mask_;
  t.k.step = step_;
  t.k.op = op;
  t.k.key = key;
  t.k.straggle_ms = faults.straggle_ms;
  t.k.crash = faults.crash;
  t.k.sdc = faults.sdc;
  t.k.kernelstall = faults.kernelstall;
  t.k.int32 = faults.dtype != nullptr;
  pending_for(comm).colls.push_back(t);
  if (started) rc_->prof->stop(started);  // CollApi spans only the enqueue bookkeeping
  group_end_internal();
}

void NcclApi::p2p_task(Func f, float* buf, uint64_t count, int peer, Communicator& comm, const OpFaults& faults) {
  group_api_begin(comm);
  Task t;
  if (rc_->prof->loaded() && (api_mask_ & gate::kP2pApi)) {
    abi::DescrV5 d = blank_descr(abi::kEvP2pApi, group_api_, comm.rank());
    d.p2pApi.func = func_name(f);
    d.p2pApi.count = count;
    d.p2pApi.datatype = kFloat32Name;
    d.p2pApi.stream = comm.stream();
    d.p2pApi.graphCaptured = false;
    rc_->prof->start(comm.context(), &p2p_api_, d);
  }
  if (faults.enqueuestall)
    stall_in_call(f, comm, f == Func::kSend ? comm.api_sends[peer] : comm.api_recvs[peer], peer);
  t.api_handle = p2p_api_;
  t.group_api_handle = group_api_;
  t.k.func = f;
  t.k.send = buf;
  t.k.recv = buf;
  t.k.count = count;
  t.k.peer = peer;
  t.k.mask = api_mask_;
  t.k.step = step_;
  t.k.op = op_ - 1;
  t.k.key = f == Func::kSend ? comm.api_sends[peer]++ : comm.api_recvs[peer]++;
  t.k.straggle_ms = faults.straggle_ms;
  t.k.crash = faults.crash;
  pending_for(comm).p2ps.push_back(t);
  if (p2p_api_) {
    rc_->prof->stop(p2p_api_);
    p2p_api_ = nullptr;  // P2pApi stop clears the handle
  }
}

void NcclApi::all_reduce(const float* send, float* recv, uint64_t count, Communicator& comm) {
  coll(Func::kAllReduce, send, recv, count, -1, comm);
}
void NcclApi::all_gather(const float* send, float* recv, uint64_t sendcount, Communicator& comm) {
  coll(Func::kAllGather, send, recv, sendcount, -1, comm);
}
void NcclApi::reduce_scatter(const float* send, float* recv, uint64_t recvcount, Communicator& comm) {
  coll(Func::kReduceScatter, send, recv, recvcount, -1, comm);
}
void NcclApi::broadcast(const float* send, float* recv, uint64_t count, int root, Communicator& comm) {
  coll(Func::kBroadcast, send, recv, count, root, comm);
}

void NcclApi::send(const float* buf, uint64_t count, int peer, Communicator& comm) {
  OpFaults faults = begin_op(Func::kSend, comm, comm.api_sends[peer], peer);
  ++op_;
  if (rc_->status) rc_->status->ops.store(op_, std::memory_order_relaxed);
  if (faults.nan) {
    const_cast<float*>(buf)[count / 2] = std::numeric_limits<float>::quiet_NaN();
    TruthEvent e = truth_event(comm, FaultKind::kNan, Func::kSend, comm.api_sends[peer], peer, step_,
                               static_cast<int64_t>(op_ - 1));
    e.detail = "\"element\":" + std::to_string(count / 2);
    rc_->write_truth(e);
  }
  group_start_internal();
  p2p_task(Func::kSend, const_cast<float*>(buf), count, peer, comm, faults);
  group_end_internal();
}

void NcclApi::recv(float* buf, uint64_t count, int peer, Communicator& comm) {
  OpFaults faults = begin_op(Func::kRecv, comm, comm.api_recvs[peer], peer);
  ++op_;
  if (rc_->status) rc_->status->ops.store(op_, std::memory_order_relaxed);
  group_start_internal();
  p2p_task(Func::kRecv, buf, count, peer, comm, faults);
  group_end_internal();
}

void NcclApi::all_to_all(const float* send, float* recv, uint64_t count, Communicator& comm) {
  // The first task of the lowered AlltoAll is the Send to comm rank 0.
  OpFaults faults = begin_op(Func::kSend, comm, comm.api_sends[0], 0);
  ++op_;
  if (rc_->status) rc_->status->ops.store(op_, std::memory_order_relaxed);
  if (faults.nan) {
    uint64_t element = count * comm.nranks() / 2;
    const_cast<float*>(send)[element] = std::numeric_limits<float>::quiet_NaN();
    int peer = static_cast<int>(element / count);
    TruthEvent e = truth_event(comm, FaultKind::kNan, Func::kSend, comm.api_sends[peer], peer, step_,
                               static_cast<int64_t>(op_ - 1));
    e.detail = "\"element\":" + std::to_string(element) + ",\"api\":\"AlltoAll\"";
    rc_->write_truth(e);
  }
  // Lowered to P2P tasks, one Send and one Recv per peer (docs/nccl-notes.md §3.1): P2pApi "Send"/"Recv",
  // no CollApi, no Coll, no seqNumber.
  group_start_internal();
  for (int r = 0; r < comm.nranks(); ++r) {
    p2p_task(Func::kSend, const_cast<float*>(send + count * r), count, r, comm, faults);
    p2p_task(Func::kRecv, recv + count * r, count, r, comm, faults);
  }
  group_end_internal();
}

void NcclApi::group_end_internal() {
  if (--group_depth_ > 0) return;
  // Outermost group end (ncclGroupEndInternal).
  if (group_api_state_ == 2) {
    group_api_state_ = 0;
    rc_->prof->record(group_api_, abi::kStateGroupEndApiStart, nullptr);
  }
  for (Pending& p : pending_) launch(p);
  pending_.clear();
  profiler_group_depth_ = 0;
  group_api_state_ = 0;
  if (group_api_) {
    rc_->prof->stop(group_api_);
    group_api_ = nullptr;
  }
}

void NcclApi::launch(Pending& p) {
  Communicator& comm = *p.comm;
  if (p.colls.empty() && p.p2ps.empty()) return;
  if (std::find(used_.begin(), used_.end(), &comm) == used_.end()) used_.push_back(&comm);
  const ProfilerDriver& prof = *rc_->prof;
  const int n = comm.nranks();
  const int me = comm.rank();

  // P2P tasks in the order NCCL's scheduler puts them in the plan: by round delta = 0..n-1, the
  // send to (me + delta) % n, then the receive from (me - delta) % n (per peer in API order).
  std::vector<Task> p2ps;
  p2ps.reserve(p.p2ps.size());
  for (int delta = 0; delta < n && p2ps.size() < p.p2ps.size(); ++delta) {
    int to = (me + delta) % n, from = (me - delta + n) % n;
    for (Task& t : p.p2ps)
      if (t.k.func == Func::kSend && t.k.peer == to) p2ps.push_back(t);
    for (Task& t : p.p2ps)
      if (t.k.func == Func::kRecv && t.k.peer == from) p2ps.push_back(t);
  }

  // First task with a non-zero mask decides KernelLaunch and Group (colls before p2ps).
  uint64_t plan_mask = 0;
  void* plan_group_api = nullptr;
  for (const Task& t : p.colls)
    if (!plan_mask && t.k.mask) {
      plan_mask = t.k.mask;
      plan_group_api = t.group_api_handle;
    }
  for (const Task& t : p2ps)
    if (!plan_mask && t.k.mask) {
      plan_mask = t.k.mask;
      plan_group_api = t.group_api_handle;
    }

  void* kl = nullptr;
  if (prof.loaded() && (plan_mask & gate::kKernelLaunch)) {
    abi::DescrV5 d = blank_descr(abi::kEvKernelLaunch, plan_group_api, me);
    d.kernelLaunch.stream = comm.stream();
    prof.start(comm.context(), &kl, d);
  }
  // cuLaunchKernelEx: the kernel is queued; it runs once the proxy receives the plan.
  prof.stop(kl);

  // hostStreamPlanTask, on this thread right after the launch (docs/nccl-notes.md §3.3).
  void* group = nullptr;
  if (prof.loaded() && (plan_mask & gate::kGroup)) {
    abi::DescrV5 d = blank_descr(abi::kEvGroup, nullptr, 0);  // NCCL fills neither parent nor rank
    prof.start(comm.context(), &group, d);
  }
  KernelPlan plan;
  std::vector<void*> to_stop;
  for (Task& t : p.colls) {
    const int fi = static_cast<int>(t.k.func);
    const uint64_t seq = comm.seq[fi];
    const bool bytes_task = t.k.func == Func::kAllGather || t.k.func == Func::kBroadcast;
    Tuning tu = tune_coll(t.k.func, t.k.count * kFloatBytes, comm.spec().n_nodes);
    t.k.n_channels = tu.n_channels;
    t.k.channel_base = tu.channel_base;
    t.k.ordinal = comm.coll_launched++;
    if (prof.loaded() && (t.k.mask & gate::kColl)) {
      abi::DescrV5 d = blank_descr(abi::kEvColl, t.api_handle, me);
      d.coll.seqNumber = seq;
      d.coll.func = func_name(t.k.func);
      d.coll.sendBuff = t.k.send;
      d.coll.recvBuff = t.k.recv;
      // AllGather and Broadcast tasks are counted in bytes of ncclInt8 (docs/nccl-notes.md §2.5).
      // A dtype fault describes the same elements as ncclInt32 (same size as float32).
      d.coll.count = bytes_task ? t.k.count * kFloatBytes : t.k.count;
      d.coll.root = t.k.peer >= 0 ? t.k.peer : 0;
      d.coll.datatype = bytes_task ? kInt8Name : (t.k.int32 ? kInt32Name : kFloat32Name);
      d.coll.nChannels = tu.n_channels;
      d.coll.nWarps = tu.n_warps;
      d.coll.algo = tu.algo;
      d.coll.proto = tu.proto;
      d.coll.parentGroup = group;
      prof.start(comm.context(), &t.k.handle, d);
    }
    comm.seq[fi] = seq + 1;  // incremented whether or not a plugin is loaded (RAS uses it)
    to_stop.push_back(t.k.handle);
    plan.tasks.push_back(t.k);
  }
  for (Task& t : p2ps) {
    const bool is_send = t.k.func == Func::kSend;
    Tuning tu = is_send ? tune_p2p(t.k.count * kFloatBytes, me, t.k.peer, n)
                        : tune_p2p(t.k.count * kFloatBytes, t.k.peer, me, n);
    t.k.n_channels = tu.n_channels;
    t.k.channel_base = tu.channel_base;
    t.k.ordinal = is_send ? comm.sends_launched[t.k.peer]++ : comm.recvs_launched[t.k.peer]++;
    if (prof.loaded() && (t.k.mask & gate::kP2p)) {
      abi::DescrV5 d = blank_descr(abi::kEvP2p, t.api_handle, me);
      d.p2p.func = func_name(t.k.func);
      d.p2p.buff = is_send ? const_cast<float*>(t.k.send) : t.k.recv;
      d.p2p.datatype = kFloat32Name;
      d.p2p.count = t.k.count;
      d.p2p.peer = t.k.peer;
      d.p2p.nChannels = tu.n_channels;
      d.p2p.parentGroup = group;
      prof.start(comm.context(), &t.k.handle, d);
    }
    to_stop.push_back(t.k.handle);
    plan.tasks.push_back(t.k);
  }
  plan.stream_seq = rc_->next_kernel();
  // uploadProxyOps + ncclProxyStart: from here the proxy thread may deliver KernelCh events,
  // possibly before the stops below (docs/nccl-notes.md §3.3 step 4).
  comm.post(std::move(plan));
  for (void* h : to_stop) prof.stop(h);
  prof.stop(group);
}

void NcclApi::synchronize() {
  for (Communicator* c : used_) c->wait_idle();
}

}  // namespace scout::sim
