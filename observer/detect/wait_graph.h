// The wait-for graph across communicators (docs/observer.md#hangs): nodes are processes, an edge
// a -> b says "a waits (in some communicator) for b". Roots of a hang are sinks (they wait for
// nobody); cycles are deadlocks. Generic over node ids; each edge carries a caller tag.
// Adjacency is kept in arrays indexed by a dense node index, and walks mark visited nodes with a
// pass number instead of allocating a set, so a graph of 131,072 ranks' waits is built and walked
// in milliseconds (docs/observer-network.md, "The leader's work as the job grows").
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace scout::obs {

class WaitGraph {
 public:
  void add(int from, int to, int tag);
  bool empty() const { return edges_.empty(); }
  // Strongly connected components with more than one node (each holds a cycle); nodes ascending,
  // components ordered by their smallest node.
  std::vector<std::vector<int>> cycles() const;
  // Nodes that are waited for and wait for nobody, ascending.
  std::vector<int> sinks() const;
  // Tags of the edges on paths that end at `node`, breadth-first from `node` (closest first).
  std::vector<int> upstream_edges(int node) const;
  // Nodes that wait for `node`, directly or transitively, ascending.
  std::vector<int> upstream_nodes(int node) const;
  // Tags of the edges between nodes of `component`.
  std::vector<int> edges_within(const std::vector<int>& component) const;
  // True when `node` waits for someone (has an outgoing edge).
  bool waits(int node) const;
  // Nodes `node` waits for, directly or transitively, and `node` itself; ascending.
  std::vector<int> downstream_nodes(int node) const;
  // The union of downstream_nodes() of every node of `from`, ascending (one walk for all).
  std::vector<int> downstream_nodes(const std::vector<int>& from) const;

 private:
  struct Edge {
    int from, to, tag;  // node indexes (not ids) and the caller's tag
  };
  int index_of(int node) const;  // -1 if not in the graph
  int intern(int node);
  // Breadth-first walk from node index `start` along in_ (upstream) or out_ (downstream): the node
  // indexes reached, `start` included, and the tags of the edges followed, closest first.
  std::vector<int> walk(int start, bool upstream, std::vector<int>* tags) const;
  std::vector<int> walk_from(const std::vector<int>& starts, bool upstream, std::vector<int>* tags) const;
  std::vector<int> ids_of(std::vector<int> idx, bool drop_first) const;  // ids, ascending

  std::vector<Edge> edges_;
  std::unordered_map<int, int> index_;      // node id -> index
  std::vector<int> ids_;                    // index -> node id
  std::vector<std::vector<int>> out_, in_;  // index -> edge numbers
  mutable std::vector<uint32_t> seen_;      // walk(): pass number that reached the index
  mutable uint32_t pass_ = 0;
};

}  // namespace scout::obs
