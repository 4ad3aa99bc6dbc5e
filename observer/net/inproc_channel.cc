#include "observer/net/inproc_channel.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

namespace scout::net {

InprocNetwork::InprocNetwork(int size) {
  if (size < 1) throw ChannelError("observer network: in-process network needs at least 1 endpoint");
  for (int i = 0; i < size; ++i) {
    boxes_.push_back(std::make_unique<Mailbox>());
    dead_.push_back(std::make_unique<std::atomic<bool>>(false));
  }
  endpoints_.resize(size);
}

InprocChannel& InprocNetwork::endpoint(int rank) {
  std::lock_guard<std::mutex> lock(endpoints_mu_);
  if (rank < 0 || rank >= size()) {
    throw ChannelError("observer network: no in-process endpoint " + std::to_string(rank));
  }
  if (!endpoints_[rank]) endpoints_[rank] = std::make_unique<InprocChannel>(this, rank);
  return *endpoints_[rank];
}

std::unique_ptr<Channel> InprocNetwork::connect(int rank) {
  if (rank < 0 || rank >= size()) {
    throw ChannelError("observer network: no in-process endpoint " + std::to_string(rank));
  }
  return std::make_unique<InprocChannel>(this, rank);
}

void InprocNetwork::kill(int rank) {
  dead_.at(rank)->store(true);
  wake_all();
}

void InprocNetwork::wake_all() {
  for (auto& b : boxes_) {
    std::lock_guard<std::mutex> lock(b->mu);
    b->cv.notify_all();
  }
}

void InprocNetwork::deliver(int dest, int source, uint64_t tag, std::vector<uint8_t> bytes) {
  if (dest < 0 || dest >= size()) return;
  post(dest, Message{source, tag, std::move(bytes)});
}

void InprocNetwork::post(int dest, Message m) {
  if (bridge_.remote && bridge_.remote(dest)) {
    bridge_.forward(dest, m.source, m.tag, std::move(m.bytes));
    return;
  }
  Mailbox& b = *boxes_[dest];
  {
    std::lock_guard<std::mutex> lock(b.mu);
    b.queue.push_back(std::move(m));
  }
  b.cv.notify_one();
}

InprocChannel::InprocChannel(InprocNetwork* net, int rank) : Channel(rank, net->size()), net_(net) {}

void InprocChannel::close_after_failure() { net_->kill(rank()); }
void InprocChannel::abort() { net_->kill(rank()); }

void InprocChannel::transfer(uint64_t tag, const SendSpec* send, const RecvSpec* recv) {
  const int me = rank();
  if (net_->dead_[me]->load()) throw ChannelError("this endpoint was killed");
  if (send) {
    if (send->peer < 0 || send->peer >= size()) {
      throw ChannelError("send to node-rank " + std::to_string(send->peer) + " (no such endpoint)");
    }
    if (net_->dead_[send->peer]->load()) { throw ChannelError("node-rank " + std::to_string(send->peer) + " is gone"); }
    InprocNetwork::Message m{me, tag, {}};
    const auto* p = static_cast<const uint8_t*>(send->data);
    m.bytes.assign(p, p + send->len);
    net_->post(send->peer, std::move(m));
  }
  if (!recv) return;
  auto from_ok = [recv](int src) {
    if (recv->peer >= 0) return src == recv->peer;
    return std::find(recv->from_any.begin(), recv->from_any.end(), src) != recv->from_any.end();
  };
  auto peer_dead = [&]() -> int {
    if (recv->peer >= 0) return net_->dead_[recv->peer]->load() ? recv->peer : -1;
    for (int r : recv->from_any) {
      if (net_->dead_[r]->load()) return r;
    }
    return -1;
  };
  InprocNetwork::Mailbox& box = *net_->boxes_[me];
  const auto deadline = std::chrono::steady_clock::now() + timeout();
  std::unique_lock<std::mutex> lock(box.mu);
  bool timed_out = false;
  for (;;) {
    auto it = std::find_if(box.queue.begin(), box.queue.end(),
                           [&](const InprocNetwork::Message& m) { return m.tag == tag && from_ok(m.source); });
    if (it != box.queue.end()) {
      if (it->bytes.size() != recv->len) {
        throw ChannelError("message of " + std::to_string(it->bytes.size()) + " bytes from node-rank " +
                           std::to_string(it->source) + " where " + std::to_string(recv->len) + " were expected");
      }
      if (recv->len > 0) std::memcpy(recv->data, it->bytes.data(), recv->len);
      if (recv->source) *recv->source = it->source;
      box.queue.erase(it);
      return;
    }
    if (net_->dead_[me]->load()) throw ChannelError("this endpoint was killed");
    if (int d = peer_dead(); d >= 0) throw ChannelError("node-rank " + std::to_string(d) + " is gone");
    if (timed_out) {
      throw ChannelError("timed out after " + std::to_string(timeout().count()) + " ms waiting for " +
                         (recv->peer >= 0
                              ? "node-rank " + std::to_string(recv->peer)
                              : std::string("any of ") + std::to_string(recv->from_any.size()) + " node-ranks"));
    }
    timed_out = box.cv.wait_until(lock, deadline) == std::cv_status::timeout;
  }
}

}  // namespace scout::net
