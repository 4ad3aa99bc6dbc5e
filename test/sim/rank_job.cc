#include "test/sim/rank_job.h"

#include "test/sim/gemm_lt.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"
#include "replay/emu_device.h"

#include "test/sim/checkpoint_writer.h"
#include "test/sim/comm_hash.h"
#include "test/sim/data.h"
#include "test/sim/futex.h"
#include "test/sim/nccl_logger.h"
#include "test/sim/workload.h"

namespace scout::sim {

RankJob::RankJob(RankContext* rc) : rc_(rc), api_(rc) {}

RankJob::~RankJob() = default;

void RankJob::init_comms(abi::Logger logger) {
  const Layout& L = *rc_->layout;
  const uint64_t world_hash = root_comm_hash(make_unique_id(rc_->opts->seed));
  for (const CommSpec& s : L.comms()) {
    if (s.rank_of(rc_->global_rank) < 0) continue;
    uint64_t h = s.kind == CommKind::kWorld
                     ? world_hash
                     : split_comm_hash(world_hash, static_cast<uint64_t>(s.split_count), s.index);
    auto c = std::make_unique<Communicator>(rc_, &s, h);
    c->init(logger);
    if (logger)
      logger(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__,
             "comm %p rank %d nRanks %d nNodes %d commId 0x%016llx commName %s - Init COMPLETE",
             static_cast<void*>(c.get()), c->rank(), c->nranks(), s.n_nodes, static_cast<unsigned long long>(h),
             s.name.c_str());
    by_kind_[static_cast<int>(s.kind)] = c.get();
    comms_.push_back(std::move(c));
  }
}

Communicator* RankJob::comm(CommKind kind) const { return by_kind_[static_cast<int>(kind)]; }

float* RankJob::buffer(std::vector<std::vector<float>>& pool, size_t index, uint64_t elems) {
  if (pool.size() <= index) pool.resize(index + 1);
  if (pool[index].size() < elems) pool[index].resize(elems);
  return pool[index].data();
}

void RankJob::run_step(int64_t step) {
  const SimOptions& o = *rc_->opts;
  api_.set_step(step);
  std::vector<Action> acts = step_actions(*rc_->layout, o, rc_->global_rank, step);
  // p2porder: this step's pipeline Sends and Recvs in reverse order, each a call of its own
  // (no group): a lone Send completes only once its receiver took the message.
  const FaultSpec* reorder = nullptr;
  if (rc_->faults.p2p_reversed(step, &reorder)) {
    std::vector<Action> kept;
    std::vector<size_t> slots;
    for (const Action& a : acts) {
      if (a.comm == CommKind::kPp && (a.kind == ActionKind::kGroupStart || a.kind == ActionKind::kGroupEnd)) continue;
      if (a.comm == CommKind::kPp && (a.kind == ActionKind::kSend || a.kind == ActionKind::kRecv))
        slots.push_back(kept.size());
      kept.push_back(a);
    }
    for (size_t i = 0, j = slots.size(); i + 1 < j; ++i, --j) std::swap(kept[slots[i]], kept[slots[j - 1]]);
    acts = std::move(kept);
    if (Communicator* pp = comm(CommKind::kPp); pp && !slots.empty()) {
      const Action& first = acts[slots.front()];
      const bool snd = first.kind == ActionKind::kSend;
      TruthEvent e = truth_event(*pp, FaultKind::kP2pOrder, snd ? Func::kSend : Func::kRecv,
                                 snd ? pp->api_sends[first.peer] : pp->api_recvs[first.peer], first.peer, step,
                                 static_cast<int64_t>(api_.ops()));
      e.detail = "\"calls\":" + std::to_string(slots.size());
      rc_->write_truth(e);
    }
  }
  if (o.moe_experts > 0) run_step_gemms(*rc_->layout, o, rc_->global_rank, step);
  for (size_t i = 0; i < acts.size(); ++i) {
    const Action& a = acts[i];
    Communicator* c = comm(a.comm);
    if (!c) continue;
    if (a.kind == ActionKind::kGroupStart) {
      api_.group_start();
      continue;
    }
    if (a.kind == ActionKind::kGroupEnd) {
      api_.group_end();
      continue;
    }
    const int n = c->nranks();
    const bool root = a.peer == c->rank();
    const uint64_t in_n = action_send_elems(a, n, root);
    const uint64_t out_n = action_recv_elems(a, n);
    float* recv = out_n ? buffer(recv_bufs_, i, out_n) : nullptr;
    float* send = a.in_place ? recv : (in_n ? buffer(send_bufs_, i, in_n) : nullptr);
    if (in_n) fill_input(send, in_n, o.seed, rc_->global_rank, api_.ops());
    // gpusdc: this GPU computed its send buffer wrong (one flipped bit, every rank then agrees
    // on the corrupted result, as on real hardware).
    if (in_n && rc_->faults.gpusdc_at(step)) {
      uint32_t u;
      const uint64_t e = (api_.ops() * 2654435761ull) % in_n;
      std::memcpy(&u, &send[e], 4);
      u ^= 1u << 20;
      std::memcpy(&send[e], &u, 4);
    }
    switch (a.kind) {
      case ActionKind::kColl:
        switch (a.func) {
          case Func::kAllReduce: api_.all_reduce(send, recv, a.count, *c); break;
          case Func::kAllGather: api_.all_gather(send, recv, a.count, *c); break;
          case Func::kReduceScatter: api_.reduce_scatter(send, recv, a.count, *c); break;
          case Func::kBroadcast: api_.broadcast(send, recv, a.count, a.peer, *c); break;
          default: break;
        }
        break;
      case ActionKind::kSend:
        // wronggroup: this pipeline Send goes to the same peer on the world communicator.
        if (const FaultSpec* wg = rc_->faults.at_op(api_.ops()).wronggroup; wg && comm(CommKind::kWorld)) {
          Communicator& w = *comm(CommKind::kWorld);
          const int peer_g = c->spec().members[a.peer];
          TruthEvent e = truth_event(w, FaultKind::kWrongGroup, Func::kSend, w.api_sends[peer_g], peer_g, step,
                                     static_cast<int64_t>(api_.ops()));
          e.peer = peer_g;
          e.detail = "\"right_comm\":\"" + c->spec().name + "\",\"right_key\":" + std::to_string(c->api_sends[a.peer]);
          rc_->write_truth(e);
          api_.send(send, a.count, peer_g, w);
          break;
        }
        api_.send(send, a.count, a.peer, *c);
        break;
      case ActionKind::kRecv: api_.recv(recv, a.count, a.peer, *c); break;
      case ActionKind::kAlltoAll: api_.all_to_all(send, recv, a.count, *c); break;
      default: break;
    }
  }
  api_.synchronize();
}

void RankJob::start_hardware_faults(int64_t step) {
  std::vector<const FaultSpec*> starting = rc_->faults.hardware_starting(step);
  if (starting.empty()) return;
  rc_->write_device(rc_->faults.device_at(step, [&](int g) { return rc_->gpu_of(g); }));
  for (const FaultSpec* f : starting) {
    if (f->kind == FaultKind::kSlowlink) continue;  // its ground truth is written where it delays
    // A linkdown is written by its rank= end; a nicdown by host K's first rank.
    if (f->mirror || f->rank != rc_->global_rank) continue;
    TruthEvent e;
    e.kind = f->kind;
    e.global_rank = rc_->global_rank;
    e.peer = f->peer;
    e.step = step;
    e.time_ns = shm::wall_ns();
    if (f->kind == FaultKind::kSlowGpu) e.detail = "\"factor\":" + std::to_string(f->factor);
    if (f->kind == FaultKind::kNicDown) e.detail = "\"node\":" + std::to_string(f->node);
    rc_->write_truth(e);
  }
}

void RankJob::run_steps() {
  // extrastep: one warm-up step (step 0's calls) before step 0, so every sequence number of this
  // rank runs one step ahead of its peers'.
  const FaultSpec* extra = nullptr;
  if (rc_->faults.extra_step(&extra)) {
    TruthEvent e;
    e.kind = FaultKind::kExtraStep;
    e.global_rank = rc_->global_rank;
    e.step = -1;
    e.time_ns = shm::wall_ns();
    rc_->write_truth(e);
    run_step(0);
    sleep_ms(rc_->opts->step_ms);
  }
  for (int64_t s = 0; s < rc_->opts->steps; ++s) {
    start_hardware_faults(s);
    // pause: asleep (alive) before the step's first call, while the other ranks wait for it.
    const FaultSpec* pause = nullptr;
    if (int64_t secs = rc_->faults.pause_s_before(s, &pause); secs > 0) {
      TruthEvent e;
      e.kind = FaultKind::kPause;
      e.global_rank = rc_->global_rank;
      e.step = s;
      e.op = static_cast<int64_t>(api_.ops());
      e.ms = secs * 1000;
      e.time_ns = shm::wall_ns();
      e.detail = "\"every\":" + std::to_string(pause->every) + ",\"s\":" + std::to_string(secs);
      rc_->write_truth(e);
      sleep_ms(secs * 1000);
    }
    run_step(s);
    const SimOptions& o = *rc_->opts;
    if (o.ckpt_every > 0 && (s + 1) % o.ckpt_every == 0) {
      const RankCoord rc = rc_->layout->coord(rc_->global_rank);
      CkptRank r;
      r.dir = o.ckpt_dir;
      r.format = o.ckpt_format;
      r.global_rank = rc_->global_rank;
      r.ranks = o.ranks;
      r.mp = rc.pp * o.tp + rc.tp;
      r.mp_size = o.tp * o.pp;
      r.dp = rc.dp;
      r.dp_size = o.dp();
      write_checkpoint(r, s + 1, o.ckpt_kill_at == s + 1);
    }
    if (rc_->status) rc_->status->steps.store(static_cast<uint64_t>(s + 1), std::memory_order_relaxed);
    // The step's compute: slowgpu makes this GPU's kernels take `factor` times longer.
    sleep_ms(static_cast<int64_t>(double(rc_->opts->step_ms) * rc_->faults.slow_factor_at(s)));
  }
}

void RankJob::destroy_comms() {
  api_.synchronize();
  for (auto it = comms_.rbegin(); it != comms_.rend(); ++it) (*it)->destroy();
  comms_.clear();
  for (auto& p : by_kind_) p = nullptr;
}

int rank_main(const SimOptions& o) {
  const int g = o.worker_rank;
  Layout layout(o);
  FabricLayout fl = FabricLayout::plan(layout, o);
  std::string err;
  std::unique_ptr<Fabric> fabric = Fabric::attach(o.fabric_fd, fl, &err);
  if (!fabric) {
    std::fprintf(stderr, "scout-sim: rank %d: %s\n", g, err.c_str());
    return 1;
  }
  RankStatus* status = fabric->rank_status(g);
  status->pid = static_cast<int32_t>(::getpid());
  status->state.store(kRankRunning, std::memory_order_release);

  RankCoord rc_coord = layout.coord(g);
  const char* host = std::getenv("SCOUT_HOST");
  char hn[256] = {0};
  if (!host || !*host) {
    ::gethostname(hn, sizeof(hn) - 1);
    host = hn;
  }
  set_log_identity(host, rc_coord.local_rank);
  auto env_or = [](const char* k) {
    const char* v = std::getenv(k);
    return v ? v : "(unset)";
  };
  nccl_debug_log(abi::kLogInfo, 0x80, "scout-sim", __LINE__,
                 "scout-sim rank %d: RANK=%s LOCAL_RANK=%s WORLD_SIZE=%s LOCAL_WORLD_SIZE=%s SCOUT_JOB_ID=%s "
                 "SCOUT_HOST=%s",
                 g, env_or("RANK"), env_or("LOCAL_RANK"), env_or("WORLD_SIZE"), env_or("LOCAL_WORLD_SIZE"),
                 env_or("SCOUT_JOB_ID"), env_or("SCOUT_HOST"));

  // NCCL loads the net plugin, then the profiler plugin, at the first communicator init
  // (docs/nccl-notes.md §1.1, 1.2, 6.1).
  const char* nenv = std::getenv("NCCL_NET_PLUGIN");
  LoadedNet net = load_net_plugin(nenv);
  if (net.ok()) {
    nccl_debug_log(abi::kLogInfo, 0x10, "scout-sim", __LINE__, "NET/Plugin: Loaded net plugin %s (v11) from %s",
                   net.v11->name, net.opened.c_str());
  } else if (nenv != nullptr && net.error != "disabled") {
    nccl_debug_log(abi::kLogInfo, 0x10, "scout-sim", __LINE__, "NET/Plugin: %s", net.error.c_str());
  }
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env)
    nccl_debug_log(abi::kLogInfo, 0x80, "scout-sim", __LINE__, "NCCL_PROFILER_PLUGIN set by environment to %s", env);
  LoadedPlugin plugin = load_profiler_plugin(env);
  if (plugin.ok()) {
    nccl_debug_log(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__,
                   "Successfully loaded external profiler plugin %s", plugin.opened.c_str());
  } else if (plugin.error != "disabled") {
    nccl_debug_log(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__, "PROFILER/Plugin: %s", plugin.error.c_str());
  }
  ProfilerDriver prof(plugin);
  if (plugin.ok())
    nccl_debug_log(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__, "PROFILER/Plugin: Loaded %s (v%d)",
                   prof.name(), prof.version());

