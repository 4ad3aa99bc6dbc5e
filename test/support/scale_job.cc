#include "test/support/scale_job.h"

#include <algorithm>
#include <climits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "common/names.h"
#include "observer/cluster/job_waits.h"
#include "observer/cluster/node_view.h"
#include "observer/detect/fingerprint_check.h"
#include "observer/model/model.h"
#include "test/support/mix64.h"

namespace scout::testing {

using namespace scout::shm;

namespace {

// One place of a rank's step, before it is given a step number: communicator kind, record kind,
// function, index within the step (seqNumber = step * per_step + i; p2p counter = step * M + i),
// pipeline peer (stage offset), and its fixed place (time) in the step.
struct Tmpl {
  ScaleJob::Kind kind;
  uint8_t rec_kind;
  uint8_t func;
  int i;
  int peer_delta;  // p2p: peer stage - own stage
  int slot;
};

// A step's program for one stage: its places in order, and per (communicator kind, function) the
// program positions of those places (ascending).
struct Program {
  std::vector<Tmpl> ops;
  std::map<std::pair<int, int>, std::vector<int>> at;
};
struct TemplateSet {
  Program t[ScaleJob::kPp][2];  // [stage][first step]
  int slots = 0;
};

TemplateSet make_templates(const ScaleShape& sh) {
  TemplateSet out;
  const int M = sh.microbatches;
  // Places: 0 Broadcast, then TP, forward (recv, send) per microbatch, backward (recv, send) per
  // microbatch, DP AllReduce, DP AllGather, MP AllReduce. Program order = place order.
  const int tp0 = 1, fwd0 = tp0 + sh.tp_ops, bwd0 = fwd0 + 2 * M, dp0 = bwd0 + 2 * M, ag0 = dp0 + sh.dp_ops,
            mp0 = ag0 + sh.dp_ops;
  out.slots = mp0 + sh.mp_ops;
  using K = ScaleJob::Kind;
  for (int stage = 0; stage < ScaleJob::kPp; ++stage) {
    for (int first = 0; first < 2; ++first) {
      std::vector<Tmpl>& v = out.t[stage][first].ops;
      if (first) v.push_back({K::kWorld, kKindColl, kFuncBroadcast, 0, 0, 0});
      for (int i = 0; i < sh.tp_ops; ++i) v.push_back({K::kTp, kKindColl, kFuncAllReduce, i, 0, tp0 + i});
      for (int m = 0; m < M; ++m) {
        if (stage > 0) v.push_back({K::kPp, kKindRecv, kFuncRecv, m, -1, fwd0 + 2 * m});
        if (stage < ScaleJob::kPp - 1) v.push_back({K::kPp, kKindSend, kFuncSend, m, +1, fwd0 + 2 * m + 1});
      }
      for (int m = 0; m < M; ++m) {
        if (stage < ScaleJob::kPp - 1) v.push_back({K::kPp, kKindRecv, kFuncRecv, m, +1, bwd0 + 2 * m});
        if (stage > 0) v.push_back({K::kPp, kKindSend, kFuncSend, m, -1, bwd0 + 2 * m + 1});
      }
      for (int i = 0; i < sh.dp_ops; ++i) v.push_back({K::kDp, kKindColl, kFuncAllReduce, i, 0, dp0 + i});
      for (int i = 0; i < sh.dp_ops; ++i) v.push_back({K::kDp, kKindColl, kFuncAllGather, i, 0, ag0 + i});
      for (int i = 0; i < sh.mp_ops; ++i) v.push_back({K::kMp, kKindColl, kFuncAllReduce, i, 0, mp0 + i});
      for (int j = 0; j < int(v.size()); ++j) out.t[stage][first].at[{int(v[j].kind), v[j].func}].push_back(j);
    }
  }
  return out;
}

const TemplateSet& templates_for(const ScaleShape& sh) {
  // One job shape per process in practice; keyed by the shape's fields.
  static std::map<std::tuple<int, int, int, int>, TemplateSet> cache;
  auto key = std::make_tuple(sh.tp_ops, sh.microbatches, sh.dp_ops, sh.mp_ops);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_templates(sh)).first;
  return it->second;
}
}  // namespace

