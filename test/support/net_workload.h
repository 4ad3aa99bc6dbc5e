// A synthetic multi-node job for the observer-network tests and benchmark: what each node's
// observer would read from shared memory, generated on demand (no storage per operation).
//
// `nodes` nodes with `ranks_per_node` ranks; global rank = node * ranks_per_node + local index.
// Tensor parallelism inside the node (node-local communicators: never on the network), data
// parallelism across nodes: DP communicator l holds local index l of every node (comm rank =
// node), so each node has `ranks_per_node` cross-node communicators with one local rank each.
// Each DP communicator runs `funcs` streams (AllReduce, then AllGather, ReduceScatter ...).
// Operation seq of every stream completes at time seq * period_ns (true time); a rank arrives
// `extra_lateness(rank)` late. Faults are injected with the setters. Records: float32 of
// 1024 + 256 (seq % 7) elements (a desynchronized rank passes half), receive fingerprints done
// for AllReduce, AllGather and Broadcast (0 for the others, as the observer reports them).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "observer/net/local_view.h"

namespace scout::testing {

class NetWorkload {
 public:
  NetWorkload(int nodes, int ranks_per_node, int funcs = 2, int64_t period_ns = 20000000);

  int nodes() const { return nodes_; }
  int ranks_per_node() const { return ranks_per_node_; }
  uint64_t comm_hash(int local_index) const;
  int64_t period_ns() const { return period_; }

  // Faults (call before or between rounds, never during one).
  // Receive fingerprint of `global_rank` differs from the others from operation `from_seq` on.
  void corrupt_fp(int global_rank, uint64_t from_seq) { fp_fault_[global_rank] = from_seq; }
  // ... of operation `seq` only (a one-shot corruption; several per rank may be set).
  void corrupt_fp_once(int global_rank, uint64_t seq) { fp_once_.insert({global_rank, seq}); }
  // Metadata (e.g. count) of `global_rank` differs from operation `from_seq` on (desync).
  void desync(int global_rank, uint64_t from_seq) { meta_fault_[global_rank] = from_seq; }
  // `global_rank` never enqueues operation `seq` of any stream: its communicators stop there.
  void stop(int global_rank, uint64_t seq) { stop_[global_rank] = seq; }
  // `global_rank` starts every operation `ns` late.
  void delay(int global_rank, int64_t ns) { delay_[global_rank] = ns; }
  // Operations older than `n` below the completed watermark are no longer retained.
  void retain(uint64_t n) { retain_ = n; }

  // Operations of every stream that exist at true time t (healthy progress).
  uint64_t progress_at(int64_t t_ns) const { return t_ns <= 0 ? 0 : uint64_t(t_ns / period_); }

  // The observer of one node. `clock_offset_ns` is added to every time it reports (its clock).
  class Node : public net::LocalView {
   public:
    Node(const NetWorkload* job, int node, int64_t clock_offset_ns);
    // The job has progressed to true time t (any thread).
    void set_time(int64_t t_ns) { t_.store(t_ns); }
    // This observer lists no stream before true time t (its ranks created their communicators
    // late, or it attached their segments late); op() still answers (set before the rounds).
    void hide_streams_until(int64_t t_ns) { hidden_until_ = t_ns; }
    std::vector<net::StreamView> streams() override;
    bool op(uint64_t comm_hash, uint8_t func, uint64_t seq, std::vector<net::RankOpView>* out) override;
    net::RankIdentity identity(int global_rank) override;
    // Every DP communicator of the node: each local rank's counters, and the operation it waits
    // in (Running) while its communicator is held by a stopped rank.
    net::WaitSnapshot wait_snapshot() override;

   private:
    const NetWorkload* job_;
    int node_;
    int64_t offset_;
    std::atomic<int64_t> t_{0};
    int64_t hidden_until_ = 0;
  };

  // Expected values (shared by all healthy ranks) for tests.
  uint64_t count_of(uint64_t seq) const { return 1024 + 256 * (seq % 7); }  // a few op shapes repeat
  uint64_t meta_of(uint64_t comm_hash, uint8_t func, uint64_t seq) const;
  uint64_t fp_of(uint64_t comm_hash, uint8_t func, uint64_t seq) const;
  uint8_t func_at(int i) const;

 private:
  // Ops of DP communicator `l` complete job-wide at time t (a stopped rank holds it).
  uint64_t comm_completed(int l, int64_t t) const;
  uint64_t rank_enqueued(int global_rank, int64_t t) const;

  int nodes_, ranks_per_node_, funcs_;
  int64_t period_;
  uint64_t retain_ = 4096;
  std::map<int, uint64_t> fp_fault_, meta_fault_, stop_;
  std::set<std::pair<int, uint64_t>> fp_once_;  // (global rank, seq)
  std::map<int, int64_t> delay_;
};

}  // namespace scout::testing