  TruthWriter truth(o.truth);
  RankContext rc;
  rc.opts = &o;
  rc.layout = &layout;
  rc.global_rank = g;
  rc.fabric = fabric.get();
  rc.prof = &prof;
  rc.net = net.ok() ? &net : nullptr;
  rc.faults = FaultPlan(o.faults, g, o.ranks);
  rc.truth = &truth;
  rc.status = status;
  {
    RankJob job(&rc);
    job.init_comms(&nccl_debug_log);
    job.run_steps();
    job.destroy_comms();
  }
  if (plugin.ok()) {
    nccl_debug_log(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__, "Closing profiler plugin %s", prof.name());
    unload_profiler_plugin(&plugin);
  }
  unload_net_plugin(&net);
  status->state.store(kRankDone, std::memory_order_release);
  return 0;
}

std::string RankContext::gpu_of(int g) const {
  RankCoord c = layout->coord(g);
  return "GPU-sim-" + Layout::host_name(c.node) + "-" + std::to_string(c.local_rank);
}

void RankContext::write_device(const replay::EmuDeviceState& s) const {
  const char* mine = std::getenv("SCOUT_GPU");
  const char* dir = std::getenv("SCOUT_SHM_DIR");
  std::string err;
  const std::string path =
      replay::emu_device_path(dir && *dir ? dir : "/dev/shm", opts->job, mine && *mine ? mine : gpu_of(global_rank));
  if (!replay::write_emu_device(path, s, &err)) std::fprintf(stderr, "scout-sim: rank %d: %s\n", global_rank, err.c_str());
}

}  // namespace scout::sim
