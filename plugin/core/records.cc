// Record writing (records.h).
#include "plugin/core/records.h"

#include "common/names.h"
#include "plugin/core/clock.h"
#include "plugin/core/process.h"
#include "plugin/core/thread_cache.h"
#include "plugin/fingerprint/engine.h"

namespace scout::core {
namespace {

constexpr uint32_t kMaxChannels = 64;

// n_coll / n_p2p: Coll/P2p starts of one communicator come from its launching thread one at a
// time (NCCL does not launch a communicator's plans concurrently), so a plain increment avoids a
// locked instruction per operation. These counters are informative; the ring head is exact.
inline void bump(std::atomic<uint64_t>& a) {
  a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Fields every kind of record takes from the API call and the communicator's latest launch.
void fill_api(CommState* c, shm::OpRecord* r, const OpContext& ctx) {
  const ApiCopy* api = ctx.api;
  r->enqueue_ns = ctx.now;
  if (api != nullptr) {
    r->api_ns = api->api_ns;
    r->api_count = api->count;
    r->api_datatype = api->dtype;
    r->group = api->group;
    r->thread = api->tid;
    r->flags |= api->flags;
    r->stream = api->stream;
    if (c->launch_group.load(std::memory_order_relaxed) == api->group) {
      // The launch of this API call's group on this communicator: its stream is the one the
      // kernel runs on. At a graph replay the launch was at capture time: not reported.
      uint64_t s = c->launch_stream.load(std::memory_order_relaxed);
      if (s != 0) r->stream = s;
      if (!(api->flags & shm::kFlagGraphCaptured)) { r->launch_ns = c->launch_ns.load(std::memory_order_relaxed); }
    }
  } else {
    r->api_datatype = shm::kTypeUnknown;
    r->thread = current_tid();
  }
}

void reset_channels(CommState* c, uint64_t index) {
  SlotChannels& s = slot_channels(c, index);
  s.started.store(0, std::memory_order_relaxed);
  s.stopped.store(0, std::memory_order_relaxed);
  s.end_raw.store(0, std::memory_order_relaxed);
}

void notify_engine(Process* p, CommState* c, shm::OpRecord* r, uint64_t index, const void* sbuf, void* rbuf,
                   const OpContext& ctx) {
  if (p->engine == nullptr || c->fp == nullptr) return;
  // Most operations are not sampled: decide that before computing sizes, the datatype and the
  // calling thread for the engine.
  if (!p->engine->may_sample(c->fp, r->kind, r->func, r->key)) return;
  fp::OpInfo op;
  op.comm_hash = c->comm_hash;
  op.kind = r->kind;
  op.func = r->func;
  op.key = r->key;
  op.send_buf = sbuf;
  op.recv_buf = rbuf;
  fp::op_bytes(r->func, r->count, shm::datatype_size(r->datatype), c->nranks, c->rank, r->peer, &op.send_bytes,
               &op.recv_bytes);
  op.dtype = r->api_datatype != shm::kTypeUnknown && ctx.api != nullptr ? r->api_datatype : r->datatype;
  op.graph_captured = (r->flags & shm::kFlagGraphCaptured) != 0;
  op.stream = reinterpret_cast<void*>(uintptr_t(r->stream));
  op.on_launch_thread = c->launch_tid.load(std::memory_order_relaxed) == current_tid();
  p->engine->on_op_enqueued(c->fp, r, index, op);
}

// A collective's root, element count, bytes (count x the size of r->datatype, set before) and
// buffers, flagged in place when it sends from its receive buffer (D: abi::CollV5, abi::CeCollDescr).
template <class D>
void fill_buffers(shm::OpRecord* r, const D& d) {
  r->peer = d.root;
  r->count = d.count;
  r->bytes = uint64_t(d.count) * shm::datatype_size(r->datatype);
  r->send_buf = uintptr_t(d.sendBuff);
  r->recv_buf = uintptr_t(d.recvBuff);
  if (d.sendBuff != nullptr && d.sendBuff == d.recvBuff) r->flags |= shm::kFlagInPlace;
}

}  // namespace

bool write_coll(Process* p, CommState* c, const abi::CollV5& d, const OpContext& ctx, uint64_t* index) {
  uint64_t i = 0;
  shm::OpRecord* r = c->rw.begin(&i);
  uint8_t func = c->op_func.map(d.func, shm::func_id);
  bool numbered = func < shm::kNumNumberedFuncs;
  r->kind = numbered ? shm::kKindColl : shm::kKindUnmatched;
  r->key = numbered ? d.seqNumber : c->fallback_key.fetch_add(1, std::memory_order_relaxed);
  r->func = func;
  r->datatype = c->op_dtype.map(d.datatype, shm::datatype_id);
  r->algo = c->op_algo.map(d.algo, shm::algo_id);
  r->proto = c->op_proto.map(d.proto, shm::proto_id);
  r->n_warps = d.nWarps;
  r->flags = ctx.flags | (numbered ? 0u : uint32_t(shm::kFlagUnmatched));
  if (d.nChannels == 0 || d.nChannels > kMaxChannels) {
    r->flags |= shm::kFlagNoKernelCh;
  } else {
    r->n_channels = d.nChannels;
  }
  fill_buffers(r, d);
  fill_api(c, r, ctx);
  r->state.store(shm::kStateEnqueued, std::memory_order_relaxed);
  reset_channels(c, i);
  shm::RingWriter::publish(r, i);
  if (numbered) {
    bump(c->hdr->n_coll);
  } else {
    c->hdr->n_unmatched.fetch_add(1, std::memory_order_relaxed);
  }
  notify_engine(p, c, r, i, d.sendBuff, d.recvBuff, ctx);
  *index = i;
  return true;
}

bool write_p2p(Process* p, CommState* c, const abi::P2pV5& d, const OpContext& ctx, uint64_t* index) {
  uint64_t i = 0;
  shm::OpRecord* r = c->rw.begin(&i);
  uint8_t func = c->op_func.map(d.func, shm::func_id);
  bool peer_ok = d.peer >= 0 && d.peer < c->nranks;
  uint32_t flags = ctx.flags;
  if ((func == shm::kFuncSend || func == shm::kFuncRecv) && peer_ok) {
    r->kind = func == shm::kFuncSend ? shm::kKindSend : shm::kKindRecv;
    auto* ctr = func == shm::kFuncSend ? c->send_ctr : c->recv_ctr;
    r->key = ctr[d.peer].fetch_add(1, std::memory_order_relaxed);
  } else {
    r->kind = shm::kKindUnmatched;
    r->key = c->fallback_key.fetch_add(1, std::memory_order_relaxed);
    flags |= shm::kFlagUnmatched;
  }
  r->func = func;
  r->datatype = c->op_dtype.map(d.datatype, shm::datatype_id);
  r->algo = shm::kAlgoUnknown;
  r->proto = shm::kProtoUnknown;
  if (d.nChannels == 0 || d.nChannels > kMaxChannels) {
    flags |= shm::kFlagNoKernelCh;
  } else {
    r->n_channels = d.nChannels;
  }
  r->flags = flags;
  r->peer = d.peer;
  r->count = d.count;
  r->bytes = uint64_t(d.count) * shm::datatype_size(r->datatype);
  if (func == shm::kFuncRecv) {
    r->recv_buf = uintptr_t(d.buff);
  } else {
    r->send_buf = uintptr_t(d.buff);
  }
  fill_api(c, r, ctx);
  r->state.store(shm::kStateEnqueued, std::memory_order_relaxed);
  reset_channels(c, i);
  shm::RingWriter::publish(r, i);
  if (r->kind == shm::kKindUnmatched) {
    c->hdr->n_unmatched.fetch_add(1, std::memory_order_relaxed);
  } else {
    bump(c->hdr->n_p2p);
  }
  notify_engine(p, c, r, i, func == shm::kFuncRecv ? nullptr : d.buff, func == shm::kFuncRecv ? d.buff : nullptr, ctx);
  *index = i;
  return true;
}

bool write_ce_coll(Process* p, CommState* c, const abi::CeCollDescr& d, const OpContext& ctx, uint64_t* index) {
  (void)p;
  uint64_t i = 0;
  shm::OpRecord* r = c->rw.begin(&i);
  r->kind = shm::kKindCeColl;
  r->key = d.seqNumber;
  r->func = shm::func_id(d.func);
  r->datatype = shm::datatype_id(d.datatype);
  r->algo = shm::kAlgoUnknown;
  r->proto = shm::kProtoUnknown;
  r->flags = ctx.flags | shm::kFlagUnmatched | shm::kFlagNoKernelCh;
  fill_buffers(r, d);
  fill_api(c, r, ctx);
  if (d.stream != nullptr) r->stream = uintptr_t(d.stream);
  r->state.store(shm::kStateEnqueued, std::memory_order_relaxed);
  reset_channels(c, i);
  shm::RingWriter::publish(r, i);
  c->hdr->n_unmatched.fetch_add(1, std::memory_order_relaxed);
  *index = i;
  return true;
}

void write_unmatched(Process* p, CommState* c, const ApiCopy& api) {
  (void)p;
  uint64_t i = 0;
  shm::OpRecord* r = c->rw.begin(&i);
  r->kind = shm::kKindUnmatched;
  r->key = c->fallback_key.fetch_add(1, std::memory_order_relaxed);
  r->func = api.func;
  r->datatype = api.dtype;
  r->api_datatype = api.dtype;
  r->algo = shm::kAlgoUnknown;
  r->proto = shm::kProtoUnknown;
  r->flags = shm::kFlagUnmatched | shm::kFlagNoKernelCh | api.flags;
  r->peer = api.is_p2p ? -1 : api.root;
  r->count = api.count;
  r->api_count = api.count;
  r->bytes = api.count * shm::datatype_size(api.dtype);
  r->group = api.group;
  r->api_ns = api.api_ns;
  r->stream = api.stream;
  r->thread = api.tid;
  r->state.store(shm::kStateApiOnly, std::memory_order_relaxed);
  reset_channels(c, i);
  shm::RingWriter::publish(r, i);
  c->hdr->n_unmatched.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace scout::core
