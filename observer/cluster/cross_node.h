// The observer network inside scout-observer (docs/observer-network.md, "In the observer"):
// one CrossNode per observer of a multi-node job ties the node-local core (Observer) to the
// network agent (observer/net/agent.h), which runs on its own thread.
//
// Installed as the Observer's cross-node step, each pass (under the pass mutex, never waiting on
// the network) it:
//   1. captures what the network compares into the NodeView (streams, records of cross-node
//      operations, identities, "a communicator here is hung");
//   2. takes what the agent's rounds produced since the last pass:
//      - cross-node timings -> the straggler windows (lateness against the job-wide earliest
//        arrival, on the leader's clock, so clock offsets between nodes are applied);
//      - on the leader: other nodes' findings and the Judge's drill-down decisions -> the finding
//        board through LeaderMerge (one finding per failure), hence the leader's store;
//   3. on other nodes: hands the board's new and changed findings to the agent (sent to the
//      leader at the next round; an unchanged open finding is sent again every
//      `forward_refresh_ns` so the leader's last_seen stays current).
// The leader's Judge is CoreJudge: the core's own consensus and hang detectors.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "observer/cluster/core_judge.h"
#include "observer/cluster/leader_merge.h"
#include "observer/cluster/node_view.h"
#include "observer/net/agent.h"
#include "observer/net/gloo_channel.h"
#include "observer/pipeline/observer.h"
#include "scout/config.h"

namespace scout::obs {

struct CrossNodeOptions {
  net::AgentOptions agent;
  net::GlooOptions gloo;  // rendezvous, job, node-rank, size, address, timeouts
  NodeViewOptions view;
  HangConfig hang;  // the leader's job-wide hang analysis
  int64_t forward_refresh_ns = 10'000'000'000;
};

// Options from the SCOUT_NET_* settings and the observer's own: `rdzv` as given to --rdzv.
CrossNodeOptions cross_node_options(const config::Config& cfg, const ObserverOptions& obs, const std::string& rdzv);

// The per-pass part of CrossNode, without the agent's thread: what one pass does with what the
// rounds produced (steps 1-3 above). CrossNode feeds it from its NetAgent; the scaling benchmark
// (test/bench/scale_bench.cc) drives digest rounds itself and feeds it the same way.
class CrossNodeStep {
 public:
  // `model` and `pass_mu` are the Observer's (Observer::model(), Observer::mutex()).
  CrossNodeStep(const Model& model, std::mutex& pass_mu, const CrossNodeOptions& opt);

  // One pass (under the pass mutex): captures the NodeView, applies `harvest` (cross-node timings
  // converted with `clock_offset_ns` = this node's clock - the leader's; on the leader, findings
  // and decisions merged into io.board). Returns, on other nodes, the findings to send to the
  // leader (new, changed, or due for a refresh); on the leader, nothing.
  std::vector<Finding> step(Observer::CrossNodeIo& io, net::NetAgent::Harvest harvest, int64_t clock_offset_ns);

  bool leader() const { return opt_.gloo.rank == 0; }
  NodeView& view() { return view_; }
  const NodeView& view() const { return view_; }
  CoreJudge& judge() { return judge_; }

 private:
  std::vector<Finding> forward(const FindingBoard& board, int64_t now_ns);

  struct Sent {
    std::string what;  // open, verdict, suspects, peer, comm, key
    int64_t at_ns = 0;
  };

  CrossNodeOptions opt_;
  NodeView view_;
  CoreJudge judge_;
  LeaderMerge merge_;
  std::map<std::string, Sent> sent_;                     // by dedup key
  uint64_t forwarded_ = 0;                               // board stamp forward() last read up to
  std::deque<std::pair<int64_t, std::string>> refresh_;  // (sent at, key) of open findings, oldest first
};

class CrossNode {
 public:
  // Installs the step on `observer` (which must outlive this object). `connect` and `latest`
  // form the channel of an epoch; empty: Gloo with `opt.gloo` (GlooChannel::connect,
  // GlooChannel::latest_epoch). `clock`: this node's clock (CLOCK_REALTIME in production).
  CrossNode(Observer& observer, CrossNodeOptions opt, const net::Clock& clock, net::NetAgent::Connect connect = {},
            net::NetAgent::LatestEpoch latest = {});
  ~CrossNode();
  CrossNode(const CrossNode&) = delete;
  CrossNode& operator=(const CrossNode&) = delete;

  void start();  // starts the agent's thread
  void stop();   // stops it (promptly, even while it waits on a peer) and removes the step

  bool leader() const { return opt_.gloo.rank == 0; }
  net::NetAgent::Status status() const { return agent_->status(); }
  // One line: node-rank, epoch, rounds, failures and last error, clock offset and bound, traffic,
  // mean cost per round.
  std::string status_line() const;
  const NodeView& view() const { return core_.view(); }

 private:
  Observer& observer_;
  CrossNodeOptions opt_;
  CrossNodeStep core_;
  std::unique_ptr<net::NetAgent> agent_;
  bool installed_ = false;
};

}  // namespace scout::obs
