#include "test/support/fiber_network.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace scout::testing {

namespace {
FiberNetwork* g_starting = nullptr;  // the network whose fiber trampoline() is entering
}  // namespace

FiberChannel::FiberChannel(FiberNetwork* net, int rank) : Channel(rank, net->size()), net_(net) {}

void FiberChannel::abort() { net_->kill(rank()); }
void FiberChannel::close_after_failure() { net_->kill(rank()); }

void FiberChannel::transfer(uint64_t tag, const SendSpec* send, const RecvSpec* recv) {
  const int me = rank();
  if (net_->is_dead(me)) throw net::ChannelError("this endpoint was killed");
  if (send) {
    if (send->peer < 0 || send->peer >= size()) {
      throw net::ChannelError("send to node-rank " + std::to_string(send->peer) + " (no such endpoint)");
    }
    if (net_->is_dead(send->peer)) throw net::ChannelError("node-rank " + std::to_string(send->peer) + " is gone");
    const auto* p = static_cast<const uint8_t*>(send->data);
    net_->post(send->peer, FiberNetwork::Message{me, tag, std::vector<uint8_t>(p, p + send->len)});
  }
  if (!recv) return;
  std::deque<FiberNetwork::Message>& box = net_->boxes_[size_t(me)];
  auto from_ok = [recv](int src) {
    if (recv->peer >= 0) return src == recv->peer;
    return std::find(recv->from_any.begin(), recv->from_any.end(), src) != recv->from_any.end();
  };
  for (;;) {
    auto it = std::find_if(box.begin(), box.end(),
                           [&](const FiberNetwork::Message& m) { return m.tag == tag && from_ok(m.source); });
    if (it != box.end()) {
      if (it->bytes.size() != recv->len) {
        throw net::ChannelError("message of " + std::to_string(it->bytes.size()) + " bytes from node-rank " +
                                std::to_string(it->source) + " where " + std::to_string(recv->len) +
                                " were expected");
      }
      if (recv->len > 0) std::memcpy(recv->data, it->bytes.data(), recv->len);
      if (recv->source) *recv->source = it->source;
      box.erase(it);
      return;
    }
    if (net_->is_dead(me)) throw net::ChannelError("this endpoint was killed");
    if (recv->peer >= 0 && net_->is_dead(recv->peer)) {
      throw net::ChannelError("node-rank " + std::to_string(recv->peer) + " is gone");
    }
    if (recv->peer < 0) {
      for (int r : recv->from_any) {
        if (net_->is_dead(r)) throw net::ChannelError("node-rank " + std::to_string(r) + " is gone");
      }
    }
    net_->wait_for_message(me, tag, recv->peer, recv->from_any);
    if (net_->fibers_[size_t(me)]->waiting) {  // woken without a message: the wait timed out
      net_->fibers_[size_t(me)]->waiting = false;
      throw net::ChannelError("timed out after " + std::to_string(timeout().count()) + " ms waiting for " +
                              (recv->peer >= 0 ? "node-rank " + std::to_string(recv->peer)
                                               : std::to_string(recv->from_any.size()) + " node-ranks"));
    }
  }
}

FiberNetwork::FiberNetwork(int size, std::function<bool(int)> local)
    : size_(size), local_(std::move(local)), fibers_(size_t(size)), boxes_(size_t(size)),
      endpoints_(size_t(size)), dead_(size_t(size), 0) {
  if (size < 1) throw std::invalid_argument("FiberNetwork: at least one endpoint");
}

FiberNetwork::~FiberNetwork() {
  for (auto& f : fibers_) {
    if (f && f->stack) ::munmap(f->stack, f->stack_len);
  }
}

FiberChannel& FiberNetwork::endpoint(int rank) {
  if (rank < 0 || rank >= size_ || !local_(rank)) {
    throw net::ChannelError("observer network: no fiber endpoint " + std::to_string(rank));
  }
  if (!endpoints_[size_t(rank)]) endpoints_[size_t(rank)] = std::make_unique<FiberChannel>(this, rank);
  return *endpoints_[size_t(rank)];
}

bool FiberNetwork::is_dead(int rank) const { return rank < 0 || rank >= size_ || dead_[size_t(rank)] != 0; }

void FiberNetwork::trampoline(unsigned lo, unsigned hi) {
  (void)lo;
  (void)hi;
  FiberNetwork* self = g_starting;
  const int rank = self->current_;
  Fiber& f = *self->fibers_[size_t(rank)];
  f.body();
  f.done = true;
  self->live_--;
  // Returning resumes uc_link: the scheduler.
}

