#include "observer/detect/wait_graph.h"

#include <algorithm>
#include <deque>
#include <functional>

namespace scout::obs {

void WaitGraph::add(int from, int to, int tag) {
  int i = int(edges_.size());
  edges_.push_back(Edge{from, to, tag});
  out_[from].push_back(i);
  in_[to].push_back(i);
  nodes_.insert(from);
  nodes_.insert(to);
}

std::vector<std::vector<int>> WaitGraph::cycles() const {
  // Tarjan's algorithm, iterative over an explicit stack to bound recursion on large jobs.
  std::map<int, int> index, low;
  std::set<int> on_stack;
  std::vector<int> stack;
  std::vector<std::vector<int>> out;
  int counter = 0;
  for (int start : nodes_) {
    if (index.count(start)) continue;
    std::vector<std::pair<int, size_t>> work{{start, 0}};
    index[start] = low[start] = counter++;
    stack.push_back(start);
    on_stack.insert(start);
    while (!work.empty()) {
      auto& [v, pos] = work.back();
      auto it = out_.find(v);
      const std::vector<int>* adj = it == out_.end() ? nullptr : &it->second;
      if (adj && pos < adj->size()) {
        int w = edges_[(*adj)[pos++]].to;
        if (!index.count(w)) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack.insert(w);
          work.emplace_back(w, 0);
        } else if (on_stack.count(w)) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::vector<int> comp;
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack.erase(w);
          comp.push_back(w);
        } while (w != v);
        if (comp.size() > 1) {
          std::sort(comp.begin(), comp.end());
          out.push_back(comp);
        }
      }
      int done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> WaitGraph::sinks() const {
  std::vector<int> out;
  for (int v : nodes_) {
    if (!out_.count(v) && in_.count(v)) out.push_back(v);
  }
  return out;
}

std::set<int> WaitGraph::walk(int node, bool upstream, std::vector<int>* tags) const {
  const auto& adj = upstream ? in_ : out_;
  std::set<int> seen{node};
  std::deque<int> q{node};
  while (!q.empty()) {
    int v = q.front();
    q.pop_front();
    auto it = adj.find(v);
    if (it == adj.end()) continue;
    for (int e : it->second) {
      if (tags) tags->push_back(edges_[e].tag);
      const int next = upstream ? edges_[e].from : edges_[e].to;
      if (seen.insert(next).second) q.push_back(next);
    }
  }
  return seen;
}

std::vector<int> WaitGraph::upstream_edges(int node) const {
  std::vector<int> tags;
  walk(node, true, &tags);
  return tags;
}

std::vector<int> WaitGraph::upstream_nodes(int node) const {
  std::set<int> seen = walk(node, true, nullptr);
  seen.erase(node);
  return std::vector<int>(seen.begin(), seen.end());
}

std::vector<int> WaitGraph::downstream_nodes(int node) const {
  std::set<int> seen = walk(node, false, nullptr);
  return std::vector<int>(seen.begin(), seen.end());
}

std::vector<int> WaitGraph::edges_within(const std::vector<int>& component) const {
  std::set<int> in(component.begin(), component.end());
  std::vector<int> tags;
  for (const Edge& e : edges_) {
    if (in.count(e.from) && in.count(e.to)) tags.push_back(e.tag);
  }
  return tags;
}

}  // namespace scout::obs
