// The observers' channel: what scout-observers on different nodes say to each other (docs/observer-network.md).
//
// One endpoint per node-rank (0 .. size-1; node-rank 0 is the leader). Every collective below is
// called by every endpoint in the same order (a collective call number tags its messages, so
// calls never mix). The algorithms are written once, here, on top of three transport primitives
// (send, receive from one, receive from any of a set) that GlooChannel (TCP through Gloo) and
// InprocChannel (threads in one process, for tests and the scaling benchmark) implement, so both
// move exactly the same messages and count exactly the same bytes.
//
// Cost model (T = payload bytes of one endpoint's vector, N = size, p = largest power of two
// <= N, one message = one transport send; every figure is per endpoint and per call):
//   allreduce   recursive halving (reduce-scatter) + recursive doubling (allgather), Rabenseifner;
//               N - p "extra" endpoints first fold into a partner. Messages: 2 log2(p) (+1 or +2
//               on endpoints that fold); payload sent ~ 2 T (p-1)/p (+T when folding). Flat in N.
//   barrier     dissemination: ceil(log2 N) empty messages sent and received.
//   broadcast   binomial tree from the leader: size word then payload; a non-leader receives
//               2 messages and forwards to at most ceil(log2 N) children (leader: that many).
//   gather_to_leader  only endpoints with a non-empty payload send (2 messages: size, payload);
//               the leader receives 2 messages per contributor. Preceded by a one-word allreduce
//               unless the caller passes the contributor count it already knows.
//   reduce_to_leader  binomial tree to the leader: every endpoint merges its children's payloads
//               into its own and sends the result to its parent (a size word, then the payload
//               unless empty): 1-2 messages sent per endpoint, 2 received per child (at most
//               ceil(log2 N), the leader's count); bytes = what the caller's merge keeps.
//   allgather   sizes by a N-word allreduce, then a ring: N-1 steps; bytes received = sum of
//               the others' payloads. O(N) by nature: not used in the per-interval path.
// Wire bytes: Gloo's TCP transport frames every message with three 48-byte preambles (sender:
// "send ready" + data header; receiver: "receive ready"), so Traffic::wire_sent() =
// payload_sent + 96 * messages_sent + 48 * messages_received (and symmetrically for received).
// test/net/gloo_channel_test.cc checks this against the kernel's per-socket TCP byte counters.
//
// Errors: every call throws ChannelError when it cannot complete (peer gone, timeout, protocol
// violation). After the first error the channel is failed: every later call throws at once and the
// owner forms a new channel (docs/observer-network.md, "Failure handling").
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace scout::net {

// A channel call that could not complete. what() names the call, the peer node-rank if one is
// known, and the reason ("timed out after 5000 ms waiting for node-rank 3").
class ChannelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Messages and bytes one endpoint moved, counted when each send or receive completes.
struct Traffic {
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t payload_sent = 0;      // bytes handed to the transport
  uint64_t payload_received = 0;  // bytes delivered by the transport

  // Gloo TCP framing per message: the sender writes a "send ready" notice and the data header,
  // the receiver writes a "receive ready" notice; each is a 48-byte preamble (6 x size_t).
  static constexpr uint64_t kPreambleBytes = 48;
  // Bytes this endpoint put on the wire, framing included.
  uint64_t wire_sent() const {
    return payload_sent + 2 * kPreambleBytes * messages_sent + kPreambleBytes * messages_received;
  }
  // Bytes this endpoint took off the wire, framing included.
  uint64_t wire_received() const {
    return payload_received + 2 * kPreambleBytes * messages_received + kPreambleBytes * messages_sent;
  }
  Traffic operator-(const Traffic& o) const {
    return {messages_sent - o.messages_sent, messages_received - o.messages_received, payload_sent - o.payload_sent,
            payload_received - o.payload_received};
  }
};

// Forming a channel failed because observers did not all announce themselves in time, or a later
// epoch started meanwhile (they may still come: retry, at the latest epoch).
class RendezvousTimeout : public ChannelError {
 public:
  using ChannelError::ChannelError;
};

// The rendezvous store could not be reached (redis down, directory missing) before anything of
// the epoch was written: retry the same epoch once it answers again.
class RendezvousUnreachable : public ChannelError {
 public:
  using ChannelError::ChannelError;
};

enum class ReduceOp { kMin, kMax, kSum, kOr };  // kOr: bitwise

// One endpoint's payload as the leader received it.
struct Contribution {
  int rank = -1;
  std::vector<uint8_t> bytes;
};

class Channel {
 public:
  virtual ~Channel() = default;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_leader() const { return rank_ == 0; }

  // Element-wise reduction of `v` (same length on every endpoint) over all endpoints; every
  // endpoint gets the result in `v`. kSum wraps modulo 2^64. Cost: see the header comment.
  void allreduce(std::span<uint64_t> v, ReduceOp op);

  // Returns when every endpoint has entered the barrier.
  void barrier();

  // The leader's *data reaches every endpoint (any size, including 0); non-leaders' *data is
  // replaced.
  void broadcast(std::vector<uint8_t>* data);

  // Every endpoint's payload, in rank order, on every endpoint.
  std::vector<std::vector<uint8_t>> allgather(std::span<const uint8_t> mine);

  // On the leader: the non-empty payloads of every endpoint (its own included), sorted by rank.
  // Elsewhere: empty. Endpoints with an empty payload send nothing. `contributors`, when >= 0,
  // is the number of endpoints with a non-empty payload, already known to everyone (saves the
  // counting allreduce); a wrong count is a protocol error (ChannelError on the leader).
  std::vector<Contribution> gather_to_leader(std::span<const uint8_t> mine, int contributors = -1);

  // Combines two payloads into one (reduce_to_leader): associative; may drop what it cannot read.
  using Merge = std::function<std::vector<uint8_t>(std::vector<uint8_t> mine, std::vector<uint8_t> child)>;
  // On the leader: every endpoint's payload merged with `merge` up a binomial tree (each endpoint
  // merges its children's into its own, in increasing child rank, then sends to its parent).
  // Elsewhere: empty. Cost: see the header comment.
  std::vector<uint8_t> reduce_to_leader(std::vector<uint8_t> mine, const Merge& merge);

  // Point-to-point round trip used by clock synchronisation: sends `out` to `peer` and receives
  // `in.size()` bytes from it; both sides call it, each naming the other. The receive is posted
  // before the send, so neither side waits for the other's receive.
  void exchange(int peer, std::span<const uint8_t> out, std::span<uint8_t> in);
  // One-directional halves of exchange(), for protocols where the timing of each direction matters.
  void send_to(int peer, std::span<const uint8_t> out);
  void recv_from(int peer, std::span<uint8_t> in);

  // Totals since the channel was formed.
  Traffic traffic() const;

  // Wait limit of every primitive (default 30 s).
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Thread-safe: the call in progress (on another thread) and every later call fail at once
  // with ChannelError. For shutting an observer down while it waits on a peer.
  virtual void abort() = 0;

  // True after the first ChannelError; error() is its message.
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 protected:
  Channel(int rank, int size);

  // ---- transport primitives (implemented by GlooChannel / InprocChannel) ----
  // One message: `send` (peer >= 0) and/or `recv` (peer >= 0, or from any of `from_any`) posted
  // together, then both completed. Receives exactly `recv_len` bytes; a message of another
  // length is a protocol error. Sets *source to the sender. Throws ChannelError (plain reason,
  // without the call name; the caller adds it) on timeout or a dead peer.
  struct SendSpec {
    int peer = -1;
    const void* data = nullptr;
    size_t len = 0;
  };
  struct RecvSpec {
    int peer = -1;                  // -1: any of from_any
    std::span<const int> from_any;  // used when peer == -1
    void* data = nullptr;
    size_t len = 0;
    int* source = nullptr;  // out: sender
  };
  virtual void transfer(uint64_t tag, const SendSpec* send, const RecvSpec* recv) = 0;
  // Called once, at the first failure: drop the connections so that peers waiting on this
  // endpoint fail at once instead of at their timeout.
  virtual void close_after_failure() {}

 private:
  // Runs `body` as collective call `what`; turns failures into a failed channel.
  template <typename F>
  void run(const char* what, F&& body);
  // Largest payload one peer may announce for a broadcast, allgather or gather (bytes): the
  // largest real message (a node's hang drill-down) is tens of KiB; beyond this a size word is
  // malformed or hostile and the call fails instead of allocating it.
  static constexpr uint64_t kMaxPayloadBytes = uint64_t(64) << 20;
  // `n` when it is within kMaxPayloadBytes; otherwise ChannelError naming `what`.
  static uint64_t checked_payload(uint64_t n, const char* what);
  void send(uint64_t tag, int peer, const void* p, size_t n);
  void recv(uint64_t tag, int peer, void* p, size_t n);
  int recv_any(uint64_t tag, std::span<const int> from, void* p, size_t n);
  void sendrecv(uint64_t tag, int peer, const void* sp, size_t sn, void* rp, size_t rn);
  uint64_t next_tag();
  void count_send(size_t n);
  void count_recv(size_t n);

  int rank_;
  int size_;
  uint64_t calls_ = 0;  // collective calls so far; tags = (call << 16) | step
  std::chrono::milliseconds timeout_{30000};
  std::string error_;
  mutable std::mutex traffic_mu_;
  Traffic traffic_;
  std::vector<int> others_;  // every rank but the leader (gather sources)

  friend class ChannelTestPeer;
};

}  // namespace scout::net
