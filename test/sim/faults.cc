#include "test/sim/faults.h"

#include <algorithm>

namespace scout::sim {

FaultPlan::FaultPlan(const std::vector<FaultSpec>& faults, int global_rank, int world)
    : rank_(global_rank), world_(world) {
  for (const FaultSpec& f : faults) {
    if (f.kind == FaultKind::kNondet) nondet_.push_back(f);
    if (f.kind == FaultKind::kSlowNic) {
      nics_.push_back(f);
      continue;
    }
    if (f.kind == FaultKind::kNicDown) {
      nic_downs_.push_back(f);
      continue;
    }
    if (f.kind == FaultKind::kLinkDown) {
      downs_.push_back(f);
      if (f.peer == global_rank) {
        FaultSpec g = f;
        std::swap(g.rank, g.peer);
        g.mirror = true;
        mirrors_.push_back(g);
      }
    }
    if (f.kind == FaultKind::kSlowlink)
      links_.push_back(f);
    else if (f.rank == global_rank)
      mine_.push_back(f);
    if (f.kind == FaultKind::kSlowlink && f.peer == global_rank) {  // both ends' devices see the delay
      FaultSpec g = f;
      std::swap(g.rank, g.peer);
      hw_links_.push_back(g);
    } else if (f.kind == FaultKind::kSlowlink && f.rank == global_rank) {
      hw_links_.push_back(f);
    }
  }
}

OpFaults FaultPlan::at_op(uint64_t op) const {
  OpFaults r;
  const int64_t o = static_cast<int64_t>(op);
  for (const FaultSpec& f : mine_) {
    switch (f.kind) {
      case FaultKind::kHang:
        if (o == f.target_op) r.hang = &f;
        break;
      case FaultKind::kCrash:
        if (o == f.target_op) r.crash = &f;
        break;
      case FaultKind::kNan:
        if (o == f.target_op) r.nan = &f;
        break;
      case FaultKind::kDesync:
        if (o == f.target_op) r.desync = &f;
        break;
      case FaultKind::kSdc:
        if (o == f.target_op) r.sdc = &f;
        break;
      case FaultKind::kDtype:
        if (o == f.target_op) r.dtype = &f;
        break;
      case FaultKind::kOptype:
        if (o == f.target_op) r.optype = &f;
        break;
      case FaultKind::kSkip:
        if (o == f.target_op) r.skip = &f;
        break;
      case FaultKind::kWrongGroup:
        if (o == f.target_op) r.wronggroup = &f;
        break;
      case FaultKind::kEnqueueStall:
        if (o == f.target_op) r.enqueuestall = &f;
        break;
      case FaultKind::kKernelStall:
        if (o == f.target_op) r.kernelstall = &f;
        break;
      case FaultKind::kStraggler:
        if (o >= f.target_op && f.ms > r.straggle_ms) {
          r.straggle_ms = f.ms;
          r.straggler = &f;
        }
        break;
      default: break;  // slowlink and hardware faults act outside operations
    }
  }
  return r;
}

int64_t FaultPlan::slowlink_coll_ms(const CommSpec& comm, int64_t step) const {
  int64_t ms = 0;
  for (const FaultSpec& f : links_)
    if (step >= f.target_step && comm.rank_of(f.rank) >= 0 && comm.rank_of(f.peer) >= 0) ms = std::max(ms, f.ms);
  return ms;
}

int64_t FaultPlan::slowlink_p2p_ms(int a, int b, int64_t step) const {
  int64_t ms = 0;
  for (const FaultSpec& f : links_)
    if (step >= f.target_step && ((f.rank == a && f.peer == b) || (f.rank == b && f.peer == a)))
      ms = std::max(ms, f.ms);
  return ms;
}

std::vector<const FaultSpec*> FaultPlan::slowlinks_of_mine(const CommSpec& comm, int64_t step) const {
  std::vector<const FaultSpec*> out;
  for (const FaultSpec& f : links_)
    if (f.rank == rank_ && step >= f.target_step && comm.rank_of(f.peer) >= 0) out.push_back(&f);
  return out;
}

bool FaultPlan::p2p_reversed(int64_t step, const FaultSpec** out) const {
  for (const FaultSpec& f : mine_)
    if (f.kind == FaultKind::kP2pOrder && step == f.target_step) {
      if (out) *out = &f;
      return true;
    }
  return false;
}

namespace {
bool on_host(const FaultSpec& f, int g) { return std::find(f.node_ranks.begin(), f.node_ranks.end(), g) != f.node_ranks.end(); }
}  // namespace

bool FaultPlan::link_down(int a, int b, int64_t step, const FaultSpec** out) const {
  for (const FaultSpec& f : downs_)
    if (step >= f.target_step && ((f.rank == a && f.peer == b) || (f.rank == b && f.peer == a))) {
      if (out) *out = &f;
      return true;
    }
  for (const FaultSpec& f : nic_downs_)
    if (step >= f.target_step && on_host(f, a) != on_host(f, b)) {
      if (out) *out = &f;
      return true;
    }
  return false;
}

int64_t FaultPlan::slownic_coll_ms(const CommSpec& comm, int64_t step, const FaultSpec** out) const {
  int64_t ms = 0;
  if (comm.n_nodes < 2) return 0;
  for (const FaultSpec& f : nics_) {
    if (step < f.target_step || f.ms <= ms) continue;
    bool touches = false;
    for (int g : comm.members) touches = touches || on_host(f, g);
    if (!touches) continue;
    ms = f.ms;
    if (out) *out = &f;
  }
  return ms;
}

int64_t FaultPlan::slownic_p2p_ms(int a, int b, int64_t step, const FaultSpec** out) const {
  int64_t ms = 0;
  for (const FaultSpec& f : nics_)
    if (step >= f.target_step && on_host(f, a) != on_host(f, b) && f.ms > ms) {
      ms = f.ms;
      if (out) *out = &f;
    }
  return ms;
}

int64_t FaultPlan::pause_s_before(int64_t step, const FaultSpec** out) const {
  int64_t s = 0;
  for (const FaultSpec& f : mine_)
    if (f.kind == FaultKind::kPause && step > 0 && step % f.every == 0 && f.pause_s > s) {
      s = f.pause_s;
      if (out) *out = &f;
    }
  return s;
}

bool FaultPlan::extra_step(const FaultSpec** out) const {
  for (const FaultSpec& f : mine_)
    if (f.kind == FaultKind::kExtraStep) {
      if (out) *out = &f;
      return true;
    }
  return false;
}

const FaultSpec* FaultPlan::nondet_in(const CommSpec& comm, int64_t step) const {
  for (const FaultSpec& f : nondet_)
    if (step >= f.target_step && comm.rank_of(f.rank) >= 0) return &f;
  return nullptr;
}

bool FaultPlan::gpusdc_at(int64_t step) const {
  for (const FaultSpec& f : mine_)
    if (f.kind == FaultKind::kGpuSdc && step >= f.target_step) return true;
  return false;
}

double FaultPlan::slow_factor_at(int64_t step) const {
  double x = 1.0;
  for (const FaultSpec& f : mine_)
    if (f.kind == FaultKind::kSlowGpu && step >= f.target_step) x = std::max(x, f.factor);
  return x;
}

bool FaultPlan::linksdc_from(int sender, int64_t step) const {
  for (const FaultSpec& f : mine_)
    if (f.kind == FaultKind::kLinkSdc && f.peer == sender && step >= f.target_step) return true;
  return false;
}

std::vector<const FaultSpec*> FaultPlan::hardware_starting(int64_t step) const {
  std::vector<const FaultSpec*> out;
  for (const FaultSpec& f : mine_)
    if (is_hardware_fault(f.kind) && f.target_step == step) out.push_back(&f);
  for (const FaultSpec& f : hw_links_)
    if (f.target_step == step) out.push_back(&f);
  for (const FaultSpec& f : mirrors_)
    if (f.target_step == step) out.push_back(&f);
  for (const FaultSpec& f : nic_downs_)
    if (f.target_step == step) out.push_back(&f);
  return out;
}

replay::EmuDeviceState FaultPlan::device_at(int64_t step, const std::function<std::string(int)>& gpu_of) const {
  replay::EmuDeviceState d;
  d.gemm_flip = gpusdc_at(step);
  d.slow_factor = slow_factor_at(step);
  for (const FaultSpec& f : mine_)
    if (f.kind == FaultKind::kLinkSdc && step >= f.target_step) d.links_in[gpu_of(f.peer)].flip = true;
  for (const FaultSpec& f : hw_links_)
    if (step >= f.target_step) {
      auto& l = d.links_in[gpu_of(f.peer)];
      l.delay_ns = std::max(l.delay_ns, f.ms * 1'000'000);
    }
  // A link that is down delivers nothing in either direction: each end's device receives nothing
  // from the other.
  for (const FaultSpec& f : downs_)
    if (step >= f.target_step && (f.rank == rank_ || f.peer == rank_))
      d.links_in[gpu_of(f.rank == rank_ ? f.peer : f.rank)].down = true;
  for (const FaultSpec& f : nic_downs_) {
    if (step < f.target_step) continue;
    const bool mine = on_host(f, rank_);
    for (int g = 0; g < world_; ++g)
      if (on_host(f, g) != mine) d.links_in[gpu_of(g)].down = true;
  }
  return d;
}

}  // namespace scout::sim
