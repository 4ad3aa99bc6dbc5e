#include "observer/net/gloo_channel.h"

#include "observer/net/key_store.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/context.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

namespace scout::net {

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(20);

std::string job_base(const std::string& job) { return "scout/" + job + "/"; }
std::string epoch_marker(const std::string& job, uint64_t e) { return job_base(job) + "epoch/" + std::to_string(e); }
std::string epoch_prefix(const std::string& job, uint64_t e) { return job_base(job) + "e" + std::to_string(e); }
// gloo::rendezvous::PrefixStore joins prefix and key with '/'.
std::string in_epoch(const std::string& job, uint64_t e, const std::string& key) {
  return epoch_prefix(job, e) + "/" + key;
}

// The highest epoch marker of `job`, or -1 when there is none (a new job, or a store that lost
// its keys: a redis-server restarted without persistence). Markers form a prefix 0..k (each is
// written only once the one below it exists), so: gallop, then bisect.
int64_t latest_marker(KeyStore& keys, const std::string& job) {
  if (!keys.has(epoch_marker(job, 0))) return -1;
  uint64_t lo = 0, hi = 1;
  while (keys.has(epoch_marker(job, hi))) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (keys.has(epoch_marker(job, mid)) ? lo : hi) = mid;
  }
  return int64_t(lo);
}

// Writes the markers up to `epoch` that are missing, lowest first, so the prefix property holds
// at every moment (a survivor at epoch 5 meeting a store that lost its keys writes 0..5, and a
// restarted observer reading latest_epoch() then finds 5).
void mark_epochs_up_to(KeyStore& keys, const std::string& job, uint64_t epoch) {
  for (uint64_t e = uint64_t(latest_marker(keys, job) + 1); e <= epoch; ++e) keys.set_once(epoch_marker(job, e));
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

GlooChannel::GlooChannel(const GlooOptions& opts, std::shared_ptr<gloo::transport::Device> dev,
                         std::shared_ptr<gloo::Context> ctx)
    : Channel(opts.rank, opts.size), opts_(opts), dev_(std::move(dev)), ctx_(std::move(ctx)) {
  set_timeout(opts.timeout);
}

GlooChannel::~GlooChannel() {
  ctx_.reset();
  dev_.reset();
}

uint64_t GlooChannel::latest_epoch(const std::string& rdzv, const std::string& job) {
  auto keys = open_key_store(rdzv);
  try {
    return uint64_t(std::max<int64_t>(0, latest_marker(*keys, job)));
  } catch (const std::exception& e) {
    throw RendezvousUnreachable("observer network: rendezvous " + rdzv + ": " + gloo_message_line(e.what()));
  }
}

std::unique_ptr<GlooChannel> GlooChannel::connect(const GlooOptions& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    throw ChannelError("observer network: node-rank " + std::to_string(o.rank) + " outside 0.." +
                       std::to_string(o.size - 1));
  }
  // Gloo writes to its sockets with writev(): a peer that died would kill this observer with
  // SIGPIPE. Ignore it (unless the program installed its own handler); the write then fails
  // with EPIPE and the channel reports the dead peer.
  struct sigaction old {};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);

  const std::string where = "rendezvous " + o.rdzv + " (job " + o.job + ", epoch " + std::to_string(o.epoch) + ")";
  auto keys = open_key_store(o.rdzv);
  const std::string present = "present_" + std::to_string(o.rank);
  const std::string complete = "complete";
  // Keys this observer writes in its epoch (Gloo's connectFullMesh writes the last two).
  const std::vector<std::string> own = {present, "rank_" + std::to_string(o.rank), std::to_string(o.rank)};
  auto erase_own = [&] {
    try {
      for (const auto& k : own) keys->erase(in_epoch(o.job, o.epoch, k));
      if (o.rank == 0) keys->erase(in_epoch(o.job, o.epoch, complete));
    } catch (const std::exception&) {
      // Best effort: the next formation attempt erases them again.
    }
  };
  auto missing = [&] {
    std::vector<int> m;
    for (int r = 0; r < o.size; ++r) {
      if (!keys->has(in_epoch(o.job, o.epoch, "present_" + std::to_string(r)))) m.push_back(r);
    }
    return m;
  };

  std::shared_ptr<gloo::transport::Device> dev;
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  bool meshing = false;
  try {
    // Keys of an earlier incarnation of this node-rank are stale: remove them first.
    erase_own();
    mark_epochs_up_to(*keys, o.job, o.epoch);
    keys->store().set(in_epoch(o.job, o.epoch, present), std::vector<char>{'1'});

    // Presence: the leader waits for every present_<r> and then writes "complete"; the others
    // wait for "complete" (one key each, so a shared directory sees O(N) polls, not O(N^2)).
    const auto deadline = std::chrono::steady_clock::now() + o.join_timeout;
    for (;;) {
      bool done;
      if (o.rank == 0) {
        done = true;
        for (int r = 0; r < o.size && done; ++r) {
          done = keys->has(in_epoch(o.job, o.epoch, "present_" + std::to_string(r)));
        }
        if (done) keys->set_once(in_epoch(o.job, o.epoch, complete));
      } else {
        done = keys->has(in_epoch(o.job, o.epoch, complete));
      }
      if (done) break;
      if (o.cancel && o.cancel->load()) throw RendezvousTimeout("observer network: " + where + ": cancelled");
      // Someone started a later epoch (survivors of a failure this observer did not see, or
      // observers that met a store which had lost its keys): this one will not complete.
      if (keys->has(epoch_marker(o.job, o.epoch + 1))) {
        throw RendezvousTimeout("observer network: " + where + ": epoch " + std::to_string(o.epoch + 1) +
                                " has started: joining the latest epoch");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        const auto m = missing();
        std::string why = m.empty() ? "the leader (node-rank 0) did not confirm that all " + std::to_string(o.size) +
                                          " observers are present"
                                    : "node-rank" + std::string(m.size() > 1 ? "s " : " ") + rank_list(m) + " (of " +
                                          std::to_string(o.size) + ") did not join";
        // The presence key stays: observers still waiting must not count this one as missing.
        // A retry erases it first (stale keys of this node-rank are always removed on entry).
        throw RendezvousTimeout("observer network: " + where + ": " + why + " within " +
                                std::to_string(o.join_timeout.count()) + " ms");
      }
      std::this_thread::sleep_for(kPollInterval);
    }

    gloo::transport::tcp::attr attr;
    if (!o.iface.empty()) {
      attr.iface = o.iface;
    } else if (!o.hostname.empty()) {
      attr.hostname = o.hostname;
    } else {
      char host[256] = {0};
      ::gethostname(host, sizeof(host) - 1);
      attr.hostname = host;
    }
    dev = gloo::transport::tcp::CreateDevice(attr);
    ctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    ctx->setTimeout(o.join_timeout);
    gloo::rendezvous::PrefixStore prefixed(epoch_prefix(o.job, o.epoch), keys->store());
    meshing = true;
    ctx->connectFullMesh(prefixed, dev);
    ctx->setTimeout(o.timeout);
  } catch (const ChannelError&) { throw; } catch (const std::exception& e) {
    erase_own();
    throw ChannelError("observer network: " + where + ": " + (meshing ? "connecting the TCP mesh failed: " : "") +
                       gloo_message_line(e.what()));
  }
  std::unique_ptr<GlooChannel> ch(new GlooChannel(o, std::move(dev), std::move(ctx)));
  // Every observer has read every address once all have passed this barrier.
  ch->barrier();
  erase_own();
  return ch;
}

