// The node-local core as the observer network sees it: net::LocalView (observer/net/
// local_view.h) over what this observer read from shared memory.
//
// The network agent runs on its own thread and must never wait for a pass, and the operations
// it compares must outlive the Model's (an operation of a communicator with ranks on other
// nodes leaves the Model after the settle timeout, unjudged, while the digest may need it a few
// intervals later). So each pass, under the pass mutex, capture() copies what the network
// compares into this object: the streams (collectives of one function on a communicator with
// ranks on other nodes) and, per stream, the local ranks' records of its recent operations,
// kept until they are older than `retain_ops` operations below the stream's watermark. The
// agent's calls read that copy under the view's own mutex.
//
// A stream's `completed` counts only operations whose local records are settled (complete with
// fingerprints written, or past the settle timeout), so a digest never covers a record the
// plugin is still updating. wait_snapshot() is the exception: a hang drill-down wants the waits
// as they are now, so it reads the Model under the pass mutex (Observer::mutex()), with each
// communicator's stall rule from the StallWatch (stall_watch.h) that capture() feeds.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "common/segment_reader.h"
#include "observer/cluster/stall_watch.h"
#include "observer/model/model.h"
#include "observer/net/local_view.h"

namespace scout::obs {

struct NodeViewOptions {
  int64_t settle_ns = 10'000'000'000;        // SCOUT_OBSERVER_FP_TIMEOUT_S: a record unchanged this long is final
  uint64_t retain_ops = 1024 + 256;          // operations kept per stream below its watermark
  int64_t p2p_pass_ns = 5'000'000;           // gaps pass sends/receives shorter than this (gap_before)
  int64_t hang_timeout_ns = 60'000'000'000;  // --hang-timeout: caps the stall thresholds (StallWatch)
  bool stall = true;  // HangConfig::stall: drill-downs at the stall threshold of communicators spanning nodes
};

class NodeView : public net::LocalView {
 public:
  // `model` and `pass_mu` (the Observer's) must outlive the view.
  NodeView(const Model& model, std::mutex& pass_mu, NodeViewOptions opt = {});

  // Copies streams, operation records and identities from the Model. Called with the pass
  // mutex held (the observer's cross-node step), at observer time `now_ns`; `hung`: a
  // communicator of this node is hung (Observer::CrossNodeIo::hung).
  void capture(int64_t now_ns, bool hung);

  std::vector<net::StreamView> streams() override;
  bool op(uint64_t comm_hash, uint8_t func, uint64_t seq, std::vector<net::RankOpView>* out) override;
  net::RankIdentity identity(int global_rank) override;
  net::WaitSnapshot wait_snapshot() override;
  bool locally_stalled() override { return hung_.load(); }
  // The StallWatch's episodes and state at the last capture (nothing with opt.stall off).
  Stalls stalls() override { return Stalls{stall_episodes_.load(), stalled_.load()}; }

  // The metadata hash of one rank's record (net::RankOpView::meta): XXH64 of func, datatype,
  // count and root as metadata_check compares them (the API's values when the record has them).
  // Equal on every node for equal calls.
  static uint64_t meta_hash(const shm::RecordSnapshot& r);
  // True when `c` has ranks on other nodes (NCCL's nNodes > 1, or comm ranks no local segment names).
  static bool spans_nodes(const Comm& c);
  // Operations retained, over all streams (for tests and the status line).
  size_t retained() const;

 private:
  struct Captured {
    bool settled = false;
    std::vector<net::RankOpView> ranks;
  };
  struct Stream {
    net::StreamView view;
    std::map<uint64_t, Captured> ops;  // by seqNumber
    std::set<uint64_t> unsettled;      // seqNumbers of ops not yet settled (a subset of ops)
    bool seen = false;                 // present at the last capture
  };
  net::RankOpView rank_view(const Model& m, const Comm& c, const OpSlot& s) const;

  const Model& model_;
  std::mutex& pass_mu_;
  NodeViewOptions opt_;
  mutable std::mutex mu_;  // guards streams_ and ids_
  std::map<std::pair<uint64_t, uint8_t>, Stream> streams_;
  std::map<int, net::RankIdentity> ids_;
  std::atomic<bool> hung_{false};
  StallWatch watch_;  // under the pass mutex (capture, wait_snapshot)
  std::atomic<uint64_t> stall_episodes_{0};
  std::atomic<bool> stalled_{false};
};

}  // namespace scout::obs