ScaleJob::ScaleJob(int nodes, ScaleShape shape) : nodes_(nodes), shape_(shape) {
  if (nodes < kPp || nodes % kPp != 0) throw std::invalid_argument("ScaleJob: nodes must be a multiple of 4");
  slots_ = templates_for(shape_).slots;
  const int D = dp();
  auto add = [&](Kind k, int index, int nranks, int nnodes, std::string name) {
    uint64_t h = mix64(0x5ca1e000000ull + (uint64_t(k) << 32) + uint64_t(index));
    by_hash_[h] = int(comms_.size());
    comms_.push_back(CommDef{k, index, h, nranks, nnodes, std::move(name)});
  };
  for (int n = 0; n < nodes_; ++n) add(Kind::kTp, n, kTp, 1, "tp" + std::to_string(n));
  for (int i = 0; i < D * kTp; ++i) add(Kind::kPp, i, kPp, kPp, "pp" + std::to_string(i));
  for (int i = 0; i < kPp * kTp; ++i) add(Kind::kDp, i, D, D, "dp" + std::to_string(i));
  for (int d = 0; d < D; ++d) add(Kind::kMp, d, kTp * kPp, kPp, "mp" + std::to_string(d));
  add(Kind::kWorld, 0, ranks(), nodes_, "world");
}

int ScaleJob::comm_by_hash(uint64_t hash) const {
  auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? -1 : it->second;
}

namespace {
struct Coords {
  int node, d, stage, t;
};
Coords coords(int g) {
  const int node = g / ScaleJob::kTp;
  return {node, node / ScaleJob::kPp, node % ScaleJob::kPp, g % ScaleJob::kTp};
}
}  // namespace

std::vector<std::pair<int, int>> ScaleJob::comms_of(int g) const {
  const Coords c = coords(g);
  const int N = nodes_, D = dp();
  return {{c.node, c.t},
          {N + c.d * kTp + c.t, c.stage},
          {N + D * kTp + c.stage * kTp + c.t, c.d},
          {N + D * kTp + kPp * kTp + c.d, c.stage * kTp + c.t},
          {N + D * kTp + kPp * kTp + D, g}};
}

int ScaleJob::comm_rank(int comm, int g) const {
  const Coords c = coords(g);
  switch (comms_[comm].kind) {
    case Kind::kTp: return c.t;
    case Kind::kPp: return c.stage;
    case Kind::kDp: return c.d;
    case Kind::kMp: return c.stage * kTp + c.t;
    case Kind::kWorld: return g;
  }
  return -1;
}

int ScaleJob::global_rank(int comm, int r) const {
  const CommDef& cd = comms_[comm];
  switch (cd.kind) {
    case Kind::kTp: return cd.index * kTp + r;
    case Kind::kPp: return ((cd.index / kTp) * kPp + r) * kTp + cd.index % kTp;
    case Kind::kDp: return (r * kPp + cd.index / kTp) * kTp + cd.index % kTp;
    case Kind::kMp: return cd.index * kTp * kPp + r;
    case Kind::kWorld: return r;
  }
  return -1;
}

int ScaleJob::per_step(Kind k, uint8_t func) const {
  switch (k) {
    case Kind::kTp: return shape_.tp_ops;
    case Kind::kDp: return shape_.dp_ops;
    case Kind::kMp: return shape_.mp_ops;
    case Kind::kPp: return shape_.microbatches;
    case Kind::kWorld: return 0;  // one Broadcast, in step 0
  }
  return 0;
}

