// The observer's network side, on its own thread (docs/observer-network.md, "Failure handling"):
// forms the channel (and re-forms it after a failure, epoch by epoch), estimates clock offsets
// every `clock_sync_rounds` rounds, runs one digest round per interval, and hands the results
// (the leader's findings, cross-node timings) to the observer's loop, which never waits
// on the network. The node-local core keeps running whatever happens here.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "observer/net/channel.h"
#include "observer/net/clock_sync.h"
#include "observer/net/digest.h"

namespace scout::net {

struct AgentOptions {
  std::chrono::milliseconds interval{1000};  // between digest rounds (SCOUT_NET_INTERVAL_MS)
  int clock_sync_rounds = 10;                // offsets re-estimated every this many rounds
  int clock_samples = 8;                     // ping-pongs per tree edge (SCOUT_NET_CLOCK_SAMPLES)
  std::chrono::milliseconds retry{1000};     // pause before forming again after a failure
  DigestConfig digest;
};

class NetAgent {
 public:
  // Forms the channel of an epoch (GlooChannel::connect in the observer); should give up soon
  // after `stopping` turns true. Throws ChannelError (the next epoch is tried);
  // RendezvousTimeout when observers are missing or a later epoch started, RendezvousUnreachable
  // when the rendezvous store does not answer (the same or the latest epoch is retried).
  using Connect = std::function<std::unique_ptr<Channel>(uint64_t epoch, const std::atomic<bool>& stopping)>;
  // The latest epoch any observer of the job started (GlooChannel::latest_epoch).
  using LatestEpoch = std::function<uint64_t()>;

  // `view` must be safe to call from the agent's thread while the observer updates it; `judge`
  // decides drill-downs on the leader; `clock` is this node's clock. All must outlive the agent.
  NetAgent(const AgentOptions& opts, Connect connect, LatestEpoch latest, LocalView& view, Judge& judge,
           const Clock& clock);
  ~NetAgent();
  NetAgent(const NetAgent&) = delete;
  NetAgent& operator=(const NetAgent&) = delete;

  void start();
  // Stops the thread; a wait on a peer in progress is aborted, so this returns promptly.
  void stop();

  // New or updated findings of this node since the last call: sent at the next round (to the
  // leader; on the leader they stay local and are not returned by take()).
  void submit(std::vector<obs::Finding> findings);

  struct Harvest {
    std::vector<obs::Finding> findings;    // leader: other nodes' findings (leader clock)
    std::vector<obs::Finding> decided;     // leader: the Judge's decisions from drill-downs
    std::vector<CrossNodeTiming> timings;  // this node's streams, job-wide arrival view
  };
  // What the rounds produced since the last call.
  Harvest take();

  struct Status {
    bool connected = false;
    int peers = 0;  // other observers on the current channel (0 while not connected)
    uint64_t epoch = 0;
    uint64_t rounds = 0;        // digest rounds completed, all epochs
    uint64_t formed = 0;        // channels formed, all epochs (re-forms: formed - 1)
    uint64_t failures = 0;      // channels lost or not formed
    int64_t since_ns = 0;       // Clock time `connected` last changed (0: never connected yet)
    int64_t last_round_ns = 0;  // Clock time the last round completed (0: none yet)
    std::string last_error;     // the most recent ChannelError, "" if none
    ClockEstimate clock;        // the latest offset estimate
    Traffic traffic;            // current channel
    uint64_t partitions = 1;
    // Cost of the rounds so far (all epochs): this thread's CPU time and the wall time inside
    // DigestExchange::round(), clock estimates excluded.
    uint64_t round_cpu_ns = 0;
    uint64_t round_wall_ns = 0;
    uint64_t gathers = 0;  // rounds that gathered to the leader (drill-down or findings)
    // Digest outcomes summed over rounds (RoundResult): streams compared, of which disagreeing;
    // not compared because of a slot collision, a range mismatch or operations no longer retained.
    uint64_t compared = 0, disagreeing = 0, collisions = 0, range_mismatches = 0, digest_gaps = 0;
    uint64_t bad_reports = 0;  // leader: node messages that did not decode
  };
  Status status() const;

 private:
  void run();
  bool sleep_for(std::chrono::milliseconds d);  // false when stopping

  AgentOptions opts_;
  Connect connect_;
  LatestEpoch latest_;
  LocalView& view_;
  Judge& judge_;
  const Clock& clock_;

  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Channel* current_ = nullptr;  // guarded by mu_: what stop() aborts
  std::vector<obs::Finding> outbox_;
  Harvest harvest_;
  Status status_;
};

}  // namespace scout::net
