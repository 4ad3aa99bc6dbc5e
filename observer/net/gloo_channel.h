// The observers' channel over TCP through Gloo (Debian libgloo-dev): rendezvous through Gloo's
// FileStore ("file:DIR", a directory every node can reach) or RedisStore ("redis:HOST:PORT", a
// real redis-server), a full mesh of Gloo TCP pairs, and the collectives of channel.h on Gloo's
// unbound buffers. docs/observer-network.md ("Rendezvous").
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "observer/net/channel.h"

namespace gloo {
class Context;
namespace transport {
class Device;
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace scout::net {

struct GlooOptions {
  std::string rdzv;      // "file:DIR" or "redis:HOST:PORT"
  std::string job;       // job id: keys live under "scout/<job>/", so jobs can share a store
  int rank = 0;          // node-rank of this observer, 0 = leader
  int size = 1;          // observers in the job
  std::string hostname;  // address (name or IP) other observers reach this one at; "" = the
                         // machine's hostname; "127.0.0.1" for one-machine tests
  std::string iface;     // or: the network interface to use (e.g. "eth0"); wins over hostname
  uint64_t epoch = 0;    // formation attempt (see latest_epoch); keys live under ".../e<epoch>/"
  // Every observer must have announced itself within this time, or connect() fails naming the
  // missing node-ranks instead of waiting forever.
  std::chrono::milliseconds join_timeout{60000};
  // Wait limit of every message once connected (Channel::set_timeout).
  std::chrono::milliseconds timeout{30000};
  // Polled while waiting for the other observers: true makes connect() give up at once
  // (RendezvousTimeout "cancelled"). Null: never.
  const std::atomic<bool>* cancel = nullptr;
};

class GlooChannel : public Channel {
 public:
  // Forms the channel: announces this observer, waits until all `size` are present, connects
  // the TCP mesh, runs a barrier, then removes its own rendezvous keys (the store is left as
  // it was, apart from the epoch markers "scout/<job>/epoch/<e>", which are kept contiguous:
  // missing markers below `epoch`, e.g. after the store lost its keys, are written first).
  // Throws ChannelError with the rendezvous and the reason (bad spec, observers missing, ...);
  // RendezvousUnreachable when the store does not answer; RendezvousTimeout when observers are
  // missing at the join timeout or a later epoch has started meanwhile (join that one).
  static std::unique_ptr<GlooChannel> connect(const GlooOptions& opts);

  // The highest epoch any observer of `job` has started forming in the store named by `rdzv`
  // (0 if none). A restarted observer joins there; after a failure, survivors move to
  // max(latest_epoch, their epoch + 1) (docs/observer-network.md, "Failure handling").
  // Throws RendezvousUnreachable when the store does not answer.
  static uint64_t latest_epoch(const std::string& rdzv, const std::string& job);

  ~GlooChannel() override;
  void abort() override;

  const GlooOptions& options() const { return opts_; }

 protected:
  void transfer(uint64_t tag, const SendSpec* send, const RecvSpec* recv) override;
  void close_after_failure() override;

 private:
  GlooChannel(const GlooOptions& opts, std::shared_ptr<gloo::transport::Device> dev,
              std::shared_ptr<gloo::Context> ctx);
  GlooOptions opts_;
  std::shared_ptr<gloo::transport::Device> dev_;
  std::shared_ptr<gloo::Context> ctx_;
  // abort(): the buffers of the transfer in progress, to interrupt their waits.
  std::mutex abort_mu_;
  bool aborted_ = false;
  gloo::transport::UnboundBuffer* pending_recv_ = nullptr;
  gloo::transport::UnboundBuffer* pending_send_ = nullptr;
};

}  // namespace scout::net
