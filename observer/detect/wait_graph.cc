#include "observer/detect/wait_graph.h"

#include <algorithm>

namespace scout::obs {

int WaitGraph::index_of(int node) const {
  auto it = index_.find(node);
  return it == index_.end() ? -1 : it->second;
}

int WaitGraph::intern(int node) {
  auto [it, added] = index_.try_emplace(node, int(ids_.size()));
  if (added) {
    ids_.push_back(node);
    out_.emplace_back();
    in_.emplace_back();
    seen_.push_back(0);
  }
  return it->second;
}

void WaitGraph::add(int from, int to, int tag) {
  const int a = intern(from), b = intern(to);
  const int i = int(edges_.size());
  edges_.push_back(Edge{a, b, tag});
  out_[size_t(a)].push_back(i);
  in_[size_t(b)].push_back(i);
}

bool WaitGraph::waits(int node) const {
  const int i = index_of(node);
  return i >= 0 && !out_[size_t(i)].empty();
}

std::vector<std::vector<int>> WaitGraph::cycles() const {
  // Tarjan's algorithm, iterative over an explicit stack to bound recursion on large jobs; nodes in
  // ascending id order as roots of the search (the order of the components found does not matter:
  // they are sorted below).
  const int n = int(ids_.size());
  std::vector<int> order(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) order[size_t(i)] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return ids_[size_t(a)] < ids_[size_t(b)]; });
  std::vector<int> index(size_t(n), -1), low(size_t(n), 0);
  std::vector<char> on_stack(size_t(n), 0);
  std::vector<int> stack;
  std::vector<std::vector<int>> out;
  int counter = 0;
  for (int start : order) {
    if (index[size_t(start)] >= 0) continue;
    std::vector<std::pair<int, size_t>> work{{start, 0}};
    index[size_t(start)] = low[size_t(start)] = counter++;
    stack.push_back(start);
    on_stack[size_t(start)] = 1;
    while (!work.empty()) {
      auto& [v, pos] = work.back();
      const std::vector<int>& adj = out_[size_t(v)];
      if (pos < adj.size()) {
        const int w = edges_[size_t(adj[pos++])].to;
        if (index[size_t(w)] < 0) {
          index[size_t(w)] = low[size_t(w)] = counter++;
          stack.push_back(w);
          on_stack[size_t(w)] = 1;
          work.emplace_back(w, 0);
        } else if (on_stack[size_t(w)]) {
          low[size_t(v)] = std::min(low[size_t(v)], index[size_t(w)]);
        }
        continue;
      }
      if (low[size_t(v)] == index[size_t(v)]) {
        std::vector<int> comp;
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[size_t(w)] = 0;
          comp.push_back(ids_[size_t(w)]);
        } while (w != v);
        if (comp.size() > 1) {
          std::sort(comp.begin(), comp.end());
          out.push_back(comp);
        }
      }
      const int done = v;
      work.pop_back();
      if (!work.empty()) low[size_t(work.back().first)] = std::min(low[size_t(work.back().first)], low[size_t(done)]);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> WaitGraph::sinks() const {
  std::vector<int> out;
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (out_[i].empty() && !in_[i].empty()) out.push_back(ids_[i]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> WaitGraph::walk(int start, bool upstream, std::vector<int>* tags) const {
  return walk_from({start}, upstream, tags);
}

std::vector<int> WaitGraph::walk_from(const std::vector<int>& starts, bool upstream, std::vector<int>* tags) const {
  const auto& adj = upstream ? in_ : out_;
  if (++pass_ == 0) {  // wrapped: clear the marks once every 4 billion walks
    std::fill(seen_.begin(), seen_.end(), 0);
    pass_ = 1;
  }
  std::vector<int> reached;
  for (int s : starts) {
    if (seen_[size_t(s)] == pass_) continue;
    seen_[size_t(s)] = pass_;
    reached.push_back(s);
  }
  for (size_t head = 0; head < reached.size(); ++head) {
    const int v = reached[head];
    for (int e : adj[size_t(v)]) {
      if (tags) tags->push_back(edges_[size_t(e)].tag);
      const int next = upstream ? edges_[size_t(e)].from : edges_[size_t(e)].to;
      if (seen_[size_t(next)] == pass_) continue;
      seen_[size_t(next)] = pass_;
      reached.push_back(next);
    }
  }
  return reached;
}

std::vector<int> WaitGraph::ids_of(std::vector<int> idx, bool drop_first) const {
  std::vector<int> out;
  out.reserve(idx.size());
  for (size_t i = drop_first ? 1 : 0; i < idx.size(); ++i) out.push_back(ids_[size_t(idx[i])]);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> WaitGraph::upstream_edges(int node) const {
  std::vector<int> tags;
  const int i = index_of(node);
  if (i >= 0) walk(i, true, &tags);
  return tags;
}

std::vector<int> WaitGraph::upstream_nodes(int node) const {
  const int i = index_of(node);
  if (i < 0) return {};
  return ids_of(walk(i, true, nullptr), true);
}

std::vector<int> WaitGraph::downstream_nodes(int node) const {
  const int i = index_of(node);
  if (i < 0) return {node};
  return ids_of(walk(i, false, nullptr), false);
}

std::vector<int> WaitGraph::downstream_nodes(const std::vector<int>& from) const {
  std::vector<int> starts;
  std::vector<int> absent;  // nodes not in the graph reach only themselves
  for (int node : from) {
    if (int i = index_of(node); i >= 0) {
      starts.push_back(i);
    } else {
      absent.push_back(node);
    }
  }
  std::vector<int> out = ids_of(walk_from(starts, false, nullptr), false);
  out.insert(out.end(), absent.begin(), absent.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> WaitGraph::edges_within(const std::vector<int>& component) const {
  std::vector<char> in(ids_.size(), 0);
  for (int node : component) {
    if (int i = index_of(node); i >= 0) in[size_t(i)] = 1;
  }
  std::vector<int> tags;
  for (const Edge& e : edges_) {
    if (in[size_t(e.from)] && in[size_t(e.to)]) tags.push_back(e.tag);
  }
  return tags;
}

}  // namespace scout::obs
