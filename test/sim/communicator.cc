#include "test/sim/communicator.h"

#include "test/sim/proxy_events.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/clock.h"

namespace scout::sim {

Communicator::Communicator(RankContext* rc, const CommSpec* spec, uint64_t comm_hash)
    : rc_(rc), spec_(spec), rank_(spec->rank_of(rc->global_rank)), hash_(comm_hash) {
  const size_t n = static_cast<size_t>(spec->nranks());
  api_sends.assign(n, 0);
  api_recvs.assign(n, 0);
  sends_launched.assign(n, 0);
  recvs_launched.assign(n, 0);
}

Communicator::~Communicator() {
  if (started_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    proxy_.join();
  }
}

abi::Result Communicator::init(abi::Logger logger) {
  // Bootstrap: every member reaches init before any continues (the allgather NCCL does first).
  if (rc_->fabric) barrier_wait(rc_->fabric->barrier(spec_->id), nranks(), &barrier_round_);
  // Only communicators that span hosts use the network (NCCL's NET transport).
  bool net = rc_->net != nullptr && spec_->n_nodes > 1 && net_.init(*rc_->net, hash_, logger);
  abi::Result r =
      rc_->prof->init(&context_, hash_, &rc_->mask, spec_->name.c_str(), spec_->n_nodes, nranks(), rank_, logger);
  if (r != abi::kSuccess && logger)
    logger(abi::kLogInfo, abi::kSubsysInit, "scout-sim", __LINE__,
           "Profiler init failed with error '%d'. Continue without profiler.", r);
  std::string err;
  if (net && !net_.connect(rc_->fabric, *spec_, rank_, *rc_->layout, 60, &err)) {
    std::fprintf(stderr, "scout-sim: rank %d: %s: net transport: %s\n", rc_->global_rank, spec_->name.c_str(),
                 err.c_str());
    std::_Exit(1);  // NCCL fails the communicator init: the rank cannot run
  }
  proxy_ = std::thread([this] { proxy_main(); });
  started_ = true;
  return r;
}

void Communicator::destroy() {
  wait_idle();
  if (started_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    proxy_.join();
    started_ = false;
  }
  net_.close();                   // connections closed with the proxy, then the net plugin's finalize
  rc_->prof->finalize(context_);  // after the proxy is gone, as commFree does (docs/nccl-notes.md §1.3)
  context_ = nullptr;
}

void Communicator::post(KernelPlan&& plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(plan));
    ++posted_;
  }
  cv_.notify_one();
}

void Communicator::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return completed_ == posted_; });
}

void Communicator::park_stuck() {
  for (;;) {
    KernelPlan plan;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !queue_.empty(); });  // a quit does not end a stuck kernel
      plan = std::move(queue_.front());
      queue_.pop_front();
    }
    for (const KernelTask& t : plan.tasks)
      if (is_collective(t.func)) emit_appended_proxy_ops(*this, t);
  }
}

void Communicator::proxy_main() {
  char name[16];
  std::snprintf(name, sizeof(name), "proxy-%s", spec_->name.c_str());
  ::pthread_setname_np(::pthread_self(), name);
  for (;;) {
    KernelPlan plan;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return quit_ || !queue_.empty(); });
      if (queue_.empty()) return;  // quit with nothing left to run
      plan = std::move(queue_.front());
      queue_.pop_front();
    }
    rc_->kernel_turn(plan.stream_seq);
    run_kernel_plan(*this, plan);
    rc_->kernel_done();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++completed_;
    }
    idle_cv_.notify_all();
  }
}

TruthEvent truth_event(const Communicator& c, FaultKind kind, Func func, uint64_t key, int key_peer, int64_t step,
                       int64_t op) {
  TruthEvent e;
  e.kind = kind;
  e.global_rank = c.rc()->global_rank;
  e.comm_name = c.spec().name;
  e.comm_hash = c.hash();
  e.comm_nranks = c.nranks();
  e.comm_rank = c.rank();
  e.func = func;
  e.key = key;
  e.key_peer = is_collective(func) ? -1 : key_peer;
  e.step = step;
  e.op = op;
  e.time_ns = shm::wall_ns();
  return e;
}

}  // namespace scout::sim
