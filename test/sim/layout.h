// Rank layout and communicators of the emulated 4-D (+EP) parallel job (docs/scout-sim.md,
// "Rank layout"). Megatron order: TP fastest, then CP, then DP, then PP:
//     global rank g = tp + T * (cp + C * (dp + DP * pp)),   DP = N / (T * C * P)
// CP groups share (tp, dp, pp); the DP group (gradients) spans DP and CP, as Megatron's
// data-parallel-with-context-parallel group does. EP groups are E consecutive DP ranks with the
// same (tp, cp, pp): ep group index (tp + T * (cp + C * pp)) * (DP / E) + dp / E. Hosts: N / M
// consecutive ranks per host, so whole TP groups stay inside a host. Pure functions of the
// options: the launcher and every worker compute the same layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "test/sim/options.h"

namespace scout::sim {

enum class CommKind : uint8_t { kWorld = 0, kTp = 1, kDp = 2, kPp = 3, kEp = 4, kCp = 5 };
constexpr int kNumCommKinds = 6;

// "world", "tp", "dp", "pp", "ep", "cp".
const char* comm_kind_name(CommKind k);

// One communicator of the job (the same on every member).
struct CommSpec {
  int id = 0;  // index in Layout::comms
  CommKind kind = CommKind::kWorld;
  int index = 0;             // group index within its kind (tp3 -> 3); also the split color
  std::string name;          // commName: "world", "tp3", "dp0", "pp1", "ep2"
  std::vector<int> members;  // global ranks, in comm-rank order (ascending global rank)
  int n_nodes = 1;           // distinct emulated hosts among the members (init's nNodes)
  int split_count = -1;      // parent's split counter used in the commHash (-1: root comm)

  int nranks() const { return static_cast<int>(members.size()); }
  // Comm rank of global rank g, or -1 if g is not a member.
  int rank_of(int g) const;
};

// Coordinates of one global rank.
struct RankCoord {
  int tp = 0, dp = 0, pp = 0, cp = 0;
  int node = 0;        // emulated host index
  int local_rank = 0;  // index within the host
};

class Layout {
 public:
  // Builds the layout; options must have passed parse_options' checks.
  explicit Layout(const SimOptions& o);

  int world_size() const { return n_; }
  int tp() const { return t_; }
  int pp() const { return p_; }
  int dp() const { return d_; }
  int ep() const { return e_; }
  int cp() const { return c_; }
  int nodes() const { return m_; }
  int ranks_per_node() const { return n_ / m_; }

  RankCoord coord(int g) const;
  // Host name of emulated node i: "node<i>".
  static std::string host_name(int node);

  // Every communicator with at least 2 ranks, in creation order: world first, then the TP, DP,
  // PP, EP and CP groups (each kind in index order; CP last, so the other kinds' split counters
  // and commHashes do not depend on --cp). Groups of size 1 are not created (NCCL
  // produces no events for nRanks == 1, docs/nccl-notes.md §3.9; frameworks skip them).
  const std::vector<CommSpec>& comms() const { return comms_; }
  // The communicator of `kind` that global rank g belongs to, or nullptr if that group has one
  // rank (not created).
  const CommSpec* comm_of(int g, CommKind kind) const;
  // True when global ranks a and b are both members of at least one communicator.
  bool share_comm(int a, int b) const;

 private:
  int n_, t_, p_, d_, e_, m_, c_;
  std::vector<CommSpec> comms_;
  std::vector<int> index_;  // [g * kNumCommKinds + kind] -> comms_ index or -1
};

}  // namespace scout::sim
