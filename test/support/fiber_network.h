// Many endpoints of the observers' channel played by fibers on ONE thread, for the scaling
// benchmark (test/bench/scale_bench.cc): 16,383 observers' digest rounds at 131,072 ranks cannot
// run as threads on a 2-core machine (2,047 threads already kept the load average above 300), but
// each is a short computation between waits for messages, so they run as user-level contexts
// (ucontext) switched by one scheduler. Every endpoint runs the real collective algorithms of
// observer/net/channel.h (FiberChannel implements its transport primitives over in-memory
// mailboxes, as InprocChannel does), so the messages, their bytes and their order are exactly
// those of the real protocol: only the scheduling differs.
//
// Endpoints not played here (the process being measured, across a socket) are reached through a
// bridge: a message for a remote endpoint goes to `forward`; the other process's messages come in
// through deliver() (thread-safe). remote_gone(rank) (the process playing it ended) makes every wait
// for one of its messages fail at once with ChannelError, as a closed TCP connection would.
//
// A fiber that waits longer than its channel's timeout for a message fails with ChannelError, as
// GlooChannel does; the scheduler measures the wait in wall time while no fiber can run.
#pragma once

#include <ucontext.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "observer/net/channel.h"

namespace scout::testing {

class FiberNetwork;

// One endpoint played by a fiber of a FiberNetwork. Used only from its fiber.
class FiberChannel : public net::Channel {
 public:
  FiberChannel(FiberNetwork* net, int rank);
  void abort() override;

 protected:
  void transfer(uint64_t tag, const SendSpec* send, const RecvSpec* recv) override;
  void close_after_failure() override;

 private:
  FiberNetwork* net_;
};

class FiberNetwork {
 public:
  // `size` endpoints; `local(rank)` says which are played here (the others are remote).
  FiberNetwork(int size, std::function<bool(int rank)> local);
  ~FiberNetwork();
  FiberNetwork(const FiberNetwork&) = delete;
  FiberNetwork& operator=(const FiberNetwork&) = delete;

  int size() const { return size_; }
  // The channel of local endpoint `rank` (created on first use).
  FiberChannel& endpoint(int rank);
  // Runs `body` as local endpoint `rank`'s fiber, on a stack of `stack_bytes` (a guard page below
  // it turns an overflow into a crash, never a silent corruption). `body` must catch what it
  // throws. Before run().
  void spawn(int rank, std::function<void()> body, size_t stack_bytes = 256 << 10);
  // Runs every fiber until all have returned (a fiber whose peer is gone, or that waited past its
  // channel's timeout, gets ChannelError from its channel call).
  void run();

  // After run(): goes on handing messages between remote endpoints (those routed through this
  // process) until every one of `remotes` is gone, so that the last round of two other processes
  // is not cut short when the fibers finish theirs first.
  void forward_until_gone(const std::vector<int>& remotes);

  // Messages for remote endpoints; set before run().
  void set_forward(std::function<void(int dest, int source, uint64_t tag, std::vector<uint8_t> bytes)> f) {
    forward_ = std::move(f);
  }
  // A message from remote endpoint `source` for local endpoint `dest` (any thread).
  void deliver(int dest, int source, uint64_t tag, std::vector<uint8_t> bytes);
  // Remote endpoint `rank` is gone (any thread): waits for its messages fail at once.
  void remote_gone(int rank);
  // Local endpoint `rank` failed or was aborted: waits for its messages fail at once.
  void kill(int rank);

  // Context switches so far (a fiber resumed by the scheduler).
  uint64_t switches() const { return switches_; }

 private:
  friend class FiberChannel;
  struct Message {
    int source;
    uint64_t tag;
    std::vector<uint8_t> bytes;
  };
  struct Fiber {
    ucontext_t ctx;
    void* stack = nullptr;  // mmap'd, guard page first
    size_t stack_len = 0;
    std::function<void()> body;
    bool done = false;
    bool ready = false;
    // What it waits for: a message with `tag` from `peer` (or any of `from_any`).
    bool waiting = false;
    uint64_t tag = 0;
    int peer = -1;
    std::vector<int> from_any;
  };
  static void trampoline(unsigned lo, unsigned hi);
  bool matches(const Fiber& f, const Message& m) const;
  // Queues `m` at local endpoint `dest` (scheduler thread) and readies its fiber if it waits for it.
  void post(int dest, Message m);
  void drain_inbox();
  void make_ready(int rank);
  // The running fiber waits for a message (scheduler resumes it when one matches or a peer fails).
  void wait_for_message(int rank, uint64_t tag, int peer, std::span<const int> from_any);
  bool is_dead(int rank) const;

  int size_;
  std::function<bool(int)> local_;
  std::vector<std::unique_ptr<Fiber>> fibers_;             // by rank; null if not a fiber here
  std::vector<std::deque<Message>> boxes_;                // mailbox per local endpoint
  std::vector<std::unique_ptr<FiberChannel>> endpoints_;  // by rank
  std::vector<uint8_t> dead_;                             // endpoints that failed or are gone
  std::vector<int> gone_pending_;                         // remote_gone() calls, for the scheduler
  std::deque<int> ready_;
  ucontext_t sched_;
  int current_ = -1;
  int live_ = 0;
  uint64_t switches_ = 0;
  std::function<void(int, int, uint64_t, std::vector<uint8_t>)> forward_;
  // Messages from the other process, handed to the scheduler thread.
  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<std::pair<int, Message>> inbox_;
};

}  // namespace scout::testing