namespace {
ScaleJob::JobOp instantiate(const ScaleJob& job, const std::vector<std::pair<int, int>>& mine, int stage, int64_t s,
                            const Tmpl& t, int slots) {
  ScaleJob::JobOp op;
  op.comm = mine[size_t(t.kind)].first;
  OpSpec& sp = op.spec;
  sp.kind = t.rec_kind;
  sp.func = t.func;
  sp.datatype = kTypeFloat32;
  const int per = job.per_step(t.kind, t.func);
  sp.key = t.kind == ScaleJob::Kind::kWorld ? 0 : uint64_t(s) * uint64_t(per) + uint64_t(t.i);
  switch (t.kind) {
    case ScaleJob::Kind::kTp: sp.count = 1 << 20; break;
    case ScaleJob::Kind::kDp: sp.count = 1 << 24; break;
    case ScaleJob::Kind::kMp: sp.count = 1; break;
    case ScaleJob::Kind::kWorld: sp.count = 16; break;
    case ScaleJob::Kind::kPp: sp.count = 1 << 20; break;
  }
  if (t.kind == ScaleJob::Kind::kPp) {
    sp.datatype = kTypeUint8;
    sp.peer = stage + t.peer_delta;
    sp.n_channels = 1;
  } else if (t.func == kFuncBroadcast) {
    sp.peer = 0;  // root
  }
  const int64_t step = job.shape().step_ns;
  sp.enqueue_ns = job.step_start(s) + int64_t(t.slot + 1) * (step / (slots + 1));
  op.gpu_start_ns = sp.enqueue_ns + 10'000;
  op.gpu_end_ns = sp.enqueue_ns + 40'000;
  return op;
}
}  // namespace

std::vector<ScaleJob::JobOp> ScaleJob::program(int g, int64_t s) const {
  const TemplateSet& ts = templates_for(shape_);
  const Coords c = coords(g);
  const auto mine = comms_of(g);
  std::vector<JobOp> out;
  for (const Tmpl& t : ts.t[c.stage][s == 0 ? 1 : 0].ops)
    out.push_back(instantiate(*this, mine, c.stage, s, t, ts.slots));
  return out;
}

uint64_t ScaleJob::fp_recv(int g, const JobOp& op) const {
  const uint8_t f = op.spec.func;
  if (op.spec.kind != kKindColl || !(f == kFuncAllReduce || f == kFuncAllGather || f == kFuncBroadcast)) return 0;
  uint64_t v = mix64(comms_[op.comm].hash * 31 + uint64_t(f) * 7 + op.spec.key * 1000003);
  if (g == sdc_rank_ && comms_[op.comm].kind == Kind::kDp && f == kFuncAllReduce && op.spec.key == sdc_seq_)
    v ^= 0x1000;
  return v;
}

shm::RecordSnapshot ScaleJob::record(int g, const JobOp& op, uint32_t state) const {
  // The fields FakeJob writes (enqueue, start, complete, fp_recv), read back as RecordSnapshot.
  const OpSpec& s = op.spec;
  RecordSnapshot r;
  // Ring index: unique per rank and communicator (place in the step, numbered across steps).
  r.index = uint64_t((s.enqueue_ns - kT0) / (shape_.step_ns / (slots_ + 1)));
  r.key = s.key;
  r.kind = s.kind;
  r.func = s.func;
  r.datatype = r.api_datatype = s.datatype;
  r.algo = kAlgoRing;
  r.proto = kProtoSimple;
  r.n_channels = s.n_channels;
  r.n_warps = 8;
  r.flags = s.flags;
  r.peer = s.peer;
  r.count = r.api_count = s.count;
  r.bytes = s.count * shm::datatype_size(s.datatype);
  r.api_ns = r.launch_ns = r.enqueue_ns = s.enqueue_ns;
  r.thread = 1;
  r.state = state;
  if (state >= kStateRunning) {
    r.gpu_start_ns = op.gpu_start_ns;
    r.ch_started = s.n_channels;
  }
  if (state == kStateComplete) {
    r.gpu_end_ns = op.gpu_end_ns;
    r.complete_ns = op.gpu_end_ns + 1000;
    r.ch_stopped = s.n_channels;
    if (uint64_t fp = fp_recv(g, op)) {
      r.fp_recv = fp;
      r.fp_bytes = r.bytes;
      r.fp_version = 1;
      r.fp_recv_status = kFpDone;
    }
  }
  return r;
}

void ScaleJob::hang(int g, int64_t step) {
  hang_rank_ = g;
  hang_step_ = step;
  hang_pos_.clear();
}

int64_t ScaleJob::step_at(int64_t t) const {
  int64_t s = t <= kT0 ? 0 : (t - kT0) / shape_.step_ns;
  if (hang_step_ >= 0 && s > hang_step_) s = hang_step_;
  return s;
}

