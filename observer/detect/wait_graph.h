// The wait-for graph across communicators (docs/observer.md#hangs): nodes are processes, an edge
// a -> b says "a waits (in some communicator) for b". Roots of a hang are sinks (they wait for
// nobody); cycles are deadlocks. Generic over node ids; each edge carries a caller tag.
#pragma once

#include <map>
#include <set>
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
  bool waits(int node) const { return out_.count(node) > 0; }
  // Nodes `node` waits for, directly or transitively, and `node` itself; ascending.
  std::vector<int> downstream_nodes(int node) const;

 private:
  struct Edge {
    int from, to, tag;
  };
  // Breadth-first walk from `node` along `in_` (upstream) or `out_` (downstream): the nodes
  // reached, `node` included, and the tags of the edges followed, closest first.
  std::set<int> walk(int node, bool upstream, std::vector<int>* tags) const;
  std::vector<Edge> edges_;
  std::map<int, std::vector<int>> out_, in_;  // node -> edge indexes
  std::set<int> nodes_;
};

}  // namespace scout::obs
