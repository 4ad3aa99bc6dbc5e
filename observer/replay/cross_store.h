// Replay across nodes (docs/replay.md, "Across nodes"): link recipes whose two ends run on
// different nodes. The observers meet in their rendezvous store (observer/net/key_store.h), under
// "scout/<job>/replay/":
//   members/<node>          that node's running ranks (CrossMember) and, per communicator that
//                           spans nodes ("<hash>:<nranks>"), the global ranks it holds
//   plan/latest, plan/<k>   the newest plan id; plan k (CrossPlan), written by the leader: its
//                           pairs, collective classes, GEMM shapes and every member (link
//                           ends, collective members, GEMM voters)
//   x/<k>/ready/<node>      that node's readiness answers for plan k's contract
//   x/<k>/uid/<src>-<dst>   the sender's bootstrap id (NCCL unique id) for one directed pair
//   x/<k>/uid/coll-<i>      the bootstrap id of plan k's collective class i (0-based, the plan's
//                           order), made by the node of its lowest member
//   x/<k>/samples/<node>    that node's samples of plan k (receivers' times and fingerprints,
//                           senders' failures, its voters' GEMM fingerprints and times)
// The leader (node-rank 0) merges every node's members, makes plan k (the directed pairs across
// nodes of every spanning communicator, round-robin, at most max_pairs per plan; the collective
// classes of those communicators, round-robin, at most max_colls per plan; a GEMM recipe voted
// across nodes, cross_gemm.h) and judges it from every node's samples; every node runs its own
// ends and voters, and judges the GEMM votes from every node's samples too. The leader removes plan k-2's keys
// when it writes plan k.
//
// Errors: store calls throw what the store throws (std::exception); callers log and skip the plan.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "observer/net/key_store.h"
#include "replay/recipe.h"

namespace scout::obs {

// A rank of the job as the observer of its node knows it.
struct CrossMember {
  int global_rank = -1;
  std::string gpu;
  int cuda_dev = -1;
  std::string host;
  int pid = 0;
  int node = 0;  // observer node-rank
};

// What one node publishes about itself.
struct NodeMembers {
  int node = 0;
  std::vector<CrossMember> ranks;
  std::map<std::string, std::vector<int>> comms;         // "<hash>:<nranks>" -> its global ranks there
  std::map<std::string, std::map<int, int>> comm_ranks;  // the same communicators: comm rank -> global rank
  // The same communicators: the collective classes this node's ranks issued there (ranks empty:
  // the leader fills in the membership from every node's comm_ranks), first seen first.
  std::map<std::string, std::vector<replay::CollClass>> colls;
  bool operator==(const NodeMembers&) const;
};

// One cross-node sweep: directed pairs (sender, receiver), global ranks, and collective classes
// of communicators spanning nodes (membership in global ranks, ascending).
struct CrossPlan {
  uint64_t id = 0;
  uint64_t seed = 1;
  std::vector<std::pair<int, int>> pairs;
  std::vector<replay::CollClass> colls;
  std::vector<replay::GemmShape> gemms;  // voted across nodes (cross_gemm.h); absent in older plans
  std::vector<CrossMember> members;      // every rank of `pairs` and of `colls`, and the GEMM voters
  // The nodes with an end in the plan, ascending.
  std::vector<int> nodes() const;
  const CrossMember* member(int global_rank) const;
};

nlohmann::json to_json(const NodeMembers& n);
bool from_json(const nlohmann::json& j, NodeMembers* out, std::string* error);
nlohmann::json to_json(const CrossPlan& p);
bool from_json(const nlohmann::json& j, CrossPlan* out, std::string* error);

// Communicator key "<hash as 0x...>:<nranks>" of NodeMembers (hex64 of the commHash).
std::string cross_comm_key(uint64_t comm_hash, int nranks);
// Every node's comm rank -> global rank maps merged, per communicator key.
std::map<std::string, std::map<int, int>> merged_comm_ranks(const std::vector<NodeMembers>& nodes);

// Every directed pair (a, b) of two ranks of one communicator on different nodes, each once,
// ascending; a rank is on the node that published it.
std::vector<std::pair<int, int>> cross_pairs(const std::vector<NodeMembers>& nodes);

// Whether the observers have met: `all` (CrossStore::members) holds the members of each of
// node-ranks 0 .. nodes-1, each with at least one running rank.
bool observers_met(const std::vector<NodeMembers>& all, int nodes);

// The most members of a communicator whose classes are replayed across nodes: every node holding
// a member takes part in the plan (readiness, bootstrap, its members' run), so a world-sized
// class would hold every node in every plan; such communicators' links are still swept.
constexpr int kMaxCrossCollMembers = 256;

// The collective classes of every communicator spanning nodes whose whole membership the nodes
// published (comm_ranks of all its nranks ranks, on at least two nodes, at most
// kMaxCrossCollMembers), each class once with its members' global ranks (ascending) filled in;
// ordered by communicator key, then as first seen. A communicator with a member no node
// published is left out (its replay could not bootstrap).
std::vector<replay::CollClass> cross_colls(const std::vector<NodeMembers>& nodes);

// The next at most `max` classes of cross_colls(nodes), round-robin from *cursor (advanced past
// them), as the local periodic cycles take theirs: every class of a large job comes in turn.
std::vector<replay::CollClass> next_cross_colls(const std::vector<NodeMembers>& nodes, int max, size_t* cursor);

class CrossStore {
 public:
  CrossStore(std::unique_ptr<net::KeyStore> keys, const std::string& job);

  void put_members(const NodeMembers& mine);
  // Every node's members that are present (node-ranks 0 .. nodes-1).
  std::vector<NodeMembers> members(int nodes);
  // Writes plan k, then plan/latest = k; removes the keys of plan k-2 (`nodes` observers).
  void put_plan(const CrossPlan& plan, int nodes);
  // The newest plan when its id is above `after`.
  std::optional<CrossPlan> newer_plan(uint64_t after);

  // Plan-scoped values: "ready/<node>", "uid/<src>-<dst>", "uid/coll-<i>", "samples/<node>".
  void put(uint64_t plan, const std::string& name, const std::string& value);
  // Polls for a plan-scoped value every 10 ms until `deadline_ns` (CLOCK_MONOTONIC); nullopt then.
  std::optional<std::string> wait(uint64_t plan, const std::string& name, int64_t deadline_ns);

  // Replaces the connection with a new one to `spec` (net::open_key_store): after the store went
  // away (a Redis server restarted), calls on the old connection fail for good. Throws as
  // open_key_store when the store does not answer yet.
  void reconnect(const std::string& spec);

 private:
  std::string key(uint64_t plan, const std::string& name) const;
  std::unique_ptr<net::KeyStore> keys_;
  std::string base_;
};

}  // namespace scout::obs