namespace {
struct OpInstance {
  uint64_t hi, lo;
  bool operator==(const OpInstance&) const = default;
};
struct OpInstanceHash {
  size_t operator()(const OpInstance& k) const { return size_t(mix64(k.hi * 0x9e3779b97f4a7c15ull ^ k.lo)); }
};
}  // namespace

const std::vector<int>& ScaleJob::hang_positions() const {
  if (!hang_pos_.empty() || hang_rank_ < 0) return hang_pos_;
  const int R = ranks();
  const TemplateSet& ts = templates_for(shape_);
  const int first = hang_step_ == 0 ? 1 : 0;
  std::vector<int> pos(R, 0);
  int stop = -1;
  {
    const Program& p = ts.t[coords(hang_rank_).stage][first];
    stop = p.at.at({int(Kind::kDp), kFuncAllReduce}).front();
  }
  // Each rank arrives at the operation at its position; an operation every participant arrived
  // at completes and moves them all on. The stopped rank never arrives at its DP AllReduce.
  std::unordered_map<OpInstance, int, OpInstanceHash> arrived;
  std::vector<int> work(R);
  for (int g = 0; g < R; ++g) work[g] = R - 1 - g;
  while (!work.empty()) {
    const int g = work.back();
    work.pop_back();
    const Coords c = coords(g);
    const Program& prog = ts.t[c.stage][first];
    if (pos[g] >= int(prog.ops.size())) continue;
    if (g == hang_rank_ && pos[g] == stop) continue;  // it never enqueues this one
    const JobOp op = instantiate(*this, comms_of(g), c.stage, hang_step_, prog.ops[pos[g]], ts.slots);
    const CommDef& cd = comms_[op.comm];
    int src = -1, dst = -1, need = cd.nranks;
    if (op.spec.kind != kKindColl) {
      const int me = comm_rank(op.comm, g);
      src = op.spec.kind == kKindSend ? me : op.spec.peer;
      dst = op.spec.kind == kKindSend ? op.spec.peer : me;
      need = 2;
    }
    // Both ends of a Send/Recv pair are one operation (the Model's OpId: func Send, src, dst).
    const uint64_t func = op.spec.kind == kKindColl ? uint64_t(op.spec.func) : uint64_t(kFuncSend);
    const OpInstance key{uint64_t(op.comm) | func << 24 | uint64_t(src + 1) << 32 | uint64_t(dst + 1) << 48,
                         op.spec.key};
    if (++arrived[key] < need) continue;
    arrived.erase(key);
    auto advance = [&](int q) {
      pos[q]++;
      work.push_back(q);
    };
    if (op.spec.kind == kKindColl) {
      for (int r = 0; r < cd.nranks; ++r) advance(global_rank(op.comm, r));
    } else {
      advance(global_rank(op.comm, src));
      advance(global_rank(op.comm, dst));
    }
  }
  hang_pos_ = std::move(pos);
  return hang_pos_;
}

namespace {
// How far rank g is in step s at time t: ops [0, done) complete; *running: op `done` is in flight.
int progress(const ScaleJob& job, int g, int64_t s, int64_t t, bool* running) {
  const TemplateSet& ts = templates_for(job.shape());
  const Program& prog = ts.t[coords(g).stage][s == 0 ? 1 : 0];
  const int n = int(prog.ops.size());
  *running = false;
  const int64_t st = job.step_at(t);
  if (s > st) return 0;
  int done = n;
  if (s == st) {
    // Places are in program order: the ops whose GPU end has passed (40 us after the enqueue).
    const int64_t unit = job.shape().step_ns / (ts.slots + 1);
    const int64_t into = t - job.step_start(s) - 40'000;
    const int64_t places = into < 0 ? 0 : into / unit;  // places p with (p + 1) * unit <= into
    done = int(std::upper_bound(prog.ops.begin(), prog.ops.end(), places - 1,
                                [](int64_t v, const Tmpl& x) { return v < x.slot; }) -
               prog.ops.begin());
  }
  if (job.hang_step() >= 0 && s == job.hang_step()) {
    const int p = job.hang_positions()[g];
    if (done >= p) {
      done = p;
      if (p < n && g != job.hang_rank()) {
        const int64_t enq = job.step_start(s) + int64_t(prog.ops[p].slot + 1) * (job.shape().step_ns / (ts.slots + 1));
        *running = enq <= t;
      }
    }
  }
  return done;
}
}  // namespace