void FiberNetwork::spawn(int rank, std::function<void()> body, size_t stack_bytes) {
  if (rank < 0 || rank >= size_ || !local_(rank) || fibers_[size_t(rank)]) {
    throw std::invalid_argument("FiberNetwork: no local endpoint " + std::to_string(rank) + " to spawn");
  }
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  stack_bytes = (stack_bytes + page - 1) / page * page;
  auto f = std::make_unique<Fiber>();
  f->stack_len = stack_bytes + page;
  f->stack = ::mmap(nullptr, f->stack_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (f->stack == MAP_FAILED) throw std::runtime_error("FiberNetwork: no memory for a fiber stack");
  ::mprotect(f->stack, page, PROT_NONE);  // guard page: an overflow faults
  f->body = std::move(body);
  ::getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = static_cast<char*>(f->stack) + page;
  f->ctx.uc_stack.ss_size = stack_bytes;
  f->ctx.uc_link = &sched_;
  ::makecontext(&f->ctx, reinterpret_cast<void (*)()>(&FiberNetwork::trampoline), 2, 0u, 0u);
  f->ready = true;
  fibers_[size_t(rank)] = std::move(f);
  ready_.push_back(rank);
  live_++;
}

bool FiberNetwork::matches(const Fiber& f, const Message& m) const {
  if (!f.waiting || m.tag != f.tag) return false;
  if (f.peer >= 0) return m.source == f.peer;
  return std::find(f.from_any.begin(), f.from_any.end(), m.source) != f.from_any.end();
}

void FiberNetwork::make_ready(int rank) {
  Fiber* f = fibers_[size_t(rank)].get();
  if (!f || f->done || f->ready) return;
  f->ready = true;
  ready_.push_back(rank);
}

void FiberNetwork::post(int dest, Message m) {
  if (!local_(dest)) {
    if (forward_) forward_(dest, m.source, m.tag, std::move(m.bytes));
    return;
  }
  Fiber* f = fibers_[size_t(dest)].get();
  const bool wake = f && matches(*f, m);
  boxes_[size_t(dest)].push_back(std::move(m));
  if (wake) {
    f->waiting = false;
    make_ready(dest);
  }
}

void FiberNetwork::deliver(int dest, int source, uint64_t tag, std::vector<uint8_t> bytes) {
  if (dest < 0 || dest >= size_) return;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.emplace_back(dest, Message{source, tag, std::move(bytes)});
  }
  inbox_cv_.notify_one();
}

void FiberNetwork::remote_gone(int rank) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    gone_pending_.push_back(rank);
  }
  inbox_cv_.notify_one();
}

void FiberNetwork::kill(int rank) {
  if (rank < 0 || rank >= size_) return;
  dead_[size_t(rank)] = 1;
  // Fibers waiting on it re-check (and fail); called on the scheduler thread.
  for (int r = 0; r < size_; ++r) {
    Fiber* f = fibers_[size_t(r)].get();
    if (!f || !f->waiting) continue;
    if (r == rank || f->peer == rank ||
        (f->peer < 0 && std::find(f->from_any.begin(), f->from_any.end(), rank) != f->from_any.end())) {
      f->waiting = false;
      make_ready(r);
    }
  }
}

void FiberNetwork::drain_inbox() {
  std::vector<std::pair<int, Message>> got;
  std::vector<int> gone;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    got.swap(inbox_);
    gone.swap(gone_pending_);
  }
  for (auto& [dest, m] : got) post(dest, std::move(m));  // what it sent before it went
  for (int r : gone) kill(r);
}

void FiberNetwork::wait_for_message(int rank, uint64_t tag, int peer, std::span<const int> from_any) {
  Fiber& f = *fibers_[size_t(rank)];
  f.waiting = true;
  f.tag = tag;
  f.peer = peer;
  f.from_any.assign(from_any.begin(), from_any.end());
  f.ready = false;
  ::swapcontext(&f.ctx, &sched_);  // back when readied: a message matched, a peer failed, or timeout
}

void FiberNetwork::forward_until_gone(const std::vector<int>& remotes) {
  for (;;) {
    drain_inbox();
    bool all = true;
    for (int r : remotes) all = all && is_dead(r);
    if (all) return;
    std::unique_lock<std::mutex> lock(inbox_mu_);
    if (inbox_.empty() && gone_pending_.empty()) inbox_cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void FiberNetwork::run() {
  using clock = std::chrono::steady_clock;
  auto idle_since = clock::now();
  while (live_ > 0) {
    drain_inbox();
    if (ready_.empty()) {
      // Nothing can run: wait for the other process, or time out every waiting fiber.
      std::chrono::milliseconds limit{30000};
      for (auto& e : endpoints_) {
        if (e) limit = std::max(limit, e->timeout());
      }
      std::unique_lock<std::mutex> lock(inbox_mu_);
      if (inbox_.empty() && gone_pending_.empty()) inbox_cv_.wait_for(lock, std::chrono::milliseconds(100));
      const bool nothing = inbox_.empty() && gone_pending_.empty();
      lock.unlock();
      if (nothing && clock::now() - idle_since > limit) {
        for (int r = 0; r < size_; ++r) {
          Fiber* f = fibers_[size_t(r)].get();
          if (f && f->waiting) make_ready(r);  // still `waiting`: transfer() reports the timeout
        }
      }
      continue;
    }
    idle_since = clock::now();
    const int r = ready_.front();
    ready_.pop_front();
    Fiber& f = *fibers_[size_t(r)];
    f.ready = false;
    if (f.done) continue;
    current_ = r;
    g_starting = this;
    ++switches_;
    ::swapcontext(&sched_, &f.ctx);
    current_ = -1;
  }
}

}  // namespace scout::testing