void GlooChannel::close_after_failure() {
  try {
    ctx_->closeConnections();
  } catch (const std::exception&) {
    // Already broken: nothing more to close.
  }
}

void GlooChannel::abort() {
  std::lock_guard<std::mutex> lock(abort_mu_);
  aborted_ = true;
  if (pending_recv_) pending_recv_->abortWaitRecv();
  if (pending_send_) pending_send_->abortWaitSend();
}

void GlooChannel::transfer(uint64_t tag, const SendSpec* send, const RecvSpec* recv) {
  std::unique_ptr<gloo::transport::UnboundBuffer> rb, sb;
  // Who the failing step was waiting on, for the message.
  std::string who;
  auto recv_who = [recv] {
    return recv->peer >= 0 ? "node-rank " + std::to_string(recv->peer)
                           : "any of " + std::to_string(recv->from_any.size()) + " node-ranks";
  };
  struct Unregister {
    GlooChannel* ch;
    ~Unregister() {
      std::lock_guard<std::mutex> lock(ch->abort_mu_);
      ch->pending_recv_ = ch->pending_send_ = nullptr;
    }
  } unregister{this};
  try {
    if (recv) {
      who = recv_who();
      rb = ctx_->createUnboundBuffer(recv->data, recv->len);
    }
    if (send) sb = ctx_->createUnboundBuffer(const_cast<void*>(send->data), send->len);
    {
      std::lock_guard<std::mutex> lock(abort_mu_);
      if (aborted_) throw ChannelError("aborted");
      pending_recv_ = rb.get();
      pending_send_ = sb.get();
    }
    if (recv) {
      if (recv->peer >= 0) {
        rb->recv(recv->peer, tag, 0, recv->len);
      } else {
        rb->recv(std::vector<int>(recv->from_any.begin(), recv->from_any.end()), tag, 0, recv->len);
      }
    }
    if (send) {
      who = "node-rank " + std::to_string(send->peer);
      sb->send(send->peer, tag, 0, send->len);
    }
    if (recv) {
      who = recv_who();
      int src = -1;
      if (!rb->waitRecv(&src, timeout())) throw ChannelError("receive from " + who + " aborted");
      if (recv->source) *recv->source = src;
    }
    if (send) {
      who = "node-rank " + std::to_string(send->peer);
      if (!sb->waitSend(timeout())) throw ChannelError("send to " + who + " aborted");
    }
  } catch (const ChannelError&) { throw; } catch (const std::exception& e) {
    throw ChannelError("waiting for " + who + ": " + e.what());
  }
}

}  // namespace scout::net