void ScaleJob::reached(int g, int64_t s, int64_t t, std::vector<Reached>* out) const {
  out->clear();
  bool running = false;
  const int done = progress(*this, g, s, t, &running);
  const std::vector<JobOp> prog = program(g, s);
  for (int j = 0; j < done; ++j) out->push_back({prog[j], kStateComplete});
  if (running) out->push_back({prog[done], kStateRunning});
}

void ScaleJob::counters(int g, int comm, uint8_t func, int64_t t, uint64_t* issued, uint64_t* completed) const {
  const int64_t st = step_at(t);
  const Kind k = comms_[comm].kind;
  const int first = st == 0 ? 1 : 0;
  *issued = *completed = k == Kind::kWorld ? (st > 0 ? 1 : 0) : uint64_t(st) * uint64_t(per_step(k, func));
  if (k == Kind::kWorld && st > 0) return;
  const Program& prog = templates_for(shape_).t[coords(g).stage][first];
  auto it = prog.at.find({int(k), func});
  if (it == prog.at.end()) return;
  bool running = false;
  const int done = progress(*this, g, st, t, &running);
  const std::vector<int>& at = it->second;
  const uint64_t n = uint64_t(std::lower_bound(at.begin(), at.end(), done) - at.begin());
  *completed += n;
  *issued += n + (running && std::binary_search(at.begin(), at.end(), done) ? 1 : 0);
}

bool ScaleJob::find_op(int g, int comm, uint8_t func, uint64_t seq, JobOp* out) const {
  const Kind k = comms_[comm].kind;
  int64_t s = 0;
  uint64_t i = 0;
  if (k == Kind::kWorld) {
    if (seq != 0) return false;
  } else {
    const int per = per_step(k, func);
    if (per <= 0) return false;
    s = int64_t(seq / uint64_t(per));
    i = seq % uint64_t(per);
  }
  const TemplateSet& ts = templates_for(shape_);
  const Coords c = coords(g);
  const Program& prog = ts.t[c.stage][s == 0 ? 1 : 0];
  auto it = prog.at.find({int(k), func});
  if (it == prog.at.end() || i >= it->second.size()) return false;
  *out = instantiate(*this, comms_of(g), c.stage, s, prog.ops[it->second[i]], ts.slots);
  return out->comm == comm;
}

// ---- Node ----

namespace {
// Local ranks of `node` in communicator `comm`.
std::vector<int> local_members(const ScaleJob& job, int node, int comm) {
  std::vector<int> out;
  for (int t = 0; t < ScaleJob::kTp; ++t) {
    const int g = node * ScaleJob::kTp + t;
    for (const auto& [c, r] : job.comms_of(g)) {
      if (c == comm) out.push_back(g);
    }
  }
  return out;
}
}  // namespace

std::vector<net::StreamView> ScaleJob::Node::streams() {
  const int64_t now = t_.load();
  std::vector<net::StreamView> out;
  const int g0 = node_ * kTp;
  // Communicators of this node with ranks on other nodes: its dp communicators, its mp, world.
  std::vector<std::pair<int, uint8_t>> streams;
  for (int t = 0; t < kTp; ++t) {
    const int dp = job_->comms_of(g0 + t)[2].first;
    streams.push_back({dp, kFuncAllReduce});
    streams.push_back({dp, kFuncAllGather});
  }
  streams.push_back({job_->comms_of(g0)[3].first, kFuncAllReduce});
  streams.push_back({job_->comms_of(g0)[4].first, kFuncBroadcast});
  for (const auto& [comm, func] : streams) {
    const CommDef& cd = job_->comms()[comm];
    net::StreamView s;
    s.comm_hash = cd.hash;
    s.func = func;
    s.nranks = cd.nranks;
    s.comm_name = cd.name;
    bool first = true;
    for (int g : local_members(*job_, node_, comm)) {
      net::RankProgressView p;
      p.comm_rank = job_->comm_rank(comm, g);
      p.global_rank = g;
      job_->counters(g, comm, func, now, &p.enqueued, &p.completed);
      p.started = p.enqueued;
      p.last_event_ns = now;
      s.completed = first ? p.completed : std::min(s.completed, p.completed);
      s.enqueued = std::max(s.enqueued, p.enqueued);
      first = false;
      s.ranks.push_back(p);
    }
    if (s.enqueued == 0) continue;
    out.push_back(std::move(s));
  }
  return out;
}

