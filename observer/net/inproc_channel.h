// The observers' channel with every endpoint in one process (one thread per endpoint): the same
// collective algorithms and byte accounting as GlooChannel (observer/net/channel.h), over
// in-memory mailboxes. For protocol tests and the scaling benchmark at 64 and 1024 simulated
// nodes, where a TCP context per node in one process is not feasible.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "observer/net/channel.h"

namespace scout::net {

class InprocNetwork;

// One endpoint. Use it from one thread at a time (the thread playing that node's observer).
class InprocChannel : public Channel {
 public:
  InprocChannel(InprocNetwork* net, int rank);
  void abort() override;

 protected:
  void transfer(uint64_t tag, const SendSpec* send, const RecvSpec* recv) override;
  void close_after_failure() override;

 private:
  InprocNetwork* net_;
};

// `size` endpoints with unbounded mailboxes. Sends never block (the message is queued at the
// receiver); a receive waits for the first queued message with its (source, tag), in order.
class InprocNetwork {
 public:
  explicit InprocNetwork(int size);
  int size() const { return static_cast<int>(boxes_.size()); }
  // Endpoint `rank` (created on first use, owned by the network).
  InprocChannel& endpoint(int rank);
  // Endpoint `rank` owned by the caller (instead of endpoint(); must not outlive the network).
  std::unique_ptr<Channel> connect(int rank);
  // Failure injection: endpoint `rank` is gone. Its own calls and every wait for a message from
  // it fail at once with ChannelError ("node-rank K is gone"), as a closed TCP connection would.
  void kill(int rank);

  // One network split over two processes (the scaling benchmark keeps the leader alone in its
  // process so that its memory and CPU are its own): a message for an endpoint for which
  // `remote(dest)` is true goes to `forward` instead of a local mailbox, and the other process's
  // messages for local endpoints come in through deliver(). Set before any endpoint is used.
  struct Bridge {
    std::function<bool(int dest)> remote;
    std::function<void(int dest, int source, uint64_t tag, std::vector<uint8_t> bytes)> forward;
  };
  void set_bridge(Bridge b) { bridge_ = std::move(b); }
  // A message from endpoint `source` (in the other process) for local endpoint `dest`.
  void deliver(int dest, int source, uint64_t tag, std::vector<uint8_t> bytes);

 private:
  friend class InprocChannel;
  struct Message {
    int source;
    uint64_t tag;
    std::vector<uint8_t> bytes;
  };
  struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Message> queue;
  };
  void post(int dest, Message m);
  void wake_all();

  std::vector<std::unique_ptr<Mailbox>> boxes_;
  std::vector<std::unique_ptr<std::atomic<bool>>> dead_;
  std::mutex endpoints_mu_;
  std::vector<std::unique_ptr<InprocChannel>> endpoints_;
  Bridge bridge_;
};

}  // namespace scout::net
