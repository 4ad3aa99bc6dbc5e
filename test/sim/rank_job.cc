#include "test/sim/rank_job.h"

#include "test/sim/gemm_lt.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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
      case ActionKind::kSend: api_.send(send, a.count, a.peer, *c); break;
      case ActionKind::kRecv: api_.recv(recv, a.count, a.peer, *c); break;
      case ActionKind::kAlltoAll: api_.all_to_all(send, recv, a.count, *c); break;
      default: break;
    }
  }
  api_.synchronize();
}

void RankJob::run_steps() {
  for (int64_t s = 0; s < rc_->opts->steps; ++s) {
    run_step(s);
    if (rc_->status) rc_->status->steps.store(static_cast<uint64_t>(s + 1), std::memory_order_relaxed);
    sleep_ms(rc_->opts->step_ms);
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

  // NCCL loads the plugin at the first communicator init (digest 1.1, 1.2).
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env) nccl_debug_log(abi::kLogInfo, 0x80, "scout-sim", __LINE__, "NCCL_PROFILER_PLUGIN set by environment to %s", env);
  LoadedPlugin plugin = load_profiler_plugin(env);
  if (plugin.ok()) {
    nccl_debug_log(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__,
                   "Successfully loaded external profiler plugin %s", plugin.opened.c_str());
  } else if (plugin.error != "disabled") {
    nccl_debug_log(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__, "PROFILER/Plugin: %s",
                   plugin.error.c_str());
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
  rc.faults = FaultPlan(o.faults, g);
  rc.truth = &truth;
  rc.status = status;
  {
    RankJob job(&rc);
    job.init_comms(&nccl_debug_log);
    job.run_steps();
    job.destroy_comms();
  }
  if (plugin.ok()) {
    nccl_debug_log(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__, "Closing profiler plugin %s",
                   prof.name());
    unload_profiler_plugin(&plugin);
  }
  status->state.store(kRankDone, std::memory_order_release);
  return 0;
}

}  // namespace scout::sim