bool ScaleJob::Node::op(uint64_t comm_hash, uint8_t func, uint64_t seq, std::vector<net::RankOpView>* out) {
  const int64_t now = t_.load();
  out->clear();
  const int comm = job_->comm_by_hash(comm_hash);
  if (comm < 0) return false;
  for (int g : local_members(*job_, node_, comm)) {
    JobOp op;
    if (!job_->find_op(g, comm, func, seq, &op)) continue;
    // Reached by now? (A settled record: complete, or the one it is stuck in.)
    uint64_t issued = 0, completed = 0;
    job_->counters(g, comm, func, now, &issued, &completed);
    if (seq >= issued || seq + 1280 < completed) continue;  // not yet, or no longer retained
    const uint32_t state = seq < completed ? kStateComplete : kStateRunning;
    net::RankOpView v;
    v.comm_rank = job_->comm_rank(comm, g);
    v.global_rank = g;
    v.rec = job_->record(g, op, state);
    v.meta = obs::NodeView::meta_hash(v.rec);
    v.fp_recv = obs::recv_must_agree(func) && v.rec.fp_recv_status == kFpDone ? v.rec.fp_recv : 0;
    v.arrival_ns = v.rec.gpu_start_ns;
    v.end_ns = state == kStateComplete ? v.rec.gpu_end_ns : 0;
    out->push_back(std::move(v));
  }
  return !out->empty();
}

net::RankIdentity ScaleJob::Node::identity(int g) { return {g, job_->host(g / kTp), job_->pid(g), job_->gpu(g)}; }

net::WaitSnapshot ScaleJob::Node::wait_snapshot() {
  const int64_t now = t_.load();
  obs::Model m;
  const int64_t st = job_->step_at(now);
  std::vector<Reached> reached;
  for (int t = 0; t < kTp; ++t) {
    const int g = node_ * kTp + t;
    obs::Proc p;
    p.global_rank = g;
    p.local_rank = t;
    p.host = job_->host(node_);
    p.pid = job_->pid(g);
    p.gpu = job_->gpu(g);
    p.cuda_dev = t;
    p.node_rank = node_;
    const int proc = m.upsert_proc(p, now);
    m.proc(proc).last_event_ns = now;
    for (const auto& [comm, rank] : job_->comms_of(g)) {
      const CommDef& cd = job_->comms()[comm];
      obs::Comm& c = m.upsert_comm(obs::CommKey{cd.hash, cd.nranks}, cd.name, cd.nnodes);
      m.set_member(c, rank, proc, kT0, false);
    }
    for (int64_t s = std::max<int64_t>(0, st - 1); s <= st; ++s) {
      job_->reached(g, s, now, &reached);
      for (const Reached& x : reached) {
        const CommDef& cd = job_->comms()[x.op.comm];
        obs::Comm* c = m.find_comm(obs::CommKey{cd.hash, cd.nranks});
        m.apply(*c, job_->comm_rank(x.op.comm, g), job_->record(g, x.op, x.state), now);
      }
    }
    // The world Broadcast of step 0 (its counter), if the rank is past it.
    if (st >= 2) {
      std::vector<JobOp> first = job_->program(g, 0);
      const CommDef& cd = job_->comms()[first[0].comm];
      m.apply(*m.find_comm(obs::CommKey{cd.hash, cd.nranks}), g, job_->record(g, first[0], kStateComplete), now);
    }
  }
  return obs::capture_waits(m);
}

}  // namespace scout::testing
